// The parsed form of a tokenizer.json Split regex (regex.hpp), shared by its parser
// (regex_parse.cpp) and its matcher (regex.cpp). Internal to the tokenizers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizers/regex.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope::tokenizers {

using unicode::CodePointRange;

// A class of code points: ranges and Unicode properties, possibly negated.
struct CharSet {
  bool negated = false;
  std::vector<CodePointRange> ranges;
  std::vector<std::pair<bool (*)(std::uint32_t), bool>> properties;  // (test, negated)

  bool matches(std::uint32_t cp) const {
    bool in = false;
    for (const auto& r : ranges) in = in || (cp >= r.first && cp <= r.last);
    for (const auto& [test, out] : properties) in = in || test(cp) != out;
    return in != negated;
  }
  void add(std::uint32_t first, std::uint32_t last, bool fold) {
    ranges.push_back({first, last});
    if (!fold) return;
    for (std::uint32_t c = first; c <= last && c < 128; ++c) {  // (?i:…): ASCII letters in both cases
      if (c >= 'a' && c <= 'z') ranges.push_back({c - 32, c - 32});
      if (c >= 'A' && c <= 'Z') ranges.push_back({c + 32, c + 32});
    }
  }
};

struct Regex::Node {
  enum class Kind { alternation, sequence, set, lookahead };
  Kind kind = Kind::sequence;
  bool negative = false;  // a negative lookahead
  int min = 1, max = 1;   // how often this item repeats (greedy)
  CharSet set;
  std::vector<std::unique_ptr<Node>> children;  // alternatives (alternation, lookahead) or items (sequence)
};

// The pattern parsed, or an Error naming what it holds that AttnScope does not implement.
std::unique_ptr<Regex::Node> parse_regex(const std::string& pattern);

}  // namespace attnscope::tokenizers
