// SentencePiece's own files and normalizer:
// - a .model / .spm file is a serialized ModelProto (sentencepiece_model.proto); read_spm() parses the fields
//   tokenizing needs, bounds-checked: the pieces (text, score, type), the trainer's model type, unknown id and byte
//   fallback, and the normalizer spec;
// - CharsMap is the normalizer's precompiled_charsmap (tokenizer.json's Precompiled normalizer holds the same bytes,
//   base64): a 4-byte little-endian trie size, a darts-clone double-array trie over UTF-8 bytes, then the
//   replacement strings, each ending in a NUL. normalize() replaces the longest match at each position with its
//   string and copies anything else a character at a time, as sentencepiece's normalizer.cc does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizers/unigram.hpp"

namespace attnscope::tokenizers {

class CharsMap {
 public:
  // `blob` as the file holds it; `what` names it in errors. An empty blob maps nothing.
  CharsMap(std::string blob, const std::string& what);

  // The replacement of the longest match at the start of `text` and the bytes it covers, or nothing.
  std::optional<std::pair<std::string_view, std::size_t>> match(std::string_view text) const;
  // Every match replaced; everything else (invalid UTF-8 as U+FFFD) kept.
  std::string normalize(std::string_view text) const;

 private:
  std::string blob_;
  std::vector<std::uint32_t> units_;
  std::string_view strings_;
};

struct SpmModel {
  enum class Type { unigram = 1, bpe = 2, word = 3, character = 4 };
  std::vector<Unigram::Piece> pieces;
  Type type = Type::unigram;
  std::int32_t unk_id = 0;
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  // The normalizer spec.
  std::string charsmap;
  bool add_dummy_prefix = true, remove_extra_whitespaces = true, escape_whitespaces = true;
};

// Throws naming `what` (the file) when the bytes are not a ModelProto this reads.
SpmModel read_spm(std::string_view bytes, const std::string& what);

// SentencePiece's whole normalization: the charsmap, then (by the spec) leading, trailing and repeated spaces
// removed, a space before the text, and every space as '▁'.
std::string spm_normalize(std::string_view text, const CharsMap& map, const SpmModel& spec);

// A SentencePiece model ready to encode: its normalizer and its unigram model (other model types are refused).
class SentencePiece {
 public:
  SentencePiece(std::string_view bytes, const std::string& what);
  // The pieces of the text, as SentencePieceProcessor.encode(text, out_type=str) gives them (with their ids).
  std::vector<Unigram::Match> encode(std::string_view text) const;
  const Unigram& model() const { return unigram_; }

 private:
  SpmModel spec_;
  CharsMap map_;
  Unigram unigram_;
};

}  // namespace attnscope::tokenizers
