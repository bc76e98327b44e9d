#pragma once

#include <memory>
#include <string>

#include "attnscope/model.hpp"

namespace attnscope {
class Json;
// BERT (BertModel, BertFor*), DistilBERT (DistilBertModel, DistilBertFor*), GPT-2 (GPT2Model, GPT2LMHeadModel).
bool is_transformer(const std::string& architecture);
std::unique_ptr<Model> make_transformer(const std::string& architecture, const Json& config, const ModelFiles& files,
                                        std::unique_ptr<Tokenizer> tokenizer);
}  // namespace attnscope
