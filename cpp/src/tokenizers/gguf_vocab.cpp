#include "tokenizers/gguf_vocab.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "io/text.hpp"

namespace attnscope::tokenizers {

namespace {

// llama.cpp's token types (llama_token_type).
enum TokenType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// How the "gpt2" kind splits text before its merges, by tokenizer.ggml.pre: the pre-tokenizers of the models'
// own tokenizer.json files.
struct Pre {
  const char* name;
  const char* pre_tokenizer;  // tokenizer.json's
  const char* normalizer;
  bool ignore_merges;
};
const char* const kByteLevel = R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true})";
const Pre kPres[] = {
    {"llama-bpe",
     R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]})",
     "null", true},
    {"qwen2",
     R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]})",
     R"({"type":"NFC"})", false},
    {"smollm",
     R"({"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}]})",
     "null", false},
    {"gpt-2", kByteLevel, "null", false},
};

const GgufValue& required(const Gguf& g, const char* key, GgufValue::Type type, bool array) {
  const GgufValue* v = g.find(key);
  if (!v) fail({g.what(), ": metadata ", quote(key), " is missing"});
  if ((array && (v->type != GgufValue::Type::array || v->element != type)) || (!array && v->type != type))
    fail({g.what(), ": metadata ", quote(key), " is not ", (array ? "an array of that kind" : "of its type")});
  return *v;
}

// An id key's value, or -1 when absent; an id past the vocabulary is an error.
std::int64_t id_of(const Gguf& g, const char* key, std::size_t vocab) {
  const GgufValue* v = g.find(key);
  if (!v) return -1;
  if (v->type == GgufValue::Type::string || v->type == GgufValue::Type::array || v->number < 0 ||
      v->number >= double(vocab))
    fail({g.what(), ": metadata ", quote(key), " is not a token id of the vocabulary (", Num(double(vocab)),
          " tokens)"});
  return static_cast<std::int64_t>(v->number);
}

bool flag(const Gguf& g, const char* key, bool fallback) {
  const GgufValue* v = g.find(key);
  return v && v->type == GgufValue::Type::boolean ? v->number != 0 : fallback;
}

// The end of the UTF-8 character that starts at `at` (a byte that starts none counts as one).
std::size_t next_char(const std::string& s, std::size_t at) {
  const unsigned char c = static_cast<unsigned char>(s[at]);
  const std::size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
  return std::min(s.size(), at + n);
}

// SentencePiece BPE's merges from its pieces' scores, as transformers' SentencePieceExtractor makes them: for each
// piece in id order, every split into two pieces of the vocabulary (by their ids), then all by the merged piece's
// score, highest first, keeping that order among equal scores.
std::vector<std::pair<std::int32_t, std::int32_t>> merges_from_scores(
    const std::vector<std::string>& tokens, const std::vector<double>& scores,
    const std::unordered_map<std::string, std::int32_t>& ids) {
  struct Merge {
    double score;
    std::int32_t left, right;
  };
  std::vector<Merge> merges;
  std::vector<Merge> local;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& piece = tokens[i];
    if (ids.at(piece) != static_cast<std::int32_t>(i)) continue;  // a repeated piece: its first id stands
    local.clear();
    for (std::size_t at = piece.empty() ? 0 : next_char(piece, 0); at < piece.size(); at = next_char(piece, at)) {
      const auto l = ids.find(piece.substr(0, at));
      if (l == ids.end()) continue;
      const auto r = ids.find(piece.substr(at));
      if (r != ids.end()) local.push_back({scores[i], l->second, r->second});
    }
    std::sort(local.begin(), local.end(),
              [](const Merge& a, const Merge& b) { return a.left != b.left ? a.left < b.left : a.right < b.right; });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) { return a.score > b.score; });
  std::vector<std::pair<std::int32_t, std::int32_t>> out;
  out.reserve(merges.size());
  for (const Merge& m : merges) out.emplace_back(m.left, m.right);
  return out;
}

}  // namespace

ModelFiles tokenizer_files(const Gguf& g) {
  const GgufValue* kind = g.find("tokenizer.ggml.model");
  const std::string model = kind && kind->type == GgufValue::Type::string ? kind->text : "";
  if (model != "gpt2" && model != "llama") return {};
  const bool spm = model == "llama";
  const Pre* pre = nullptr;
  if (!spm) {
    const GgufValue* p = g.find("tokenizer.ggml.pre");
    const std::string name = p && p->type == GgufValue::Type::string ? p->text : "gpt-2";
    for (const Pre& x : kPres)
      if (name == x.name || (name == "llama3" && std::string(x.name) == "llama-bpe")) pre = &x;
    if (!pre)
      fail({g.what(), ": tokenizer.ggml.pre ", quote(name),
            " is not supported (llama-bpe, qwen2, smollm, gpt-2): its text would split otherwise than the "
            "model was trained on"});
  }
  const std::vector<std::string>& tokens = required(g, "tokenizer.ggml.tokens", GgufValue::Type::string, true).strings;
  const std::size_t n = tokens.size();
  if (n == 0) fail({g.what(), ": metadata \"tokenizer.ggml.tokens\" is empty"});
  std::vector<double> types(n, kNormal);
  if (const GgufValue* t = g.find("tokenizer.ggml.token_type")) {
    if (t->type != GgufValue::Type::array || t->numbers.size() != n)
      fail({g.what(), ": metadata \"tokenizer.ggml.token_type\" must give each of the ", Num(double(n)),
            " tokens its type"});
    types = t->numbers;
  }
  std::unordered_map<std::string, std::int32_t> ids;
  ids.reserve(n);
  for (std::size_t i = 0; i < n; ++i) ids.emplace(tokens[i], static_cast<std::int32_t>(i));

  const std::int64_t bos = id_of(g, "tokenizer.ggml.bos_token_id", n);
  const std::int64_t eos = id_of(g, "tokenizer.ggml.eos_token_id", n);
  std::int64_t unk = id_of(g, "tokenizer.ggml.unknown_token_id", n);
  if (unk < 0)
    for (std::size_t i = 0; i < n && unk < 0; ++i)
      if (types[i] == kUnknown) unk = static_cast<std::int64_t>(i);
  const bool add_bos = flag(g, "tokenizer.ggml.add_bos_token", spm) && bos >= 0;
  const bool add_eos = flag(g, "tokenizer.ggml.add_eos_token", false) && eos >= 0;

  // The tokens' text as JSON strings, each appended where it goes.
  std::string json = R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[)";
  const auto token = [&](std::int64_t id) { append_json_string(json, tokens[static_cast<std::size_t>(id)]); };
  const char* comma = "";
  for (std::size_t i = 0; i < n; ++i) {
    const int type = static_cast<int>(types[i]);
    if ((type != kControl && type != kUnknown && type != kUserDefined) || ids.at(tokens[i]) != std::int32_t(i))
      continue;
    append(json, {comma, R"({"id":)", Num(double(i)), R"(,"content":)"});
    token(std::int64_t(i));
    append(json, {R"(,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":)",
                  type == kUserDefined ? "false}" : "true}"});
    comma = ",";
  }
  const bool prefix = flag(g, "tokenizer.ggml.add_space_prefix", true);
  if (spm)
    append(json, {R"(],"normalizer":{"type":"Sequence","normalizers":[)",
                  prefix ? R"({"type":"Prepend","prepend":"▁"},)" : "",
                  R"({"type":"Replace","pattern":{"String":" "},"content":"▁"}]},"pre_tokenizer":null)"});
  else
    append(json, {R"(],"normalizer":)", pre->normalizer, R"(,"pre_tokenizer":)", pre->pre_tokenizer});

  // BOS and EOS around the text, as add_bos_token and add_eos_token say.
  json += R"(,"post_processor":{"type":"TemplateProcessing","single":[)";
  const auto special = [&](std::int64_t id) {
    json += R"({"SpecialToken":{"id":)";
    token(id);
    json += R"(,"type_id":0}})";
  };
  if (add_bos) special(bos), json += ",";
  json += R"({"Sequence":{"id":"A","type_id":0}})";
  if (add_eos) json += ",", special(eos);
  json += R"(],"special_tokens":{)";
  comma = "";
  for (const std::int64_t id : {add_bos ? bos : -1, add_eos && eos != bos ? eos : -1}) {
    if (id < 0) continue;
    json += comma;
    token(id);
    json += R"(:{"id":)";
    token(id);
    append(json, {R"(,"ids":[)", Num(double(id)), R"(],"tokens":[)"});
    token(id);
    json += "]}";
    comma = ",";
  }
  json += "}}";
  if (spm)
    append(json,
           {R"(,"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},)",
            R"({"type":"ByteFallback"},{"type":"Fuse"})",
            prefix ? R"(,{"type":"Strip","content":" ","start":1,"stop":0}]})" : "]}"});
  else
    json += R"(,"decoder":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true})";

  json += R"(,"model":{"type":"BPE","dropout":null,"unk_token":)";
  if (unk >= 0)
    token(unk);
  else
    json += "null";
  const bool bytes = spm && std::count(types.begin(), types.end(), double(kByte)) > 0;
  append(json, {R"(,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":)", spm ? "true" : "false",
                R"(,"byte_fallback":)", bytes ? "true" : "false", R"(,"ignore_merges":)",
                pre && pre->ignore_merges ? "true" : "false", R"(,"vocab":{)"});
  comma = "";
  for (std::size_t i = 0; i < n; ++i) {
    if (ids.at(tokens[i]) != std::int32_t(i)) continue;
    json += comma;
    token(std::int64_t(i));
    append(json, {":", Num(double(i))});
    comma = ",";
  }
  json += R"(},"merges":[)";
  comma = "";
  if (spm) {
    const GgufValue& scores = required(g, "tokenizer.ggml.scores", GgufValue::Type::f32, true);
    if (scores.numbers.size() != n)
      fail({g.what(), ": metadata \"tokenizer.ggml.scores\" must give each of the ", Num(double(n)),
            " pieces its score"});
    for (const auto& [l, r] : merges_from_scores(tokens, scores.numbers, ids)) {
      append(json, {comma, "["});
      token(l);
      json += ",";
      token(r);
      json += "]";
      comma = ",";
    }
  } else {
    for (const std::string& m : required(g, "tokenizer.ggml.merges", GgufValue::Type::string, true).strings) {
      json += comma;
      append_json_string(json, m);
      comma = ",";
    }
  }
  json += "]}}";
  // No tokenizer class: the template above stands as written.
  return {{"tokenizer.json", std::move(json)}, {"tokenizer_config.json", "{}"}};
}

}  // namespace attnscope::tokenizers
