// GPT-2's byte-level BPE, as OpenAI's encoder (and npm gpt-3-encoder) runs it:
//
// 1. split the text with
//      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//    (alternatives tried in order at each position, as the JS regex does);
// 2. take each piece's UTF-8 bytes;
// 3. merge adjacent symbols, lowest merge rank first, every occurrence left to
//    right, until no adjacent pair has a rank;
// 4. look each symbol up in vocab.json.
//
// vocab.json and merges.txt spell bytes with GPT-2's printable byte alphabet
// (e.g. 'Ġ' for a space); they are mapped back to raw bytes when loaded.
#include <cmath>
#include <unordered_map>

#include "attnscope/error.hpp"
#include "attnscope/tokenizer.hpp"
#include "io/json.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope {

namespace {

using unicode::is_js_space;
using unicode::is_letter;
using unicode::is_number;

// GPT-2's byte → printable code point table: printable Latin-1 bytes map to
// themselves, the others to 256, 257, ... in byte order.
std::vector<std::uint32_t> byte_alphabet() {
  std::vector<std::uint32_t> table(256);
  std::uint32_t next = 256;
  for (std::uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    table[b] = printable ? b : next++;
  }
  return table;
}

class ByteLevelBpe final : public Tokenizer {
 public:
  ByteLevelBpe(const Json& vocab, std::string_view merges) {
    const std::vector<std::uint32_t> alphabet = byte_alphabet();
    for (std::uint32_t b = 0; b < 256; ++b) from_alphabet_[alphabet[b]] = static_cast<char>(b);
    if (!vocab.is_object()) throw Error("vocab.json: expected an object mapping tokens to ids");
    if (vocab.object().size() > kMaxVocabulary)
      throw Error("vocab.json: " + std::to_string(vocab.object().size()) + " entries, above the limit of " +
                  std::to_string(kMaxVocabulary));
    for (const auto& [token, id] : vocab.object()) {
      if (!id.is_number() || id.number() < 0 || id.number() >= double(kMaxVocabulary) ||
          std::floor(id.number()) != id.number())
        throw Error("vocab.json: the id of " + quote(token) + " must be a whole number below " +
                    std::to_string(kMaxVocabulary));
      const auto i = static_cast<std::int32_t>(id.number());
      if (static_cast<std::size_t>(i) >= id_to_token_.size()) id_to_token_.resize(i + 1);
      id_to_token_[i] = token;
      ids_[bytes_of(token, "vocab.json")] = i;
    }
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
      if (ranks_.size() >= kMaxVocabulary) throw Error("merges.txt: more than 1,000,000 merges");
      const std::string key = bytes_of(std::string(line.substr(0, space)), "merges.txt") + '\0' +
                              bytes_of(std::string(line.substr(space + 1)), "merges.txt");
      ranks_.emplace(key, static_cast<int>(ranks_.size()));  // a repeated pair keeps its first rank
    }
  }

  std::string normalization() const override { return ""; }
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(id_to_token_.size()); }
  std::string token(std::int32_t id) const override { return id_to_token_.at(static_cast<std::size_t>(id)); }
  bool is_special(std::int32_t id) const override {
    return id >= 0 && static_cast<std::size_t>(id) < id_to_token_.size() && id_to_token_[id] == "<|endoftext|>";
  }

  Encoding encode(std::string_view utf8) const override {
    const std::vector<std::uint32_t> cps = unicode::decode_utf8(utf8);
    Encoding e;
    for (std::size_t at = 0; at < cps.size();) {
      const std::size_t end = piece_end(cps, at);
      for (const std::string& symbol : merge(unicode::encode_utf8(cps, at, end))) {
        const auto it = ids_.find(symbol);
        if (it == ids_.end()) throw Error("tokenize: a byte sequence has no entry in vocab.json");
        e.ids.push_back(it->second);
        e.tokens.push_back(id_to_token_[it->second]);
      }
      at = end;
    }
    return e;
  }

 private:
  // Raw bytes of a token spelled in the byte alphabet.
  std::string bytes_of(const std::string& token, const char* file) const {
    std::string out;
    for (std::uint32_t cp : unicode::decode_utf8(token)) {
      const auto it = from_alphabet_.find(cp);
      if (it == from_alphabet_.end())
        throw Error(std::string(file) + ": " + quote(token) + " has a character outside GPT-2's byte alphabet");
      out += it->second;
    }
    return out;
  }

  // End of the pre-tokenizer's match starting at `i` (the regex above, alternative by alternative).
  static std::size_t piece_end(const std::vector<std::uint32_t>& c, std::size_t i) {
    const std::size_t n = c.size();
    if (c[i] == '\'' && i + 1 < n) {
      const std::uint32_t a = c[i + 1], b = i + 2 < n ? c[i + 2] : 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
    const std::size_t j = c[i] == ' ' && i + 1 < n ? i + 1 : i;  // the optional leading space
    const auto run = [&](std::size_t k, auto pred) {
      while (k < n && pred(c[k])) ++k;
      return k;
    };
    const auto other = [](std::uint32_t x) { return !is_js_space(x) && !is_letter(x) && !is_number(x); };
    if (is_letter(c[j])) return run(j, is_letter);
    if (is_number(c[j])) return run(j, is_number);
    if (other(c[j])) return run(j, other);
    // Whitespace: \s+(?!\S) leaves the last space for the next word; else \s+.
    const std::size_t k = run(i, is_js_space);
    return k < n && k - 1 > i ? k - 1 : k;
  }

  // Merges the bytes of one piece; returns its symbols.
  std::vector<std::string> merge(const std::string& bytes) const {
    std::vector<std::string> word;
    for (char b : bytes) word.emplace_back(1, b);
    while (word.size() > 1) {
      int best = -1;
      std::size_t at = 0;
      for (std::size_t i = 0; i + 1 < word.size(); ++i) {
        const auto it = ranks_.find(word[i] + '\0' + word[i + 1]);
        if (it != ranks_.end() && (best < 0 || it->second < best)) best = it->second, at = i;
      }
      if (best < 0) break;
      const std::string first = word[at], second = word[at + 1];
      std::vector<std::string> merged;
      for (std::size_t i = 0; i < word.size();) {
        if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
          merged.push_back(first + second);
          i += 2;
        } else {
          merged.push_back(word[i++]);
        }
      }
      word = std::move(merged);
    }
    return word;
  }

  std::unordered_map<std::uint32_t, char> from_alphabet_;
  std::unordered_map<std::string, std::int32_t> ids_;  // raw bytes → id
  std::vector<std::string> id_to_token_;               // id → token as vocab.json spells it
  std::unordered_map<std::string, int> ranks_;         // "first\0second" → merge rank
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_level_bpe(const Json& vocab, std::string_view merges) {
  return std::make_unique<ByteLevelBpe>(vocab, merges);
}

std::unique_ptr<Tokenizer> make_wordpiece_from_vocab_txt(std::string_view text, const Json* tokenizer_config);
std::unique_ptr<Tokenizer> make_wordpiece_from_tokenizer_json(const Json& j);

std::unique_ptr<Tokenizer> make_tokenizer(const std::map<std::string, std::string>& files) {
  const auto tokenizer_json = files.find("tokenizer.json");
  if (tokenizer_json != files.end()) {
    const Json j = Json::parse(tokenizer_json->second, "tokenizer.json");
    const Json* model = j.is_object() ? j.find("model") : nullptr;
    const Json* type = model ? model->find("type") : nullptr;
    const std::string kind = type && type->is_string() ? type->string() : "";
    if (kind == "WordPiece") return make_wordpiece_from_tokenizer_json(j);
    if (kind == "BPE") {
      const Json* vocab = model->find("vocab");
      const Json* merges = model->find("merges");
      if (!vocab || !merges || !merges->is_array())
        throw Error("tokenizer.json: model.vocab or model.merges is missing");
      std::string lines;  // merges as "a b" strings or [a, b] pairs → merges.txt form
      for (const Json& m : merges->array()) {
        if (m.is_string())
          lines += m.string() + "\n";
        else if (m.is_array() && m.array().size() == 2 && m.array()[0].is_string() && m.array()[1].is_string())
          lines += m.array()[0].string() + " " + m.array()[1].string() + "\n";
        else
          throw Error("tokenizer.json: a merge is neither \"a b\" nor [a, b]");
      }
      return make_byte_level_bpe(*vocab, lines);
    }
    throw Error("tokenizer.json: model type " + quote(kind) + " is not supported (WordPiece, BPE)");
  }
  const auto vocab_txt = files.find("vocab.txt");
  if (vocab_txt != files.end()) {
    const auto config = files.find("tokenizer_config.json");
    if (config == files.end()) return make_wordpiece_from_vocab_txt(vocab_txt->second, nullptr);
    const Json c = Json::parse(config->second, "tokenizer_config.json");
    return make_wordpiece_from_vocab_txt(vocab_txt->second, &c);
  }
  const auto vocab = files.find("vocab.json");
  const auto merges = files.find("merges.txt");
  if (vocab != files.end() && merges != files.end())
    return make_byte_level_bpe(Json::parse(vocab->second, "vocab.json"), merges->second);
  if (vocab != files.end()) {
    const Json j = Json::parse(vocab->second, "vocab.json");
    if (j.is_array()) return make_sentencepiece_use(j, "vocab.json");
    throw Error("loadModel: vocab.json is a token → id map, which needs merges.txt beside it");
  }
  return nullptr;
}

}  // namespace attnscope
