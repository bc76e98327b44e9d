// The regular expressions of tokenizer.json's Split pre-tokenizers, matched as Hugging Face's
// JS tokenizers match them: the Oniguruma pattern rewritten for JS (\s is Unicode White_Space,
// (?i:…) folds ASCII letters only), then a backtracking match over code points with the
// 'gu' flags. The subset: literals and escapes, classes with \p{…} properties, groups ((?:…),
// (?i:…)), alternation, lookahead ((?=…), (?!…)), and the quantifiers ?, *, +, {m}, {m,},
// {m,n}. Anything else is an Error naming the pattern, never a silently different split.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attnscope::tokenizers {

class Regex {
 public:
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(Regex&&) noexcept;

  // The matches in cps from left to right, as [begin, end) code point ranges, as
  // String.prototype.matchAll finds them (an empty match steps one code point on).
  std::vector<std::pair<std::size_t, std::size_t>> find_all(const std::vector<std::uint32_t>& cps) const;

  struct Node;

 private:
  std::unique_ptr<Node> root_;
};

}  // namespace attnscope::tokenizers
