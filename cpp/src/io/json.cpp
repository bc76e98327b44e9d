#include "io/json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "attnscope/error.hpp"

namespace attnscope {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::size_t utf8_sequence_length(std::string_view s, std::size_t at) {
  const unsigned char b = static_cast<unsigned char>(s[at]);
  const std::size_t len = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xC2 && b <= 0xDF ? 2 : 0;
  if (!len || at + len > s.size()) return 0;
  std::uint32_t cp = b & (0x7F >> len);
  for (std::size_t k = 1; k < len; ++k) {
    const unsigned char c = static_cast<unsigned char>(s[at + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : object_)
    if (k == key) return &v;
  return nullptr;
}

class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  Json document() {
    Json v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;
  // More values than any model file needs (GPT-2's vocab.json has 50,257); a file
  // with 10^7 entries is refused while parsing, before it costs gigabytes.
  static constexpr std::size_t kMaxValues = 4'000'000;

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(what_ + ": invalid JSON at byte " + std::to_string(pos_) + ": " + why);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Json value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (++values_ > kMaxValues) fail("more than 4,000,000 values");
    skip_space();
    Json v;
    const char c = peek();
    if (c == '{') {
      v.type_ = Json::Type::object;
      ++pos_;
      skip_space();
      if (peek() == '}') return ++pos_, v;
      std::unordered_set<std::string> keys;  // vocab.json objects hold 50,000+ keys
      for (;;) {
        skip_space();
        if (peek() != '"') fail("expected a string key");
        std::string key = string();
        if (!keys.insert(key).second) fail("duplicate key " + quote(key));
        skip_space();
        expect(':');
        v.object_.emplace_back(std::move(key), value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type_ = Json::Type::array;
      ++pos_;
      skip_space();
      if (peek() == ']') return ++pos_, v;
      for (;;) {
        v.array_.push_back(value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type_ = Json::Type::string;
      v.string_ = string();
      return v;
    }
    if (literal("true") || literal("false")) {
      v.type_ = Json::Type::boolean;
      v.bool_ = s_[pos_ - 1] == 'e' && s_[pos_ - 2] == 'u';
      return v;
    }
    if (literal("null")) return v;
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.type_ = Json::Type::number;
      v.number_ = number();
      return v;
    }
    fail(pos_ >= s_.size() ? "unexpected end" : "unexpected character");
  }

  double number() {
    const std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit");
    while (peek() >= '0' && peek() <= '9') ++pos_;
    if (peek() == '.') {
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected an exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    const std::string digits(s_.substr(start, pos_ - start));
    return std::strtod(digits.c_str(), nullptr);  // the C locale: '.' is the decimal point
  }

  std::uint32_t hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= h - '0';
      else if (h >= 'a' && h <= 'f')
        v |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F')
        v |= h - 'A' + 10;
      else
        fail("bad hex digit in \\u escape");
    }
    return v;
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (static_cast<unsigned char>(c) >= 0x80) {  // raw UTF-8 must be valid
        const std::size_t len = utf8_sequence_length(s_, pos_ - 1);
        if (!len) --pos_, fail("invalid UTF-8 in a string");
        out.append(s_.substr(pos_ - 1, len));
        pos_ += len - 1;
        continue;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      switch (s_[pos_++]) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          std::uint32_t cp = hex4();
          // A surrogate pair is one code point; a lone surrogate is kept (WTF-8), as JS would.
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
            const std::size_t save = pos_;
            pos_ += 2;
            const std::uint32_t lo = hex4();
            if (lo >= 0xDC00 && lo < 0xE000)
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            else
              pos_ = save;
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail("unknown escape");
      }
    }
  }

  std::string_view s_;
  const std::string& what_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
};

Json Json::parse(std::string_view text, const std::string& what) { return JsonParser(text, what).document(); }

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(ch)));
      out += b;
    } else {
      out += ch;
    }
  }
  out += '"';
}

}  // namespace attnscope
