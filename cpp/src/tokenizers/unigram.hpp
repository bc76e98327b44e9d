// The unigram language model of SentencePiece (spm_train --model_type=unigram: T5, Marian, ALBERT, XLNet): the
// text's most probable split into pieces, each piece's score its log-probability, found by Viterbi over UTF-8
// characters as sentencepiece's unigram_model.cc and Hugging Face's Unigram do it:
//
//   best(0) = 0;  best(end) = max over pieces text[start, end) of best(start) + score(piece)
//   a character no piece starts with is the unknown piece, scored min(normal scores) − 10
//   runs of unknown pieces fuse into one; with byte fallback each becomes its UTF-8 bytes as <0xNN> pieces
//
// Ties keep the earlier candidate (a lower start, then a shorter piece), as both implementations scan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizers/subword.hpp"

namespace attnscope::tokenizers {

class Unigram final : public SubwordModel {
 public:
  // SentencePiece's piece types (sentencepiece_model.proto's values).
  enum class Kind : std::uint8_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };
  struct Piece {
    std::string text;
    float score;
    Kind kind;
  };
  // One piece of an encoding: its id and the text it covers (an unknown run's text as it stands).
  struct Match {
    std::int32_t id;
    std::string text;
  };

  // `unk_id` indexes `pieces`; `what` names the file in errors.
  Unigram(std::vector<Piece> pieces, std::int32_t unk_id, bool byte_fallback, const std::string& what);

  // The pieces of already normalized text.
  std::vector<Match> encode(std::string_view text) const;
  // As a tokenizer.json model: each pre-token's pieces, unknown runs as their text.
  void encode(const std::vector<std::string>& pieces, std::vector<std::string>& out) const override;
  // The id of a piece's text; the unknown piece's for any other text.
  std::int32_t id(const std::string& text) const override;
  bool has(const std::string& text) const override { return ids_.count(text) != 0; }
  std::string unk() const override { return pieces_[static_cast<std::size_t>(unk_id_)].text; }
  // Makes `text` a piece with this id (tokenizer.json's added tokens are in the vocabulary too).
  void add(const std::string& text, std::int32_t id) override;
  const Piece& piece(std::int32_t id) const { return pieces_.at(static_cast<std::size_t>(id)); }
  std::size_t size() const { return pieces_.size(); }
  std::int32_t unk_id() const { return unk_id_; }

 private:
  std::vector<Piece> pieces_;
  std::unordered_map<std::string, std::int32_t> ids_;      // every piece's text
  std::unordered_map<std::string, std::int32_t> matched_;  // the pieces Viterbi may choose
  std::int32_t unk_id_;
  bool byte_fallback_;
  float min_score_ = 0, max_score_ = 0;  // over normal pieces
  std::size_t longest_ = 1;              // the longest matchable piece, in bytes
};

}  // namespace attnscope::tokenizers
