// AttnScope's public C++ API. Free of Emscripten: it builds natively and for wasm.
#pragma once

#include "attnscope/attention.hpp"
#include "attnscope/error.hpp"
#include "attnscope/packing.hpp"
#include "attnscope/tensor.hpp"

namespace attnscope {
inline constexpr const char* kVersion = "0.1.0";
}
