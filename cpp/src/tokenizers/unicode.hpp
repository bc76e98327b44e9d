// Unicode classes for the tokenizers, from ranges generated off the JS regex
// engine (make_unicode_tables.mjs), so C++ and the JS references agree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::unicode {

struct CodePointRange {
  std::uint32_t first, last;
};

// The tables are in every build's .wasm, so they are packed (make_unicode_tables.mjs):
// A class is its ranges below U+10000 in 16 bits, and those above.
struct BmpRange {
  std::uint16_t first, last;
};
struct RangeTable {
  const BmpRange* bmp;
  std::size_t bmp_count;
  const CodePointRange* astral;
  std::size_t astral_count;
};
// Code points first, first + stride, … (count of them) that lowercase to the code point `delta` away.
struct CaseRun {
  std::uint32_t first;
  std::int32_t delta;
  std::uint16_t count;
  std::uint8_t stride;
};
// cp maps to `length` code points starting at `offset` in the table's pool.
struct CodePointMapping {
  std::uint32_t cp;
  std::uint16_t offset, length;
};
// cp decomposes to the UTF-16 in the pool from `offset` to the next entry's offset.
struct BmpMapping {
  std::uint16_t cp, offset;
};
struct AstralMapping {
  std::uint32_t cp;
  std::uint16_t offset;
};

#include "tokenizers/unicode_tables.inc"

template <typename Range>
bool in_ranges(const Range* begin, std::size_t count, std::uint32_t cp) {
  const Range* it =
      std::upper_bound(begin, begin + count, cp, [](std::uint32_t c, const Range& r) { return c < r.first; });
  return it != begin && cp <= (it - 1)->last;
}

inline bool in(const RangeTable& table, std::uint32_t cp) {
  return cp < 0x10000 ? in_ranges(table.bmp, table.bmp_count, cp) : in_ranges(table.astral, table.astral_count, cp);
}

inline bool is_letter(std::uint32_t cp) { return in(kLetter, cp); }
inline bool is_number(std::uint32_t cp) { return in(kNumber, cp); }
inline bool is_js_space(std::uint32_t cp) { return in(kJsSpace, cp); }
inline bool is_punctuation(std::uint32_t cp) { return in(kPunctuation, cp); }
inline bool is_nonspacing_mark(std::uint32_t cp) { return in(kNonspacingMark, cp); }

// JS String.prototype.toLowerCase, code point by code point, with its one
// context rule (Final_Sigma: 'Σ' ending a word becomes 'ς').
std::vector<std::uint32_t> to_lower(const std::vector<std::uint32_t>& cps);
// Canonical decomposition (NFD) code point by code point; the canonical
// reordering of combining marks is not applied (BERT removes them anyway).
std::vector<std::uint32_t> decompose(const std::vector<std::uint32_t>& cps);

// UTF-8 (WTF-8 surrogates allowed) to code points; invalid bytes become U+FFFD.
std::vector<std::uint32_t> decode_utf8(std::string_view s);
std::string encode_utf8(const std::vector<std::uint32_t>& cps, std::size_t begin, std::size_t end);
// Bytes as TextDecoder decodes them: each maximal invalid subpart becomes one U+FFFD (WHATWG).
std::string whatwg_utf8(std::string_view bytes);

// Bytes as a person reads a token: valid UTF-8 as text with whitespace shown (␣ ⏎ ⇥), control
// bytes, U+FEFF (invisible, and dropped by TextDecoder) and bytes that do not form a character
// as <0xNN> (one per byte).
std::string readable(std::string_view bytes);

}  // namespace attnscope::unicode
