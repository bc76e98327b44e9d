#pragma once

#include <memory>
#include <string>

#include "attnscope/model.hpp"

namespace attnscope {
class Json;
// BERT (BertModel, BertFor*) and DistilBERT (DistilBertModel, DistilBertFor*).
bool is_encoder(const std::string& architecture);
std::unique_ptr<Model> make_encoder(const std::string& architecture, const Json& config, const ModelFiles& files,
                                    const LargeFiles& large, std::unique_ptr<Tokenizer> tokenizer);
}  // namespace attnscope
