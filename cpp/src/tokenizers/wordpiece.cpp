// BERT's tokenizer as Hugging Face's tokenizers (tokenizers.js) runs it:
//
// 1. split the raw text on the special tokens ([CLS], [MASK], ...), matched exactly;
// 2. BertNormalizer on the rest: drop NUL, U+FFFD and control characters, turn
//    whitespace into spaces, pad CJK ideographs with spaces (BMP only, as the JS
//    reference tests UTF-16 units), lowercase, then NFD and drop nonspacing marks;
// 3. BertPreTokenizer: words are runs of neither space nor punctuation, and each
//    punctuation mark is a word of its own;
// 4. WordPiece: longest match first, "##" before continuations, a word longer than
//    100 characters or with an unmatched part becomes [UNK];
// 5. [CLS] … [SEP] around it all.
//
// Read from tokenizer.json (model WordPiece, normalizer BertNormalizer) or from
// vocab.txt with tokenizer_config.json's do_lower_case.
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "attnscope/error.hpp"
#include "attnscope/tokenizer.hpp"
#include "io/json.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope {

namespace {

using unicode::is_js_space;

struct BertOptions {
  bool clean_text = true, chinese = true, lowercase = true, strip_accents = true;
  std::size_t max_chars = 100;
  std::string unk = "[UNK]", prefix = "##";
};

bool is_bert_punctuation(std::uint32_t cp) {
  return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
         (cp >= 0x7B && cp <= 0x7E) || unicode::is_punctuation(cp);
}

bool is_cjk(std::uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0xF900 && cp <= 0xFAFF);
}

class WordPiece final : public Tokenizer {
 public:
  WordPiece(std::vector<std::string> vocab, std::vector<std::string> specials, BertOptions options, const char* what)
      : vocab_(std::move(vocab)), o_(std::move(options)) {
    if (vocab_.size() > kMaxVocabulary)
      throw Error(std::string(what) + ": " + std::to_string(vocab_.size()) + " entries, above the limit of " +
                  std::to_string(kMaxVocabulary));
    for (std::size_t i = 0; i < vocab_.size(); ++i) ids_.emplace(vocab_[i], static_cast<std::int32_t>(i));
    for (const char* name : {"[CLS]", "[SEP]"}) {
      if (!ids_.count(name)) throw Error(std::string(what) + ": the vocabulary has no " + name + " token");
    }
    if (!ids_.count(o_.unk)) throw Error(std::string(what) + ": the vocabulary has no unknown token " + quote(o_.unk));
    for (auto& s : specials)
      if (!s.empty() && ids_.count(s)) specials_.push_back(unicode::decode_utf8(s));
    for (auto& s : specials)
      if (s != o_.unk && ids_.count(s)) special_ids_.insert(ids_.at(s));
    special_ids_.insert({ids_.at("[CLS]"), ids_.at("[SEP]")});
  }

  bool is_special(std::int32_t id) const override { return special_ids_.count(id) > 0; }

  std::string normalization() const override { return ""; }
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(vocab_.size()); }
  std::string token(std::int32_t id) const override { return vocab_.at(static_cast<std::size_t>(id)); }

  // As Hugging Face's WordPiece decoder: "##" pieces join the previous one, others follow a space.
  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special) const override {
    std::string out;
    for (std::int32_t id : ids) {
      if (skip_special && is_special(id)) continue;
      const std::string& t = vocab_.at(static_cast<std::size_t>(id));
      if (t.rfind(o_.prefix, 0) == 0 && !out.empty())
        out += t.substr(o_.prefix.size());
      else
        out += (out.empty() ? "" : " ") + t;
    }
    return out;
  }

  Encoding encode(std::string_view utf8) const override {
    const std::vector<std::uint32_t> cps = unicode::decode_utf8(utf8);
    Encoding e;
    push(e, "[CLS]");
    std::size_t start = 0;
    for (std::size_t i = 0; i < cps.size();) {
      const std::size_t special = special_at(cps, i);
      if (!special) {
        ++i;
        continue;
      }
      words(std::vector<std::uint32_t>(cps.begin() + start, cps.begin() + i), e);
      push(e, unicode::encode_utf8(cps, i, i + special));
      i += special;
      start = i;
    }
    words(std::vector<std::uint32_t>(cps.begin() + start, cps.end()), e);
    push(e, "[SEP]");
    return e;
  }

 private:
  void push(Encoding& e, const std::string& token) const {
    e.ids.push_back(ids_.at(token));
    e.tokens.push_back(token);
  }

  // Length of the longest special token starting at cps[i], or 0.
  std::size_t special_at(const std::vector<std::uint32_t>& cps, std::size_t i) const {
    std::size_t best = 0;
    for (const auto& s : specials_)
      if (s.size() > best && i + s.size() <= cps.size() && std::equal(s.begin(), s.end(), cps.begin() + i))
        best = s.size();
    return best;
  }

  std::vector<std::uint32_t> normalize(const std::vector<std::uint32_t>& in) const {
    std::vector<std::uint32_t> out;
    for (std::uint32_t cp : in) {
      if (o_.clean_text) {
        if (cp == 0 || cp == 0xFFFD) continue;
        if (cp != '\t' && cp != '\n' && cp != '\r' && unicode::in(unicode::kBertControl, cp)) continue;
        if (is_js_space(cp)) cp = ' ';
      }
      if (o_.chinese && is_cjk(cp)) {
        out.insert(out.end(), {' ', cp, ' '});
      } else {
        out.push_back(cp);
      }
    }
    if (o_.lowercase) out = unicode::to_lower(out);
    if (o_.strip_accents) {
      std::vector<std::uint32_t> kept;
      for (std::uint32_t cp : unicode::decompose(out))
        if (!unicode::is_nonspacing_mark(cp)) kept.push_back(cp);
      out = std::move(kept);
    }
    return out;
  }

  // Normalizes, pre-tokenizes and WordPiece-encodes one stretch of text between special tokens.
  void words(const std::vector<std::uint32_t>& raw, Encoding& e) const {
    const std::vector<std::uint32_t> text = normalize(raw);
    for (std::size_t i = 0; i < text.size();) {
      if (is_js_space(text[i])) {
        ++i;
      } else if (is_bert_punctuation(text[i])) {
        word(text, i, i + 1, e);
        ++i;
      } else {
        std::size_t j = i;
        while (j < text.size() && !is_js_space(text[j]) && !is_bert_punctuation(text[j])) ++j;
        word(text, i, j, e);
        i = j;
      }
    }
  }

  void word(const std::vector<std::uint32_t>& cps, std::size_t begin, std::size_t end, Encoding& e) const {
    if (end - begin > o_.max_chars) return push(e, o_.unk);
    std::vector<std::string> pieces;
    for (std::size_t start = begin; start < end;) {
      std::size_t stop = end;
      for (; stop > start; --stop) {
        const std::string piece = (start > begin ? o_.prefix : "") + unicode::encode_utf8(cps, start, stop);
        if (ids_.count(piece)) {
          pieces.push_back(piece);
          break;
        }
      }
      if (stop == start) return push(e, o_.unk);  // some part matched nothing: the whole word is unknown
      start = stop;
    }
    for (const auto& p : pieces) push(e, p);
  }

  std::vector<std::string> vocab_;
  std::unordered_map<std::string, std::int32_t> ids_;
  std::vector<std::vector<std::uint32_t>> specials_;
  std::unordered_set<std::int32_t> special_ids_;  // [CLS], [SEP] and the other specials but [UNK]
  BertOptions o_;
};

bool flag(const Json* object, const char* key, bool fallback) {
  const Json* v = object ? object->find(key) : nullptr;
  return v && v->type() == Json::Type::boolean ? v->boolean() : fallback;
}

}  // namespace

std::unique_ptr<Tokenizer> make_wordpiece_from_vocab_txt(std::string_view text, const Json* tokenizer_config) {
  // Count first: a file of 10^7 lines is refused before any entry is stored.
  if (static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) > kMaxVocabulary)
    throw Error("vocab.txt: more than 1,000,000 entries");
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len = static_cast<unsigned char>(text[i]) < 0x80 ? 1 : utf8_sequence_length(text, i);
    if (!len) throw Error("vocab.txt: invalid UTF-8 at byte " + std::to_string(i));
    i += len;
  }
  std::vector<std::string> vocab;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    vocab.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
    if (vocab.size() > kMaxVocabulary) throw Error("vocab.txt: more than 1,000,000 entries");
  }
  BertOptions o;
  o.lowercase = flag(tokenizer_config, "do_lower_case", true);
  const Json* strip = tokenizer_config ? tokenizer_config->find("strip_accents") : nullptr;
  o.strip_accents = strip && strip->type() == Json::Type::boolean ? strip->boolean() : o.lowercase;
  o.chinese = flag(tokenizer_config, "tokenize_chinese_chars", true);
  return std::make_unique<WordPiece>(
      std::move(vocab), std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}, o, "vocab.txt");
}

std::unique_ptr<Tokenizer> make_wordpiece_from_tokenizer_json(const Json& j) {
  const Json* model = j.find("model");
  const Json* vocab = model ? model->find("vocab") : nullptr;
  if (!vocab || !vocab->is_object()) throw Error("tokenizer.json: model.vocab is missing");
  if (vocab->object().size() > kMaxVocabulary) throw Error("tokenizer.json: more than 1,000,000 vocabulary entries");
  std::vector<std::string> tokens(vocab->object().size());
  for (const auto& [token, id] : vocab->object()) {
    if (!id.is_number() || id.number() < 0 || id.number() >= double(tokens.size()) ||
        std::floor(id.number()) != id.number() || !tokens[static_cast<std::size_t>(id.number())].empty())
      throw Error("tokenizer.json: the id of " + quote(token) + " is not a distinct whole number below " +
                  std::to_string(tokens.size()));
    tokens[static_cast<std::size_t>(id.number())] = token;
  }
  BertOptions o;
  const Json* n = j.find("normalizer");
  if (n && n->is_object()) {
    const Json* type = n->find("type");
    if (!type || !type->is_string() || type->string() != "BertNormalizer")
      throw Error("tokenizer.json: normalizer " + quote(type && type->is_string() ? type->string() : "?") +
                  " is not supported with WordPiece (BertNormalizer)");
    o.clean_text = flag(n, "clean_text", true);
    o.chinese = flag(n, "handle_chinese_chars", true);
    o.lowercase = flag(n, "lowercase", true);
    const Json* strip = n->find("strip_accents");
    o.strip_accents = strip && strip->type() == Json::Type::boolean ? strip->boolean() : o.lowercase;
  }
  const Json* unk = model->find("unk_token");
  if (unk && unk->is_string()) o.unk = unk->string();
  const Json* prefix = model->find("continuing_subword_prefix");
  if (prefix && prefix->is_string()) o.prefix = prefix->string();
  const Json* max = model->find("max_input_chars_per_word");
  if (max && max->is_number() && max->number() >= 1 && max->number() <= 1e6)
    o.max_chars = static_cast<std::size_t>(max->number());
  std::vector<std::string> specials;
  const Json* added = j.find("added_tokens");
  if (added && added->is_array())
    for (const Json& t : added->array()) {
      const Json* content = t.is_object() ? t.find("content") : nullptr;
      if (content && content->is_string()) specials.push_back(content->string());
    }
  return std::make_unique<WordPiece>(std::move(tokens), std::move(specials), o, "tokenizer.json");
}

}  // namespace attnscope
