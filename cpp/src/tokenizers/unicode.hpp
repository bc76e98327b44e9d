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

// cp maps to `length` code points starting at `offset` in the table's pool. 8 bytes, not 12: the tables are in every
// build's .wasm, and their pools hold fewer than 2^16 code points.
struct CodePointMapping {
  std::uint32_t cp;
  std::uint16_t offset, length;
};

#include "tokenizers/unicode_tables.inc"

static_assert(std::size(kLowercasePool) < 65536 && std::size(kNfdPool) < 65536, "a pool outgrew CodePointMapping");

template <std::size_t N>
bool in(const CodePointRange (&table)[N], std::uint32_t cp) {
  const auto it = std::upper_bound(std::begin(table), std::end(table), cp,
                                   [](std::uint32_t c, const CodePointRange& r) { return c < r.first; });
  return it != std::begin(table) && cp <= (it - 1)->last;
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
