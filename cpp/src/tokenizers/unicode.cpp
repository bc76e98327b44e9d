// Lowercasing and canonical decomposition from the tables generated off Node.
#include "tokenizers/unicode.hpp"

namespace attnscope::unicode {

namespace {

// Appends cp's lowercase; false when it is its own.
bool lower_one(std::uint32_t cp, std::vector<std::uint32_t>& out) {
  const CaseRun* run = std::upper_bound(std::begin(kLowercaseRuns), std::end(kLowercaseRuns), cp,
                                        [](std::uint32_t c, const CaseRun& r) { return c < r.first; });
  if (run != std::begin(kLowercaseRuns)) {
    const CaseRun& r = *(run - 1);
    const std::uint32_t step = cp - r.first;
    if (step % r.stride == 0 && step / r.stride < r.count) {
      out.push_back(static_cast<std::uint32_t>(static_cast<std::int64_t>(cp) + r.delta));
      return true;
    }
  }
  for (const CodePointMapping& m : kLowercase)
    if (m.cp == cp) {
      out.insert(out.end(), kLowercasePool + m.offset, kLowercasePool + m.offset + m.length);
      return true;
    }
  return false;
}

// Appends cp's canonical decomposition (but a Hangul syllable's); false when it is its own.
bool decompose_one(std::uint32_t cp, std::vector<std::uint32_t>& out) {
  std::size_t begin = 0, end = 0;
  if (cp < 0x10000) {
    const BmpMapping* it = std::lower_bound(std::begin(kNfdBmp), std::end(kNfdBmp), cp,
                                            [](const BmpMapping& m, std::uint32_t c) { return m.cp < c; });
    if (it == std::end(kNfdBmp) || it->cp != cp) return false;
    begin = it->offset;
    end = it + 1 != std::end(kNfdBmp) ? (it + 1)->offset : kNfdAstral[0].offset;
  } else {
    const AstralMapping* it = std::lower_bound(std::begin(kNfdAstral), std::end(kNfdAstral), cp,
                                               [](const AstralMapping& m, std::uint32_t c) { return m.cp < c; });
    if (it == std::end(kNfdAstral) || it->cp != cp) return false;
    begin = it->offset;
    end = it + 1 != std::end(kNfdAstral) ? (it + 1)->offset : std::size(kNfdPool);
  }
  for (std::size_t i = begin; i < end; ++i) {  // UTF-16, surrogate pairs joined
    const std::uint32_t u = kNfdPool[i];
    if (u >= 0xD800 && u < 0xDC00 && i + 1 < end) {
      out.push_back(0x10000 + ((u - 0xD800) << 10) + (kNfdPool[++i] - 0xDC00));
    } else {
      out.push_back(u);
    }
  }
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
    if (!lower_one(cps[i], out)) out.push_back(cps[i]);
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
    } else if (!decompose_one(cp, out)) {
      out.push_back(cp);
    }
  }
  return out;
}

}  // namespace attnscope::unicode
