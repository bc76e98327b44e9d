#include "tokenizers/pieces.hpp"

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "tokenizers/bpe.hpp"
#include "tokenizers/regex.hpp"
#include "tokenizers/sentencepiece.hpp"
#include "tokenizers/steps.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope::tokenizers {

namespace {

bool flag(const Json& j, const char* key, bool fallback) {
  const Json* v = j.find(key);
  return v && v->type() == Json::Type::boolean ? v->boolean() : fallback;
}

// A regex matching `text` literally.
std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c & 0x80);
    if (!word) out += '\\';
    out += c;
  }
  return out;
}

// Standard base64 (tokenizer.json's Precompiled charsmap); padding optional.
std::string from_base64(const std::string& text, const char* what) {
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    else if (c == '=')
      break;
    else
      throw Error(std::string("tokenizer.json: ") + what + " is not base64");
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    if ((count += 6) >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xFF);
    }
  }
  return out;
}

// Every match of `regex` in s replaced by `with`.
std::string replace_matches(const Regex& regex, const std::string& s, const std::string& with) {
  const std::vector<std::uint32_t> cps = unicode::decode_utf8(s);
  std::string out;
  std::size_t at = 0;
  for (const auto& [begin, end] : regex.find_all(cps)) {
    out += unicode::encode_utf8(cps, at, begin) + with;
    at = end;
  }
  return out + unicode::encode_utf8(cps, at, cps.size());
}

}  // namespace

void trim_js_space(std::string& s, bool start, bool end) {
  const std::vector<std::uint32_t> cps = unicode::decode_utf8(s);
  std::size_t a = 0, b = cps.size();
  const auto space = [](std::uint32_t c) { return unicode::is_js_space(c) || c == 0x2028 || c == 0x2029; };
  while (start && a < b && space(cps[a])) ++a;
  while (end && b > a && space(cps[b - 1])) --b;
  s = unicode::encode_utf8(cps, a, b);
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += p;
  return out;
}

std::vector<Normalizer> read_normalizer(const Json* n, std::string& form) {
  std::vector<Normalizer> steps;
  if (!n || n->is_null()) return steps;
  const std::string type = type_of(*n);
  if (type == "Sequence") {
    const Json* list = n->find("normalizers");
    if (list && list->is_array())
      for (const Json& x : list->array())
        for (auto& s : read_normalizer(&x, form)) steps.push_back(std::move(s));
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    if (!form.empty() && form != type) throw Error("tokenizer.json: two Unicode normalization forms in one normalizer");
    form = type;
  } else if (type == "Prepend") {
    const std::string prefix = string_of(n->find("prepend"));
    steps.push_back([prefix](const std::string& s) { return prefix + s; });
  } else if (type == "Replace") {
    const Json* pattern = n->find("pattern");
    const Json* regex = pattern ? pattern->find("Regex") : nullptr;
    const std::string to = string_of(n->find("content"));
    if (regex && regex->is_string()) {
      auto compiled = std::make_shared<Regex>(regex->string());
      steps.push_back([compiled, to](const std::string& s) { return replace_matches(*compiled, s, to); });
    } else {
      const std::string from = literal(*n, "the Replace normalizer");
      steps.push_back([from, to](std::string s) {
        replace_all(s, from, to);
        return s;
      });
    }
  } else if (type == "Precompiled") {  // SentencePiece's charsmap; null (as some exports write it) maps nothing
    const Json* map = n->find("precompiled_charsmap");
    if (map && map->is_string() && !map->string().empty()) {
      auto charsmap = std::make_shared<CharsMap>(from_base64(map->string(), "the Precompiled charsmap"),
                                                 "tokenizer.json's Precompiled charsmap");
      steps.push_back([charsmap](const std::string& s) { return charsmap->normalize(s); });
    }
  } else if (type == "Strip") {
    const bool left = flag(*n, "strip_left", false), right = flag(*n, "strip_right", false);
    steps.push_back([left, right](std::string s) {
      trim_js_space(s, left, right);
      return s;
    });
  } else {
    unsupported("normalizer", type, "Sequence, NFC, NFD, NFKC, NFKD, Prepend, Replace, Precompiled, Strip");
  }
  return steps;
}

PreTokenizer::~PreTokenizer() = default;

std::unique_ptr<PreTokenizer> PreTokenizer::byte_level(bool add_prefix_space, bool use_regex) {
  std::unique_ptr<PreTokenizer> p(new PreTokenizer());
  p->kind_ = Kind::byte_level;
  p->prefix_space_ = add_prefix_space;
  p->use_regex_ = use_regex;
  return p;
}

std::unique_ptr<PreTokenizer> PreTokenizer::read(const Json* j) {
  if (!j || j->is_null()) return nullptr;
  const std::string type = type_of(*j);
  if (type == "ByteLevel") return byte_level(flag(*j, "add_prefix_space", false), flag(*j, "use_regex", true));
  std::unique_ptr<PreTokenizer> p(new PreTokenizer());
  if (type == "Sequence") {
    const Json* list = j->find("pretokenizers");
    if (list && list->is_array())
      for (const Json& x : list->array())
        if (auto step = read(&x)) p->steps_.push_back(std::move(step));
  } else if (type == "Split") {
    p->kind_ = Kind::split;
    const Json* pattern = j->find("pattern");
    const Json* regex = pattern ? pattern->find("Regex") : nullptr;
    p->regex_ = std::make_unique<Regex>(regex && regex->is_string() ? regex->string() : escaped(literal(*j, "Split")));
    p->invert_ = flag(*j, "invert", false);
    const std::string behavior = string_of(j->find("behavior"));
    p->removed_ = behavior == "Removed" || behavior == "removed";
  } else if (type == "Metaspace") {
    p->kind_ = Kind::metaspace;
    p->text_ = string_of(j->find("replacement"), "\u2581");
    p->prepend_ = string_of(j->find("prepend_scheme"), "always");  // the JS tokenizer ignores add_prefix_space
  } else if (type == "Digits") {
    p->kind_ = Kind::digits;
    p->individual_ = flag(*j, "individual_digits", false);
  } else if (type == "WhitespaceSplit") {
    p->kind_ = Kind::whitespace_split;
  } else if (type == "Replace") {
    p->kind_ = Kind::replace;
    p->text_ = literal(*j, "the Replace pre-tokenizer");
    p->with_ = string_of(j->find("content"));
  } else {
    unsupported("pre_tokenizer", type, "Sequence, Split, ByteLevel, Metaspace, Digits, Replace, WhitespaceSplit");
  }
  return p;
}

void PreTokenizer::apply(std::vector<std::string>& pieces, std::size_t section) const {
  if (kind_ == Kind::sequence) {
    for (const auto& step : steps_) step->apply(pieces, section);
    return;
  }
  std::vector<std::string> out;
  for (const std::string& piece : pieces)
    for (std::string& x : one(piece, section)) out.push_back(std::move(x));
  pieces = std::move(out);
}

std::vector<std::string> PreTokenizer::one(const std::string& piece, std::size_t section) const {
  std::vector<std::string> out;
  switch (kind_) {
    case Kind::split: {
      const std::vector<std::uint32_t> cps = unicode::decode_utf8(piece);
      std::size_t at = 0;
      for (const auto& [begin, end] : regex_->find_all(cps)) {
        if (!invert_ && begin > at) out.push_back(unicode::encode_utf8(cps, at, begin));  // the text between matches
        if ((invert_ || !removed_) && end > begin) out.push_back(unicode::encode_utf8(cps, begin, end));
        at = end;
      }
      if (!invert_ && at < cps.size()) out.push_back(unicode::encode_utf8(cps, at, cps.size()));
      return out;
    }
    case Kind::byte_level: {
      const std::string text = prefix_space_ && piece.rfind(' ', 0) != 0 ? " " + piece : piece;
      if (!use_regex_) return {to_byte_alphabet(text)};
      const std::vector<std::uint32_t> cps = unicode::decode_utf8(text);
      for (std::size_t at = 0; at < cps.size();) {
        const std::size_t end = gpt2_piece_end(cps, at);
        out.push_back(to_byte_alphabet(unicode::encode_utf8(cps, at, end)));
        at = end;
      }
      return out;
    }
    case Kind::metaspace: {
      std::string text = piece;
      replace_all(text, " ", text_);
      if (text.rfind(text_, 0) != 0 && (prepend_ == "always" || (prepend_ == "first" && section == 0)))
        text = text_ + text;
      return {text};
    }
    case Kind::digits: {  // [^0-9]+|[0-9]+ (or one digit at a time): JS \d is ASCII
      for (std::size_t at = 0; at < piece.size();) {
        const bool digit = piece[at] >= '0' && piece[at] <= '9';
        std::size_t end = at + 1;
        if (!(digit && individual_))
          while (end < piece.size() && (piece[end] >= '0' && piece[end] <= '9') == digit) ++end;
        out.push_back(piece.substr(at, end - at));
        at = end;
      }
      return out;
    }
    case Kind::whitespace_split: {  // the runs of non-space characters
      const std::vector<std::uint32_t> cps = unicode::decode_utf8(piece);
      for (std::size_t at = 0; at < cps.size();) {
        if (unicode::is_js_space(cps[at])) {
          ++at;
          continue;
        }
        std::size_t end = at;
        while (end < cps.size() && !unicode::is_js_space(cps[end])) ++end;
        out.push_back(unicode::encode_utf8(cps, at, end));
        at = end;
      }
      return out;
    }
    case Kind::replace: {
      std::string text = piece;
      replace_all(text, text_, with_);
      return {text};
    }
    case Kind::sequence:
      break;
  }
  return {piece};
}

}  // namespace attnscope::tokenizers
