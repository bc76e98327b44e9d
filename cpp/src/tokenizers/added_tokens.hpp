// The added tokens of tokenizer.json, found in the text before the rest is tokenized.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnscope::tokenizers {

// Added tokens, found longest first at each position of the text (Hugging Face's DictionarySplitter).
class AddedTokens {
 public:
  struct Token {
    std::string content;
    std::int32_t id;
    bool special, lstrip, rstrip, normalized;
  };

  void add(Token t);

  // The text cut into sections: (text, added token index or -1).
  std::vector<std::pair<std::string, std::int32_t>> split(const std::string& text) const;

  const Token& operator[](std::int32_t i) const { return tokens_[i]; }

 private:
  struct Node {
    std::unordered_map<unsigned char, std::int32_t> next;
    std::int32_t token = -1;
  };
  std::vector<Node> nodes_{1};
  std::vector<Token> tokens_;
};

// Sections beside an lstrip/rstrip added token lose their whitespace on that side (JS trimEnd/trimStart).
void strip_beside_added(std::vector<std::pair<std::string, std::int32_t>>& sections, const AddedTokens& added);

}  // namespace attnscope::tokenizers
