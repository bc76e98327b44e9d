#include "tokenizers/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "tokenizers/added_tokens.hpp"
#include "tokenizers/bpe.hpp"
#include "tokenizers/pieces.hpp"
#include "tokenizers/regex.hpp"
#include "tokenizers/steps.hpp"
#include "tokenizers/unicode.hpp"
#include "tokenizers/unigram.hpp"

namespace attnscope::tokenizers {

namespace {

const char* kFile = "tokenizer.json";

class Pipeline final : public Tokenizer {
 public:
  Pipeline(const Json& j, const Json* config) {
    const Json* model = j.find("model");
    read_model(*model);
    if (const Json* added = j.find("added_tokens"); added && added->is_array()) {
      for (const Json& a : added->array()) {
        if (!a.is_object() || !a.find("id") || !a.find("id")->is_number() || !a.find("content") ||
            !a.find("content")->is_string())
          throw Error("tokenizer.json: an added token needs an id and a content");
        const double id = a.find("id")->number();
        if (!(id >= 0 && id < double(kMaxVocabulary)) || std::floor(id) != id)
          throw Error("tokenizer.json: the added token " + quote(a.find("content")->string()) + " has a bad id");
        const auto flag = [&](const char* key, bool fallback) {
          const Json* v = a.find(key);
          return v && v->type() == Json::Type::boolean ? v->boolean() : fallback;
        };
        const bool special = flag("special", false);
        AddedTokens::Token t{a.find("content")->string(), static_cast<std::int32_t>(id), special,
                             flag("lstrip", false),       flag("rstrip", false),         flag("normalized", !special)};
        if (t.content.empty()) continue;
        name(t.id, t.content);
        model_->add(t.content, t.id);
        added_.insert(t.content);
        if (t.special) special_.insert(t.id);
        (t.normalized ? normalized_ : unnormalized_).add(std::move(t));
      }
    }
    normalizer_ = read_normalizer(j.find("normalizer"), form_);
    pre_ = PreTokenizer::read(j.find("pre_tokenizer"));
    read_post_processor(j.find("post_processor"));
    decoder_ = Decoder::read(j.find("decoder"));
    if (config) apply_config(*config);
  }

  explicit Pipeline(std::unique_ptr<SubwordModel> bpe, std::vector<std::string> names)
      : model_(std::move(bpe)), names_(std::move(names)) {}

  void gpt2_defaults() {
    pre_ = PreTokenizer::byte_level(false, true);
    decoder_ = Decoder::byte_level();
  }

  std::string normalization() const override { return form_; }
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(names_.size()); }
  std::string token(std::int32_t id) const override { return names_.at(static_cast<std::size_t>(id)); }
  bool is_special(std::int32_t id) const override { return special_.count(id) > 0; }
  std::string label(std::int32_t id) const override {
    const std::string& t = names_.at(static_cast<std::size_t>(id));
    if (special_.count(id)) return t;
    return unicode::readable(decoder_ ? decoder_->label(t, added_.count(t) > 0) : t);
  }
  void mark_special(const std::string& token) {
    const std::int32_t id = model_->id(token);
    if (id >= 0 && model_->has(token)) special_.insert(id);
  }

  Encoding encode(std::string_view utf8) const override {
    std::vector<std::string> tokens;
    for (const auto& [text, id] : prefix_) tokens.push_back(text);
    auto sections = unnormalized_.split(std::string(utf8));
    strip_beside_added(sections, unnormalized_);
    for (std::size_t s = 0; s < sections.size(); ++s) {
      const auto& [text, added] = sections[s];
      if (text.empty()) continue;
      if (added >= 0) {
        tokens.push_back(text);
        continue;
      }
      std::string normalized = text;
      for (const auto& step : normalizer_) normalized = step(normalized);
      if (normalized.empty()) continue;
      auto subsections = normalized_.split(normalized);
      strip_beside_added(subsections, normalized_);
      for (const auto& [sub, sub_added] : subsections) {
        if (sub.empty()) continue;
        if (sub_added >= 0) {
          tokens.push_back(sub);
          continue;
        }
        std::vector<std::string> pieces{sub};
        if (pre_) pre_->apply(pieces, s);
        model_->encode(pieces, tokens);
      }
    }
    for (const auto& [text, id] : suffix_) tokens.push_back(text);
    Encoding e;
    for (std::string& t : tokens) {
      const std::int32_t id = lookup(t);
      if (id < 0) continue;  // no unknown token to stand for it: dropped, as the JS tokenizer drops it
      e.ids.push_back(id);
      e.tokens.push_back(std::move(t));
    }
    return e;
  }

  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special) const override {
    std::vector<std::string> tokens;
    for (std::int32_t id : ids) {
      if (skip_special && special_.count(id)) continue;
      tokens.push_back(id >= 0 && id < vocab_size() ? names_[id] : model_->unk());
    }
    if (!decoder_) {
      std::string out;
      for (std::size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
      return out;
    }
    return join(decoder_->decode(std::move(tokens), added_));
  }

 private:
  // Added tokens are in the BPE vocabulary too, as the JS tokenizer puts them there.
  std::int32_t lookup(const std::string& token) const { return model_->id(token); }

  void name(std::int32_t id, const std::string& token) {
    if (static_cast<std::size_t>(id) >= names_.size()) names_.resize(static_cast<std::size_t>(id) + 1);
    names_[id] = token;
  }

  void read_model(const Json& m) {
    const std::string type = string_of(m.find("type"));
    if (type == "Unigram") return read_unigram(m);
    const Json* vocab = m.find("vocab");
    const Json* merges = m.find("merges");
    if (!vocab || !vocab->is_object() || !merges || !merges->is_array())
      throw Error("tokenizer.json: model.vocab or model.merges is missing");
    if (vocab->object().size() > kMaxVocabulary)
      throw Error("tokenizer.json: " + std::to_string(vocab->object().size()) +
                  " vocabulary entries, above the limit of " + std::to_string(kMaxVocabulary));
    std::unordered_map<std::string, std::int32_t> ids;
    ids.reserve(vocab->object().size());
    for (const auto& [token, id] : vocab->object()) {
      if (!id.is_number() || id.number() < 0 || id.number() >= double(kMaxVocabulary) ||
          std::floor(id.number()) != id.number())
        throw Error("tokenizer.json: the id of " + quote(token) + " must be a whole number below " +
                    std::to_string(kMaxVocabulary));
      ids[token] = static_cast<std::int32_t>(id.number());
      name(ids[token], token);
    }
    std::vector<std::pair<std::string, std::string>> pairs;
    pairs.reserve(merges->array().size());
    for (const Json& x : merges->array()) {
      if (x.is_string()) {
        const std::size_t space = x.string().find(' ');
        if (space == std::string::npos) throw Error("tokenizer.json: a merge is not two tokens separated by a space");
        pairs.emplace_back(x.string().substr(0, space), x.string().substr(space + 1));
      } else if (x.is_array() && x.array().size() == 2 && x.array()[0].is_string() && x.array()[1].is_string()) {
        pairs.emplace_back(x.array()[0].string(), x.array()[1].string());
      } else {
        throw Error("tokenizer.json: a merge is neither \"a b\" nor [a, b]");
      }
    }
    const auto flag = [&](const char* key) {
      const Json* v = m.find(key);
      return v && v->type() == Json::Type::boolean && v->boolean();
    };
    Bpe::Options o;
    o.byte_fallback = flag("byte_fallback");
    o.ignore_merges = flag("ignore_merges");
    o.fuse_unk = flag("fuse_unk");
    o.unk = string_of(m.find("unk_token"));
    o.end_of_word_suffix = string_of(m.find("end_of_word_suffix"));
    o.continuing_subword_suffix = string_of(m.find("continuing_subword_suffix"));
    model_ = std::make_unique<Bpe>(std::move(ids), pairs, o, kFile);
  }

  // Unigram (T5, and SentencePiece unigram models converted by transformers): vocab is [[piece, score], ...] in id
  // order; every entry is a piece Viterbi may choose, as in Hugging Face's Unigram.
  void read_unigram(const Json& m) {
    const Json* vocab = m.find("vocab");
    if (!vocab || !vocab->is_array()) throw Error("tokenizer.json: the Unigram model's vocab is missing");
    if (vocab->array().size() > kMaxVocabulary)
      throw Error("tokenizer.json: " + std::to_string(vocab->array().size()) +
                  " vocabulary entries, above the limit of " + std::to_string(kMaxVocabulary));
    std::vector<Unigram::Piece> pieces;
    pieces.reserve(vocab->array().size());
    for (const Json& x : vocab->array()) {
      if (!x.is_array() || x.array().size() != 2 || !x.array()[0].is_string() || !x.array()[1].is_number())
        throw Error("tokenizer.json: a Unigram vocab entry is not [piece, score]");
      pieces.push_back({x.array()[0].string(), static_cast<float>(x.array()[1].number()), Unigram::Kind::normal});
      name(static_cast<std::int32_t>(pieces.size() - 1), pieces.back().text);
    }
    const Json* unk = m.find("unk_id");
    if (!unk || !unk->is_number() || unk->number() < 0 || std::floor(unk->number()) != unk->number())
      throw Error("tokenizer.json: the Unigram model needs an unk_id");
    const Json* fallback = m.find("byte_fallback");
    model_ =
        std::make_unique<Unigram>(std::move(pieces), static_cast<std::int32_t>(unk->number()),
                                  fallback && fallback->type() == Json::Type::boolean && fallback->boolean(), kFile);
  }

  // TemplateProcessing's single template: the special tokens before and after the text.
  void read_post_processor(const Json* p) {
    if (!p || p->is_null()) return;
    const std::string type = string_of(p->find("type"));
    if (type == "ByteLevel") return;  // offsets only: no tokens change
    if (type == "Sequence") {
      const Json* list = p->find("processors");
      if (list && list->is_array())
        for (const Json& x : list->array()) read_post_processor(&x);
      return;
    }
    if (type == "RobertaProcessing" || type == "BertProcessing") {  // BART, RoBERTa: cls, the text, sep
      const auto token = [&](const char* key) -> std::pair<std::string, std::int32_t> {
        const Json* t = p->find(key);
        if (!t || !t->is_array() || t->array().size() != 2 || !t->array()[0].is_string() ||
            !t->array()[1].is_number() || t->array()[1].number() < 0 || t->array()[1].number() > 1e7)
          throw Error("tokenizer.json: " + type + "." + key + " must be [token, id]");
        return {t->array()[0].string(), static_cast<std::int32_t>(t->array()[1].number())};
      };
      prefix_.push_back(token("cls"));
      suffix_.push_back(token("sep"));
      return;
    }
    if (type != "TemplateProcessing")
      throw Error("tokenizer.json: post_processor type " + quote(type) +
                  " is not supported (TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, Sequence)");
    const Json* single = p->find("single");
    const Json* specials = p->find("special_tokens");
    if (!single || !single->is_array()) throw Error("tokenizer.json: TemplateProcessing has no single template");
    bool after = false;
    for (const Json& item : single->array()) {
      if (const Json* seq = item.find("Sequence")) {
        (void)seq;
        after = true;
        continue;
      }
      const Json* special = item.find("SpecialToken");
      const std::string id = special ? string_of(special->find("id")) : "";
      const Json* entry = specials && specials->is_object() ? specials->find(id) : nullptr;
      const Json* ids = entry ? entry->find("ids") : nullptr;
      const Json* texts = entry ? entry->find("tokens") : nullptr;
      if (!ids || !ids->is_array() || !texts || !texts->is_array() || ids->array().size() != texts->array().size())
        throw Error("tokenizer.json: TemplateProcessing names special token " + quote(id) + " but does not define it");
      for (std::size_t i = 0; i < ids->array().size(); ++i)
        (after ? suffix_ : prefix_)
            .emplace_back(string_of(&texts->array()[i]), static_cast<std::int32_t>(ids->array()[i].number()));
    }
  }

  // transformers v4's Llama and Gemma tokenizers rebuild the template from tokenizer_config.json's
  // add_bos_token / add_eos_token; when the file sets neither, tokenizer.json's template stands.
  void apply_config(const Json& c) {
    const std::string cls = string_of(c.find("tokenizer_class"));
    const bool llama_like = cls.rfind("LlamaTokenizer", 0) == 0 || cls.rfind("GemmaTokenizer", 0) == 0 ||
                            cls.rfind("CodeLlamaTokenizer", 0) == 0;
    const Json* bos = c.find("add_bos_token");
    const Json* eos = c.find("add_eos_token");
    const bool has_bos = bos && bos->type() == Json::Type::boolean, has_eos = eos && eos->type() == Json::Type::boolean;
    if (!llama_like || (!has_bos && !has_eos)) return;
    const auto special = [&](const char* key) -> std::pair<std::string, std::int32_t> {
      const std::string text = token_text(c.find(key));
      const std::int32_t id = model_->has(text) ? model_->id(text) : -1;
      if (id < 0)
        throw Error("tokenizer_config.json: " + std::string(key) + " " + quote(text) + " is not in the vocabulary");
      return {text, id};
    };
    prefix_.clear();
    suffix_.clear();
    if (has_bos ? bos->boolean() : true) prefix_.push_back(special("bos_token"));
    if (has_eos && eos->boolean()) suffix_.push_back(special("eos_token"));
  }

  std::unique_ptr<SubwordModel> model_;
  std::vector<std::string> names_;  // id → token as the vocabulary spells it
  AddedTokens unnormalized_, normalized_;
  std::unordered_set<std::string> added_;  // their contents, which the ByteLevel decoder keeps as they are
  std::unordered_set<std::int32_t> special_;
  std::string form_;  // NFC, NFKC, NFD or NFKD: applied in JS before encode()
  std::vector<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<std::pair<std::string, std::int32_t>> prefix_, suffix_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_pipeline(const Json& tokenizer_json, const Json* tokenizer_config) {
  return std::make_unique<Pipeline>(tokenizer_json, tokenizer_config);
}

std::unique_ptr<Tokenizer> make_gpt2_bpe(const Json& vocab, std::string_view merges) {
  if (!vocab.is_object()) throw Error("vocab.json: expected an object mapping tokens to ids");
  if (vocab.object().size() > kMaxVocabulary)
    throw Error("vocab.json: " + std::to_string(vocab.object().size()) + " entries, above the limit of " +
                std::to_string(kMaxVocabulary));
  std::unordered_map<std::string, std::int32_t> ids;
  std::vector<std::string> names;
  for (const auto& [token, id] : vocab.object()) {
    if (!id.is_number() || id.number() < 0 || id.number() >= double(kMaxVocabulary) ||
        std::floor(id.number()) != id.number())
      throw Error("vocab.json: the id of " + quote(token) + " must be a whole number below " +
                  std::to_string(kMaxVocabulary));
    std::string bytes;
    if (!from_byte_alphabet(token, bytes))
      throw Error("vocab.json: " + quote(token) + " has a character outside GPT-2's byte alphabet");
    const auto i = static_cast<std::int32_t>(id.number());
    ids[token] = i;
    if (static_cast<std::size_t>(i) >= names.size()) names.resize(static_cast<std::size_t>(i) + 1);
    names[i] = token;
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  std::size_t line_no = 0, begin = 0;
  while (begin < merges.size()) {
    std::size_t end = merges.find('\n', begin);
    if (end == std::string_view::npos) end = merges.size();
    std::string_view line = merges.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 >= line.size())
      throw Error("merges.txt: line " + std::to_string(line_no) + " is not two tokens separated by a space");
    if (pairs.size() >= kMaxVocabulary) throw Error("merges.txt: more than 1,000,000 merges");
    std::string first(line.substr(0, space)), second(line.substr(space + 1)), ignored;
    if (!from_byte_alphabet(first, ignored) || !from_byte_alphabet(second, ignored))
      throw Error("merges.txt: line " + std::to_string(line_no) + " has a character outside GPT-2's byte alphabet");
    pairs.emplace_back(std::move(first), std::move(second));
  }
  auto p = std::make_unique<Pipeline>(std::make_unique<Bpe>(std::move(ids), pairs, Bpe::Options{}, "vocab.json"),
                                      std::move(names));
  p->gpt2_defaults();
  p->mark_special("<|endoftext|>");  // GPT-2's files split no added tokens, but this one is special
  return p;
}

}  // namespace attnscope::tokenizers
