// The packed Unicode tables (make_unicode_tables.mjs) read back for every code point: each class, the lowercase and
// the canonical decomposition hashed as the generator hashed what Node's engine says of them (kTablesDigest).
#include "tokenizers/unicode.hpp"

#include <gtest/gtest.h>

namespace attnscope::unicode {
namespace {

TEST(Unicode, EveryCodePointReadsBackAsTheEngineGaveIt) {
  const RangeTable* classes[] = {&kLetter,        &kNumber,      &kJsSpace,        &kWhiteSpace,
                                 &kDecimalNumber, &kPunctuation, &kNonspacingMark, &kControl,
                                 &kBertControl,   &kCased,       &kCaseIgnorable};
  std::uint64_t digest = 0xcbf29ce484222325ULL;
  const auto mix = [&](std::uint32_t x) {
    for (int k = 0; k < 4; ++k) {
      digest ^= (x >> (8 * k)) & 0xff;
      digest *= 0x100000001b3ULL;
    }
  };
  for (std::uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp < 0xE000) continue;
    std::uint32_t bits = 0;
    for (std::size_t i = 0; i < std::size(classes); ++i) bits |= in(*classes[i], cp) ? 1u << i : 0u;
    mix(bits);
    for (std::uint32_t x : to_lower({cp})) mix(x);
    mix(0xFFFFFFFF);
    for (std::uint32_t x : decompose({cp})) mix(x);
    mix(0xFFFFFFFF);
  }
  EXPECT_EQ(digest, kTablesDigest);
  // A few by hand: a run of stride 2 (Ā → ā), U+0130's two code points, an astral decomposition.
  EXPECT_EQ(to_lower({0x100, 0x102, 0x130}), (std::vector<std::uint32_t>{0x101, 0x103, 0x69, 0x307}));
  EXPECT_EQ(decompose({0xE9, 0x1D15E}), (std::vector<std::uint32_t>{0x65, 0x301, 0x1D157, 0x1D165}));
  EXPECT_TRUE(in(kLetter, 0x10000));
  EXPECT_FALSE(in(kLetter, 0x20));
}

}  // namespace
}  // namespace attnscope::unicode
