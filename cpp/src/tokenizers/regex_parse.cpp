// The parser of tokenizer.json's Split regexes: the pattern as Hugging Face's JS tokenizers
// read it (regex.hpp), into the nodes the matcher walks (regex_syntax.hpp).
#include <algorithm>

#include "attnscope/error.hpp"
#include "tokenizers/regex_syntax.hpp"

namespace attnscope::tokenizers {

namespace {

using Node = Regex::Node;
constexpr int kUnbounded = 1 << 30;

bool white_space(std::uint32_t cp) { return unicode::in(unicode::kWhiteSpace, cp); }
bool decimal(std::uint32_t cp) { return unicode::in(unicode::kDecimalNumber, cp); }

class Parser {
 public:
  explicit Parser(const std::string& pattern) : p_(unicode::decode_utf8(pattern)), text_(pattern) {}

  std::unique_ptr<Node> parse() {
    auto root = alternation(false);
    if (at_ < p_.size()) fail("an unmatched ')'");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("tokenizer.json: the pre-tokenizer's regex " + quote(text_) + " has " + what + " at character " +
                std::to_string(at_) + ", which AttnScope's regex engine does not read");
  }
  bool more() const { return at_ < p_.size(); }
  bool next_is(const char* s) const {
    for (std::size_t k = 0; s[k]; ++k)
      if (at_ + k >= p_.size() || p_[at_ + k] != static_cast<unsigned char>(s[k])) return false;
    return true;
  }

  std::unique_ptr<Node> alternation(bool fold) {
    if (++nesting_ > 64) fail("groups nested more than 64 deep");
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::alternation;
    node->children.push_back(sequence(fold));
    while (more() && p_[at_] == '|') {
      ++at_;
      node->children.push_back(sequence(fold));
    }
    --nesting_;
    return node;
  }

  std::unique_ptr<Node> sequence(bool fold) {
    auto node = std::make_unique<Node>();
    while (more() && p_[at_] != '|' && p_[at_] != ')') {
      auto item = atom(fold);
      quantifier(*item);
      node->children.push_back(std::move(item));
    }
    return node;
  }

  void quantifier(Node& item) {
    if (!more()) return;
    const std::uint32_t c = p_[at_];
    if (c == '?' || c == '*' || c == '+') {
      item.min = c == '+' ? 1 : 0;
      item.max = c == '?' ? 1 : kUnbounded;
      ++at_;
    } else if (c == '{') {
      const std::size_t start = at_++;
      const int m = number();
      int n = m;
      if (more() && p_[at_] == ',') {
        ++at_;
        n = more() && p_[at_] == '}' ? kUnbounded : number();
      }
      if (!more() || p_[at_] != '}' || n < m) {
        at_ = start;
        fail("a malformed {m,n}");
      }
      ++at_;
      item.min = m, item.max = n;
    } else {
      return;
    }
    if (item.kind == Node::Kind::lookahead) fail("a quantified lookahead");
    if (more() && p_[at_] == '?') fail("a lazy quantifier");
    if (more() && p_[at_] == '+') ++at_;  // possessive: JS tokenizers read it as greedy
  }

  int number() {
    int v = 0, digits = 0;
    while (more() && p_[at_] >= '0' && p_[at_] <= '9' && digits < 7) v = v * 10 + int(p_[at_++] - '0'), ++digits;
    if (!digits) fail("a repeat count that is not a number");
    return v;
  }

  std::unique_ptr<Node> atom(bool fold) {
    const std::uint32_t c = p_[at_];
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::set;
    if (c == '(') {
      if (next_is("(?=") || next_is("(?!")) {
        node->kind = Node::Kind::lookahead;
        node->negative = p_[at_ + 2] == '!';
        at_ += 3;
        node->children = std::move(alternation(fold)->children);
      } else {
        bool inner = fold;
        if (next_is("(?i:"))
          inner = true, at_ += 4;
        else if (next_is("(?:"))
          at_ += 3;
        else if (next_is("(?"))
          fail("a group kind other than (?:, (?i:, (?= and (?!");
        else
          ++at_;
        node = alternation(inner);
      }
      if (!more() || p_[at_] != ')') fail("an unclosed group");
      ++at_;
      return node;
    }
    if (c == '[') return klass(fold);
    if (c == '.') {
      node->set.negated = true;
      node->set.add('\n', '\n', false);
      ++at_;
      return node;
    }
    if (c == '^' || c == '$') fail("an anchor");
    if (c == ')' || c == '*' || c == '+' || c == '?' || c == '{') fail("a misplaced " + std::string(1, char(c)));
    if (c == '\\') {
      escape(node->set, fold, false);
      return node;
    }
    node->set.add(c, c, fold);
    ++at_;
    return node;
  }

  // \p{…}, \s, \d, \r, \xNN, \uNNNN, \. … into `set`.
  void escape(CharSet& set, bool fold, bool in_class) {
    ++at_;
    if (!more()) fail("a trailing backslash");
    const std::uint32_t e = p_[at_++];
    switch (e) {
      case 'p':
      case 'P':
        set.properties.emplace_back(property(), e == 'P');
        return;
      case 's':
      case 'S':
        set.properties.emplace_back(&white_space, e == 'S');
        return;
      case 'd':
      case 'D':
        set.properties.emplace_back(&decimal, e == 'D');
        return;
      case 'r':
        return set.add('\r', '\r', false);
      case 'n':
        return set.add('\n', '\n', false);
      case 't':
        return set.add('\t', '\t', false);
      case 'f':
        return set.add('\f', '\f', false);
      case 'v':
        return set.add('\v', '\v', false);
      case 'x':
      case 'u': {
        const std::uint32_t cp = hex(e == 'x' ? 2 : 4);
        return set.add(cp, cp, fold);
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
          fail(std::string("the escape \\") + char(e));
        (void)in_class;
        return set.add(e, e, fold);
    }
  }

  std::uint32_t hex(int digits) {
    std::uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (!more()) fail("a short hex escape");
      const std::uint32_t h = p_[at_++];
      const int d = h >= '0' && h <= '9'   ? int(h - '0')
                    : h >= 'a' && h <= 'f' ? int(h - 'a' + 10)
                    : h >= 'A' && h <= 'F' ? int(h - 'A' + 10)
                                           : -1;
      if (d < 0) fail("a bad hex escape");
      v = v * 16 + std::uint32_t(d);
    }
    return v;
  }

  bool (*property())(std::uint32_t) {
    if (!more() || p_[at_] != '{') fail("a \\p without {…}");
    std::string name;
    while (++at_ < p_.size() && p_[at_] != '}') name += static_cast<char>(p_[at_]);
    if (!more()) fail("an unclosed \\p{");
    ++at_;
    if (name == "L" || name == "Letter") return &unicode::is_letter;
    if (name == "N" || name == "Number") return &unicode::is_number;
    if (name == "P" || name == "Punctuation") return &unicode::is_punctuation;
    if (name == "Nd") return &decimal;
    if (name == "Mn") return &unicode::is_nonspacing_mark;
    if (name == "White_Space") return &white_space;
    fail("the Unicode property " + name);
  }

  std::unique_ptr<Node> klass(bool fold) {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::set;
    ++at_;
    if (more() && p_[at_] == '^') node->set.negated = true, ++at_;
    bool first = true;
    while (more() && (p_[at_] != ']' || first)) {
      first = false;
      if (p_[at_] == '\\') {
        const std::size_t before = node->set.ranges.size(), props = node->set.properties.size();
        escape(node->set, fold, true);
        // A range from an escaped single character: \x00-\x1f
        if (node->set.properties.size() == props && node->set.ranges.size() > before && more() && p_[at_] == '-' &&
            at_ + 1 < p_.size() && p_[at_ + 1] != ']') {
          const std::uint32_t from = node->set.ranges[before].first;
          node->set.ranges.resize(before);
          ++at_;
          range_to(*node, from, fold);
        }
        continue;
      }
      if (p_[at_] == '[') fail("a nested class");
      const std::uint32_t from = p_[at_++];
      if (more() && p_[at_] == '-' && at_ + 1 < p_.size() && p_[at_ + 1] != ']') {
        ++at_;
        range_to(*node, from, fold);
      } else {
        node->set.add(from, from, fold);
      }
    }
    if (!more()) fail("an unclosed class");
    ++at_;
    return node;
  }

  void range_to(Node& node, std::uint32_t from, bool fold) {
    std::uint32_t to = p_[at_];
    if (to == '\\') {
      CharSet one;
      escape(one, false, true);
      if (one.ranges.size() != 1) fail("a class range ending in a property");
      to = one.ranges[0].first;
    } else {
      ++at_;
    }
    if (to < from) fail("a class range out of order");
    node.set.add(from, to, fold);
  }

  std::vector<std::uint32_t> p_;
  std::string text_;
  std::size_t at_ = 0;
  int nesting_ = 0;
};

}  // namespace

std::unique_ptr<Regex::Node> parse_regex(const std::string& pattern) { return Parser(pattern).parse(); }

}  // namespace attnscope::tokenizers
