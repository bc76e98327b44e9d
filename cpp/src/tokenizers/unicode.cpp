// Lowercasing and canonical decomposition from the tables generated off Node.
#include "tokenizers/unicode.hpp"

namespace attnscope::unicode {

namespace {

template <std::size_t N, std::size_t P>
bool map_one(const CodePointMapping (&table)[N], const std::uint32_t (&pool)[P], std::uint32_t cp,
             std::vector<std::uint32_t>& out) {
  const auto it = std::lower_bound(std::begin(table), std::end(table), cp,
                                   [](const CodePointMapping& m, std::uint32_t c) { return m.cp < c; });
  if (it == std::end(table) || it->cp != cp) return false;
  out.insert(out.end(), pool + it->offset, pool + it->offset + it->length);
  return true;
}

// Is cps[i] 'Σ' at the end of a word: a cased letter before it (skipping
// case-ignorables), none after it (likewise)?
bool final_sigma(const std::vector<std::uint32_t>& cps, std::size_t i) {
  std::size_t j = i;
  bool before = false;
  while (j > 0) {
    const std::uint32_t c = cps[--j];
    if (in(kCaseIgnorable, c)) continue;
    before = in(kCased, c);
    break;
  }
  if (!before) return false;
  for (std::size_t k = i + 1; k < cps.size(); ++k) {
    if (in(kCaseIgnorable, cps[k])) continue;
    return !in(kCased, cps[k]);
  }
  return true;
}

}  // namespace

std::vector<std::uint32_t> to_lower(const std::vector<std::uint32_t>& cps) {
  std::vector<std::uint32_t> out;
  out.reserve(cps.size());
  for (std::size_t i = 0; i < cps.size(); ++i) {
    if (cps[i] == 0x03A3 && final_sigma(cps, i)) {
      out.push_back(0x03C2);
      continue;
    }
    if (!map_one(kLowercase, kLowercasePool, cps[i], out)) out.push_back(cps[i]);
  }
  return out;
}

std::vector<std::uint32_t> decompose(const std::vector<std::uint32_t>& cps) {
  std::vector<std::uint32_t> out;
  out.reserve(cps.size());
  for (std::uint32_t cp : cps) {
    if (cp >= 0xAC00 && cp <= 0xD7A3) {  // Hangul syllable → leading, vowel, trailing jamo
      const std::uint32_t s = cp - 0xAC00;
      out.push_back(0x1100 + s / 588);
      out.push_back(0x1161 + (s % 588) / 28);
      if (s % 28) out.push_back(0x11A7 + s % 28);
    } else if (!map_one(kNfd, kNfdPool, cp, out)) {
      out.push_back(cp);
    }
  }
  return out;
}

}  // namespace attnscope::unicode
