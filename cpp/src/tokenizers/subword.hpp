// What a tokenizer.json pipeline (pipeline.cpp) asks of its model, BPE or Unigram: the tokens of each pre-token, and
// the id of a token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::tokenizers {

class SubwordModel {
 public:
  virtual ~SubwordModel() = default;
  // Adds an added token's content to the vocabulary (as Hugging Face's JS tokenizers do).
  virtual void add(const std::string& token, std::int32_t id) = 0;
  // Appends the tokens of a section's pre-tokens (UTF-8) to `out`.
  virtual void encode(const std::vector<std::string>& pieces, std::vector<std::string>& out) const = 0;
  // The id of a token, or the unknown token's, or -1.
  virtual std::int32_t id(const std::string& token) const = 0;
  virtual bool has(const std::string& token) const = 0;
  // The unknown token's text (empty: none).
  virtual std::string unk() const = 0;
};

}  // namespace attnscope::tokenizers
