// UTF-8 ⇄ code points ⇄ UTF-16 for the tokenizers. UTF-8 here may carry lone
// surrogates (WTF-8), as JS strings can; other invalid bytes become U+FFFD.
#include "attnscope/tokenizer.hpp"
#include "io/json.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope {

namespace unicode {

std::vector<std::uint32_t> decode_utf8(std::string_view s) {
  std::vector<std::uint32_t> out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    std::uint32_t cp;
    std::size_t len;
    if (b < 0x80)
      cp = b, len = 1;
    else if ((b & 0xE0) == 0xC0)
      cp = b & 0x1F, len = 2;
    else if ((b & 0xF0) == 0xE0)
      cp = b & 0x0F, len = 3;
    else if ((b & 0xF8) == 0xF0)
      cp = b & 0x07, len = 4;
    else
      cp = 0xFFFD, len = 0;  // a stray continuation or invalid lead byte
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const unsigned char c = static_cast<unsigned char>(s[i + k]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    // Overlong forms and values past U+10FFFF are invalid.
    static constexpr std::uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (!ok || cp < kMin[len] || cp > 0x10FFFF) {
      out.push_back(0xFFFD);
      i += 1;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string encode_utf8(const std::vector<std::uint32_t>& cps, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) append_utf8(out, cps[i]);
  return out;
}

namespace {

// The UTF-8 sequence at s[i]: its length when valid, else 0 with `end` past its maximal subpart
// (WHATWG: the bytes that could still have begun a valid sequence).
std::size_t sequence_at(std::string_view s, std::size_t i, std::size_t& end) {
  const unsigned char b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return end = i + 1, 1;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF)
    need = 1;
  else if (b >= 0xE0 && b <= 0xEF)
    need = 2, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
  else if (b >= 0xF0 && b <= 0xF4)
    need = 3, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
  std::size_t j = i + 1;
  for (std::size_t k = 0; need && k < need && j < s.size(); ++k, ++j) {
    const unsigned char c = static_cast<unsigned char>(s[j]);
    if (c < (k == 0 ? lo : 0x80) || c > (k == 0 ? hi : 0xBF)) break;
  }
  end = std::max(j, i + 1);
  return need && j == i + 1 + need ? need + 1 : 0;
}

}  // namespace

std::string whatwg_utf8(std::string_view s) {
  std::string out;
  for (std::size_t i = 0, end = 0; i < s.size(); i = end)
    if (const std::size_t n = sequence_at(s, i, end))
      out.append(s.substr(i, n));
    else
      out += "\xEF\xBF\xBD";  // U+FFFD for the maximal subpart s[i, end)
  return out;
}

std::string readable(std::string_view s) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (std::size_t i = 0, end = 0; i < s.size(); i = end) {
    const std::size_t n = sequence_at(s, i, end);
    const unsigned char b = static_cast<unsigned char>(s[i]);
    if (n == 1 && b == ' ')
      out += "\u2423";  // ␣
    else if (n == 1 && b == '\n')
      out += "\u23CE";  // ⏎
    else if (n == 1 && b == '\t')
      out += "\u21E5";  // ⇥
    else if ((n > 1 && s.compare(i, n, "\xEF\xBB\xBF") != 0) || (n == 1 && b >= 0x20 && b != 0x7F))
      out.append(s.substr(i, n));
    else
      for (std::size_t k = i; k < end; ++k) {
        const unsigned char c = static_cast<unsigned char>(s[k]);
        out += std::string("<0x") + kHex[c >> 4] + kHex[c & 15] + ">";
      }
  }
  return out;
}

}  // namespace unicode

std::u16string utf8_to_utf16(std::string_view s) {
  std::u16string out;
  out.reserve(s.size());
  for (std::uint32_t cp : unicode::decode_utf8(s)) {
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out += static_cast<char16_t>(0xD800 + (cp >> 10));
      out += static_cast<char16_t>(0xDC00 + (cp & 0x3FF));
    } else {
      out += static_cast<char16_t>(cp);
    }
  }
  return out;
}

std::string utf16_to_utf8(std::u16string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    std::uint32_t cp = s[i];
    if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < s.size() && s[i + 1] >= 0xDC00 && s[i + 1] < 0xE000)
      cp = 0x10000 + ((cp - 0xD800) << 10) + (s[++i] - 0xDC00);
    append_utf8(out, cp);
  }
  return out;
}

}  // namespace attnscope
