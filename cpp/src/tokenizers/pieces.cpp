#include "tokenizers/pieces.hpp"

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "tokenizers/bpe.hpp"
#include "tokenizers/regex.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope::tokenizers {

namespace {

std::string string_of(const Json* j, const std::string& fallback = "") {
  return j && j->is_string() ? j->string() : fallback;
}

bool flag(const Json& j, const char* key, bool fallback) {
  const Json* v = j.find(key);
  return v && v->type() == Json::Type::boolean ? v->boolean() : fallback;
}

std::string type_of(const Json& j) { return string_of(j.find("type")); }

[[noreturn]] void unsupported(const char* what, const std::string& type, const char* supported) {
  throw Error("tokenizer.json: " + std::string(what) + " type " + quote(type) + " is not supported (" + supported +
              ")");
}

// A pattern's literal text: { "String": "…" }; a { "Regex": … } only where `regex` is given.
std::string literal(const Json& j, const char* what) {
  const Json* pattern = j.find("pattern");
  const Json* text = pattern ? pattern->find("String") : nullptr;
  if (!text || !text->is_string())
    throw Error("tokenizer.json: " + std::string(what) + " needs a String pattern (a Regex one is not supported here)");
  return text->string();
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size())
    out.append(s, at, hit - at).append(to);
  s = out.append(s, at, std::string::npos);
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
    const std::string from = literal(*n, "the Replace normalizer"), to = string_of(n->find("content"));
    steps.push_back([from, to](std::string s) {
      replace_all(s, from, to);
      return s;
    });
  } else {
    unsupported("normalizer", type, "Sequence, NFC, NFD, NFKC, NFKD, Prepend, Replace");
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
  } else if (type == "Replace") {
    p->kind_ = Kind::replace;
    p->text_ = literal(*j, "the Replace pre-tokenizer");
    p->with_ = string_of(j->find("content"));
  } else {
    unsupported("pre_tokenizer", type, "Sequence, Split, ByteLevel, Metaspace, Digits, Replace");
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

Decoder::~Decoder() = default;

std::unique_ptr<Decoder> Decoder::byte_level() {
  std::unique_ptr<Decoder> d(new Decoder());
  d->kind_ = Kind::byte_level;
  return d;
}

std::unique_ptr<Decoder> Decoder::read(const Json* j) {
  if (!j || j->is_null()) return nullptr;
  const std::string type = type_of(*j);
  std::unique_ptr<Decoder> d(new Decoder());
  if (type == "ByteLevel") {
    d->kind_ = Kind::byte_level;
  } else if (type == "Sequence") {
    const Json* list = j->find("decoders");
    if (list && list->is_array())
      for (const Json& x : list->array())
        if (auto step = read(&x)) d->steps_.push_back(std::move(step));
  } else if (type == "Replace") {
    d->kind_ = Kind::replace;
    d->text_ = literal(*j, "the Replace decoder");
    d->with_ = string_of(j->find("content"));
  } else if (type == "ByteFallback") {
    d->kind_ = Kind::byte_fallback;
  } else if (type == "Fuse") {
    d->kind_ = Kind::fuse;
  } else if (type == "Strip") {
    d->kind_ = Kind::strip;
    d->text_ = string_of(j->find("content"), " ");
    const Json* start = j->find("start");
    const Json* stop = j->find("stop");
    d->start_ = start && start->is_number() ? static_cast<int>(start->number()) : 0;
    d->stop_ = stop && stop->is_number() ? static_cast<int>(stop->number()) : 0;
  } else if (type == "Metaspace") {
    d->kind_ = Kind::metaspace;
    d->text_ = string_of(j->find("replacement"), "\u2581");
  } else {
    unsupported("decoder", type, "Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace");
  }
  return d;
}

std::vector<std::string> Decoder::decode(std::vector<std::string> tokens,
                                         const std::unordered_set<std::string>& added) const {
  switch (kind_) {
    case Kind::sequence:
      for (const auto& step : steps_) tokens = step->decode(std::move(tokens), added);
      return tokens;
    case Kind::byte_level: {  // runs of tokens back to bytes, then UTF-8 (invalid bytes: U+FFFD)
      std::vector<std::string> out;
      std::string bytes;
      const auto flush = [&] {
        if (bytes.empty()) return;
        out.push_back(unicode::whatwg_utf8(bytes));
        bytes.clear();
      };
      for (const std::string& t : tokens) {
        std::string raw;
        if (added.count(t) || !from_byte_alphabet(t, raw)) {
          flush();
          out.push_back(t);
        } else {
          bytes += raw;
        }
      }
      flush();
      return out;
    }
    case Kind::replace:
      for (std::string& t : tokens) replace_all(t, text_, with_);
      return tokens;
    case Kind::byte_fallback: {  // runs of <0xNN> tokens become the text their bytes spell
      std::vector<std::string> out;
      std::string bytes;
      const auto flush = [&] {
        if (bytes.empty()) return;
        out.push_back(unicode::whatwg_utf8(bytes));
        bytes.clear();
      };
      for (const std::string& t : tokens) {
        const bool byte = t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>' &&
                          std::isxdigit(static_cast<unsigned char>(t[3])) &&
                          std::isxdigit(static_cast<unsigned char>(t[4]));
        if (byte) {
          bytes += static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16));
        } else {
          flush();
          out.push_back(t);
        }
      }
      flush();
      return out;
    }
    case Kind::fuse:
      return {join(tokens)};
    case Kind::strip:
      for (std::string& t : tokens) {
        std::size_t a = 0, b = t.size();
        for (int i = 0; i < start_ && t.compare(a, text_.size(), text_) == 0 && a < b; ++i) a += text_.size();
        for (int i = 0; i < stop_ && b >= a + text_.size() && t.compare(b - text_.size(), text_.size(), text_) == 0;
             ++i)
          b -= text_.size();
        t = t.substr(a, b - a);
      }
      return tokens;
    case Kind::metaspace:
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        replace_all(tokens[i], text_, " ");
        if (i == 0 && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
      }
      return tokens;
  }
  return tokens;
}

}  // namespace attnscope::tokenizers
