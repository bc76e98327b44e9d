// Byte-pair encoding as Hugging Face's tokenizers (JS) run it, for every BPE vocabulary:
// GPT-2's byte-level one and SentencePiece-style ones with byte fallback (Llama 2, Mistral, Gemma).
//
//   symbols = the pre-token's code points
//   repeat: merge the adjacent pair with the lowest merge rank (the leftmost on ties)
//   each symbol in the vocabulary is a token; one that is not becomes its UTF-8 bytes as
//   <0xNN> tokens (byte_fallback), else the unknown token (dropped when there is none)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizers/subword.hpp"

namespace attnscope::tokenizers {

// GPT-2's byte → printable code point table: printable Latin-1 bytes map to themselves,
// the others to 256, 257, ... in byte order.
const std::vector<std::uint32_t>& byte_alphabet();
// The raw bytes of text spelled in that alphabet; false if a character is outside it.
bool from_byte_alphabet(std::string_view text, std::string& bytes);
// `bytes` spelled in the alphabet, as UTF-8.
std::string to_byte_alphabet(std::string_view bytes);

// End of GPT-2's pre-tokenizer match starting at cps[i], alternative by alternative, with JS \s:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
std::size_t gpt2_piece_end(const std::vector<std::uint32_t>& cps, std::size_t i);

class Bpe final : public SubwordModel {
 public:
  struct Options {
    bool byte_fallback = false, ignore_merges = false, fuse_unk = false;
    std::string unk;  // empty: none
    std::string end_of_word_suffix, continuing_subword_suffix;
  };

  // vocab: token → id; merges: pairs in rank order. `what` names the file in errors.
  Bpe(std::unordered_map<std::string, std::int32_t> vocab,
      const std::vector<std::pair<std::string, std::string>>& merges, Options options, const std::string& what);

  void add(const std::string& token, std::int32_t id) override;
  void encode(const std::vector<std::string>& pieces, std::vector<std::string>& out) const override;
  std::int32_t id(const std::string& token) const override;
  bool has(const std::string& token) const override { return vocab_.count(token) != 0; }
  std::string unk() const override { return o_.unk; }

 private:
  std::vector<std::string> merge(const std::string& piece) const;

  std::unordered_map<std::string, std::int32_t> vocab_;
  std::unordered_map<std::string, std::int32_t> ranks_;  // first + '\xff' + second → rank ('\xff' is never in UTF-8)
  Options o_;
};

}  // namespace attnscope::tokenizers
