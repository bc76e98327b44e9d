#pragma once

#include <memory>

#include "attnscope/model.hpp"

namespace attnscope {
class Json;
std::unique_ptr<Model> make_use_lite(const Json& config, const ModelFiles& files, const LargeFiles& large);
}  // namespace attnscope
