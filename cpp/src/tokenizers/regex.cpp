#include "tokenizers/regex.hpp"

#include <algorithm>

#include "attnscope/error.hpp"
#include "tokenizers/regex_syntax.hpp"

namespace attnscope::tokenizers {

namespace {

using Node = Regex::Node;

// Backtracking over continuations: what is left to match after the current item.
struct Cont {
  const Node* seq;
  std::size_t index;
  const Cont* next;
  const Node* loop = nullptr;  // set: one iteration of this quantified group just ended
  int count = 0;               // iterations of `loop` done
  std::size_t start = 0;       // where that iteration began
};

// A pattern from a hostile file can backtrack for ever, or nest deeper than the stack: both
// are bounded, and an Error says so.
constexpr std::size_t kMaxDepth = 10'000;

class Matcher {
 public:
  explicit Matcher(const std::vector<std::uint32_t>& cps)
      : s_(cps), budget_(std::max<std::size_t>(1'000'000, 200 * cps.size())) {}

  bool match(const Cont* k, std::size_t pos, std::size_t& end) const {
    if (++steps_ > budget_ || depth_ > kMaxDepth)
      throw Error("tokenizer.json: the pre-tokenizer's regex backtracks too much on this text to finish");
    ++depth_;
    struct Leave {
      std::size_t& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    // Past finished sequences; a group's iteration that ends here (a loop continuation, which has no sequence)
    // decides whether the group goes round again.
    while (k && !k->loop && k->index == k->seq->children.size()) k = k->next;
    if (k && k->loop) return iterate(*k->loop, k->count, pos, k->next, end, k->start == pos);
    if (!k) {
      end = pos;
      return true;
    }
    const Node& item = *k->seq->children[k->index];
    const Cont rest{k->seq, k->index + 1, k->next};
    switch (item.kind) {
      case Node::Kind::set: {
        std::size_t r = 0;
        while (int(r) < item.max && pos + r < s_.size() && item.set.matches(s_[pos + r])) ++r;
        for (std::size_t c = r + 1; c-- > std::size_t(item.min);)
          if (match(&rest, pos + c, end)) return true;
        return false;
      }
      case Node::Kind::lookahead: {
        std::size_t ignored;
        bool found = false;
        for (const auto& alt : item.children) {
          const Cont inner{alt.get(), 0, nullptr};
          if ((found = match(&inner, pos, ignored))) break;
        }
        return found != item.negative && match(&rest, pos, end);
      }
      case Node::Kind::alternation:
        return iterate(item, 0, pos, &rest, end, false);
      case Node::Kind::sequence:
        break;
    }
    return false;
  }

 private:
  // After `count` iterations of group g at pos: another one (greedy), else what follows.
  bool iterate(const Node& g, int count, std::size_t pos, const Cont* rest, std::size_t& end, bool empty) const {
    if (count < g.max && !(empty && count > g.min)) {
      const Cont again{nullptr, 0, rest, &g, count + 1, pos};
      for (const auto& alt : g.children) {
        const Cont inner{alt.get(), 0, &again};
        if (match(&inner, pos, end)) return true;
      }
    }
    return count >= g.min && match(rest, pos, end);
  }

  const std::vector<std::uint32_t>& s_;
  const std::size_t budget_;
  mutable std::size_t steps_ = 0, depth_ = 0;
};

}  // namespace

Regex::Regex(const std::string& pattern) : root_(parse_regex(pattern)) {}
Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(const std::vector<std::uint32_t>& cps) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const Matcher m(cps);
  for (std::size_t pos = 0; pos <= cps.size();) {
    std::size_t end = pos;
    bool found = false;
    for (const auto& alt : root_->children) {
      const Cont k{alt.get(), 0, nullptr};
      if ((found = m.match(&k, pos, end))) break;
    }
    if (found) out.emplace_back(pos, end);
    pos = found && end > pos ? end : pos + 1;
  }
  return out;
}

}  // namespace attnscope::tokenizers
