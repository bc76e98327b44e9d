// The steps of a tokenizer.json pipeline (pipeline.hpp): normalizers, pre-tokenizers and
// decoders, each as Hugging Face's JS tokenizers run it. Text is UTF-8 throughout.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace attnscope {

class Json;

namespace tokenizers {

class Regex;

// Removes JS whitespace (String.prototype.trim's) from the start and/or the end of `s`.
void trim_js_space(std::string& s, bool start, bool end);
std::string join(const std::vector<std::string>& parts);

using Normalizer = std::function<std::string(const std::string&)>;
// The normalizer's steps that run here (Prepend, Replace, Precompiled, Strip); a Unicode form (NFC, NFKC, NFD,
// NFKD) goes to `form`, which the host applies to the whole text first.
std::vector<Normalizer> read_normalizer(const Json* normalizer, std::string& form);

class PreTokenizer {
 public:
  // null: none. Throws naming a type or option this engine does not run.
  static std::unique_ptr<PreTokenizer> read(const Json* config);
  // GPT-2's: the byte alphabet after its regex.
  static std::unique_ptr<PreTokenizer> byte_level(bool add_prefix_space, bool use_regex);
  ~PreTokenizer();

  // Splits every piece in place; `section` is the section's index (Metaspace's "first").
  void apply(std::vector<std::string>& pieces, std::size_t section) const;

 private:
  enum class Kind { split, byte_level, metaspace, digits, replace, whitespace_split, sequence };
  PreTokenizer() = default;
  std::vector<std::string> one(const std::string& piece, std::size_t section) const;

  Kind kind_ = Kind::sequence;
  std::unique_ptr<Regex> regex_;
  bool invert_ = false, removed_ = false;  // Split: keep only the matches, or drop them
  bool prefix_space_ = false, use_regex_ = false;
  std::string text_, with_;  // Replace: text → with; Metaspace: the replacement (in text_)
  std::string prepend_;      // Metaspace: always, first or never
  bool individual_ = false;  // Digits
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

class Decoder {
 public:
  static std::unique_ptr<Decoder> read(const Json* config);
  static std::unique_ptr<Decoder> byte_level();
  ~Decoder();

  // Tokens as the vocabulary spells them → pieces of text (joined by the caller). `added`:
  // added tokens' contents, which ByteLevel passes through as they are.
  std::vector<std::string> decode(std::vector<std::string> tokens, const std::unordered_set<std::string>& added) const;
  // One token's bytes as they stand for text, for its label: what decode() makes of it, but bytes kept as bytes
  // (never U+FFFD) and no space stripped. `added`: an added token, which ByteLevel keeps as it is.
  std::string label(std::string token, bool added) const;

 private:
  enum class Kind { byte_level, replace, byte_fallback, fuse, strip, metaspace, sequence };
  Decoder() = default;

  Kind kind_ = Kind::sequence;
  std::string text_, with_;   // Replace; Strip's character; Metaspace's replacement
  int start_ = 0, stop_ = 0;  // Strip
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace tokenizers
}  // namespace attnscope
