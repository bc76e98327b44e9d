// Marian's tokenizer (transformers' MarianTokenizer): two SentencePiece models, source.spm for the text a model
// reads and target.spm for the text it writes, and one vocab.json mapping both sides' pieces to the model's ids.
//
//   encode:  a leading language code (">>de<<") kept as one token; the rest split at the special tokens, each part
//            SentencePiece's pieces; each piece → vocab.json's id (<unk>'s when absent); then </s>
//   decode:  ids → vocab.json's pieces; special tokens as they are (or skipped), each run of other pieces joined as
//            SentencePiece decodes them ('▁' → ' ', the first one dropped); the whole stripped of whitespace
//
// transformers also applies Moses punctuation normalization first when the sacremoses package is installed; that is
// an optional extra of the Python package, and not applied here.
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "attnscope/error.hpp"
#include "attnscope/tokenizer.hpp"
#include "io/json.hpp"
#include "tokenizers/added_tokens.hpp"
#include "tokenizers/sentencepiece.hpp"
#include "tokenizers/steps.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope {

namespace {

using tokenizers::SentencePiece;

constexpr std::string_view kSpace = "\xE2\x96\x81";  // '▁'

class Marian final : public Tokenizer {
 public:
  Marian(std::string_view source, std::string_view target, const Json& vocab, const Json* config)
      : source_(source, "source.spm"), target_(target, "target.spm") {
    const Json* separate = config ? config->find("separate_vocabs") : nullptr;
    if (separate && separate->type() == Json::Type::boolean && separate->boolean())
      throw Error("tokenizer_config.json: separate_vocabs (a target_vocab.json of its own) is not supported");
    if (!vocab.is_object()) throw Error("vocab.json: expected an object mapping pieces to ids");
    if (vocab.object().size() > kMaxVocabulary)
      throw Error("vocab.json: " + std::to_string(vocab.object().size()) + " entries, above the limit of " +
                  std::to_string(kMaxVocabulary));
    for (const auto& [piece, id] : vocab.object()) {
      if (!id.is_number() || id.number() < 0 || id.number() >= double(kMaxVocabulary) ||
          std::floor(id.number()) != id.number())
        throw Error("vocab.json: the id of " + quote(piece) + " must be a whole number below " +
                    std::to_string(kMaxVocabulary));
      const auto i = static_cast<std::int32_t>(id.number());
      ids_.emplace(piece, i);
      if (static_cast<std::size_t>(i) >= names_.size()) names_.resize(static_cast<std::size_t>(i) + 1);
      names_[static_cast<std::size_t>(i)] = piece;
    }
    const auto special = [&](const char* key, const char* fallback) {
      const std::string text = tokenizers::token_text(config ? config->find(key) : nullptr, fallback);
      const auto it = ids_.find(text);
      if (it == ids_.end()) throw Error("vocab.json: the " + std::string(key) + " " + quote(text) + " is not in it");
      special_.insert(it->second);
      specials_.add({text, it->second, true, false, false, false});
      return it->second;
    };
    unk_ = special("unk_token", "<unk>");
    eos_ = special("eos_token", "</s>");
    special("pad_token", "<pad>");
  }

  Encoding encode(std::string_view text) const override { return encode(text, source_); }
  Encoding encode_target(std::string_view text) const override { return encode(text, target_); }
  std::string normalization() const override { return ""; }  // the models' own charsmaps normalize
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(names_.size()); }
  std::string token(std::int32_t id) const override { return names_.at(static_cast<std::size_t>(id)); }
  bool is_special(std::int32_t id) const override { return special_.count(id) != 0; }
  std::string label(std::int32_t id) const override {
    std::string t = token(id);
    if (!is_special(id)) tokenizers::replace_all(t, std::string(kSpace), " ");
    return unicode::readable(t);
  }

  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special) const override {
    std::string out, run;
    const auto flush = [&] {
      std::string_view r = run;
      if (r.substr(0, kSpace.size()) == kSpace) r.remove_prefix(kSpace.size());
      out += r;
      run.clear();
    };
    for (std::int32_t id : ids) {
      const bool special = is_special(id);
      if (special && skip_special) continue;
      const std::string& t = names_.at(static_cast<std::size_t>(id));
      if (special) {
        flush();
        out += t + " ";
      } else {
        run += t;
      }
    }
    flush();
    tokenizers::replace_all(out, std::string(kSpace), " ");
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
    std::size_t begin = 0, end = out.size();
    while (begin < end && space(out[begin])) ++begin;
    while (end > begin && space(out[end - 1])) --end;
    return out.substr(begin, end - begin);
  }

 private:
  Encoding encode(std::string_view utf8, const SentencePiece& spm) const {
    Encoding e;
    const auto push = [&](std::string token) {
      const auto it = ids_.find(token);
      e.ids.push_back(it == ids_.end() ? unk_ : it->second);
      e.tokens.push_back(std::move(token));
    };
    std::string text(utf8);
    if (text.rfind(">>", 0) == 0) {  // a language code, as transformers finds it: ">>" … the first "<<"
      const std::size_t end = text.find("<<");
      if (end != std::string::npos) {
        push(text.substr(0, end + 2));
        text.erase(0, end + 2);
      }
    }
    for (const auto& [part, special] : specials_.split(text)) {
      if (special >= 0) {
        push(part);
        continue;
      }
      for (auto& m : spm.encode(part)) push(std::move(m.text));
    }
    push(names_.at(static_cast<std::size_t>(eos_)));
    return e;
  }

  SentencePiece source_, target_;
  std::unordered_map<std::string, std::int32_t> ids_;
  std::vector<std::string> names_;
  std::unordered_set<std::int32_t> special_;
  tokenizers::AddedTokens specials_;
  std::int32_t unk_ = 0, eos_ = 0;
};

}  // namespace

std::unique_ptr<Tokenizer> make_marian_tokenizer(std::string_view source_spm, std::string_view target_spm,
                                                 const Json& vocab, const Json* tokenizer_config) {
  return std::make_unique<Marian>(source_spm, target_spm, vocab, tokenizer_config);
}

}  // namespace attnscope
