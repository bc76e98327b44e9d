// Tokenizers, read from a model's own files. Text arrives as UTF-8 after the host
// has applied the tokenizer's Unicode normalization (`normalization()`: JS does it
// with String.prototype.normalize, which every engine ships with full tables).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope {

class Json;

struct Encoding {
  std::vector<std::int32_t> ids;
  std::vector<std::string> tokens;  // as the tokenizer split the text, special tokens included
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual Encoding encode(std::string_view utf8) const = 0;
  // The text an encoder-decoder writes (its target), where that has a tokenizer of its own (Marian's target.spm).
  virtual Encoding encode_target(std::string_view utf8) const { return encode(utf8); }
  // The Unicode normalization form to apply before encode(): "NFKC", "NFD" or "" (none).
  virtual std::string normalization() const = 0;
  virtual std::int64_t vocab_size() const = 0;
  // The vocabulary entry of `id` (in [0, vocab_size())), as UTF-8.
  virtual std::string token(std::int32_t id) const = 0;
  // Whether `id` is a special token the tokenizer adds or reserves ([CLS], [SEP], <|endoftext|>, ...).
  virtual bool is_special(std::int32_t id) const {
    (void)id;
    return false;
  }
  // The text of ids (each in [0, vocab_size())), as the tokenizer's decoder spells it; special
  // tokens left out when `skip_special`. Byte pieces that do not complete a character decode to
  // U+FFFD, as TextDecoder does.
  virtual std::string decode(const std::vector<std::int32_t>& ids, bool skip_special) const = 0;
  // How a person reads `id`: the text its bytes spell, with whitespace shown (␣ ⏎ ⇥) and a leading
  // space kept; bytes that spell no character (half of a UTF-8 sequence) as <0xNN>. Byte-level
  // pieces ("Ġcat") become "␣cat", SentencePiece's "▁cat" too; special tokens and WordPiece's
  // "##ing" stay as the vocabulary spells them.
  virtual std::string label(std::int32_t id) const;
};

// Most vocabulary entries any tokenizer accepts.
inline constexpr std::size_t kMaxVocabulary = 1'000'000;

// The SentencePiece unigram tokenizer of Universal Sentence Encoder, as the
// original TF.js `Tokenizer` runs it: Viterbi over UTF-16 code units after NFKC,
// '▁' before the text and for every space, unmatched units as id 0 (runs merged).
// `vocab` is the model's vocab.json: [[piece, score], ...]; the first 6 are reserved.
std::unique_ptr<Tokenizer> make_sentencepiece_use(const Json& vocab, const std::string& what);

// Marian's: source.spm and target.spm (SentencePiece unigram models) with vocab.json (piece → id) and
// tokenizer_config.json's special tokens.
std::unique_ptr<Tokenizer> make_marian_tokenizer(std::string_view source_spm, std::string_view target_spm,
                                                 const Json& vocab, const Json* tokenizer_config);

// The tokenizer a model's files hold: tokenizer.json (WordPiece, BPE as Llama, Qwen, Gemma,
// Mistral and GPT-2 use it, with tokenizer_config.json's BOS/EOS settings, or Unigram as T5 uses it),
// source.spm + target.spm + vocab.json (Marian), vocab.txt
// (+ tokenizer_config.json; BERT's WordPiece), vocab.json + merges.txt (GPT-2's byte-level
// BPE), or a [[piece, score], ...] vocab.json (Universal Sentence Encoder's SentencePiece).
// nullptr when there is none AttnScope reads.
std::unique_ptr<Tokenizer> make_tokenizer(const std::map<std::string, std::string>& files);

// UTF-8 (WTF-8: lone surrogates allowed, as JS strings hold them) to UTF-16 code
// units. Invalid bytes become U+FFFD.
std::u16string utf8_to_utf16(std::string_view s);
std::string utf16_to_utf8(std::u16string_view s);

}  // namespace attnscope
