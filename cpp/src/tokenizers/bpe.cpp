#include "tokenizers/bpe.hpp"

#include <queue>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope::tokenizers {

const std::vector<std::uint32_t>& byte_alphabet() {
  static const std::vector<std::uint32_t> table = [] {
    std::vector<std::uint32_t> t(256);
    std::uint32_t next = 256;
    for (std::uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      t[b] = printable ? b : next++;
    }
    return t;
  }();
  return table;
}

bool from_byte_alphabet(std::string_view text, std::string& bytes) {
  static const std::unordered_map<std::uint32_t, char> back = [] {
    std::unordered_map<std::uint32_t, char> m;
    for (std::uint32_t b = 0; b < 256; ++b) m[byte_alphabet()[b]] = static_cast<char>(b);
    return m;
  }();
  for (std::uint32_t cp : unicode::decode_utf8(text)) {
    const auto it = back.find(cp);
    if (it == back.end()) return false;
    bytes += it->second;
  }
  return true;
}

std::string to_byte_alphabet(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) append_utf8(out, byte_alphabet()[b]);
  return out;
}

std::size_t gpt2_piece_end(const std::vector<std::uint32_t>& c, std::size_t i) {
  using unicode::is_js_space, unicode::is_letter, unicode::is_number;
  const std::size_t n = c.size();
  if (c[i] == '\'' && i + 1 < n) {
    const std::uint32_t a = c[i + 1], b = i + 2 < n ? c[i + 2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  }
  const std::size_t j = c[i] == ' ' && i + 1 < n ? i + 1 : i;  // the optional leading space
  const auto run = [&](std::size_t k, auto pred) {
    while (k < n && pred(c[k])) ++k;
    return k;
  };
  const auto other = [](std::uint32_t x) { return !is_js_space(x) && !is_letter(x) && !is_number(x); };
  if (is_letter(c[j])) return run(j, is_letter);
  if (is_number(c[j])) return run(j, is_number);
  if (other(c[j])) return run(j, other);
  // Whitespace: \s+(?!\S) leaves the last space for the next word; else \s+.
  const std::size_t k = run(i, is_js_space);
  return k < n && k - 1 > i ? k - 1 : k;
}

Bpe::Bpe(std::unordered_map<std::string, std::int32_t> vocab,
         const std::vector<std::pair<std::string, std::string>>& merges, Options options, const std::string& what)
    : vocab_(std::move(vocab)), o_(std::move(options)) {
  ranks_.reserve(merges.size());
  for (const auto& [a, b] : merges)
    ranks_.emplace(a + '\xff' + b, static_cast<std::int32_t>(ranks_.size()));  // a repeated pair keeps its first rank
  if (!o_.unk.empty() && !vocab_.count(o_.unk))
    throw Error(what + ": the unknown token " + quote(o_.unk) + " is not in the vocabulary");
}

void Bpe::add(const std::string& token, std::int32_t id) { vocab_[token] = id; }

std::int32_t Bpe::id(const std::string& token) const {
  auto it = vocab_.find(token);
  if (it != vocab_.end()) return it->second;
  it = o_.unk.empty() ? vocab_.end() : vocab_.find(o_.unk);
  return it != vocab_.end() ? it->second : -1;
}

std::vector<std::string> Bpe::merge(const std::string& piece) const {
  const std::vector<std::uint32_t> cps = unicode::decode_utf8(piece);
  struct Symbol {
    std::string text;
    std::int64_t prev, next;
    bool gone = false;
  };
  std::vector<Symbol> s;
  for (std::size_t i = 0; i < cps.size(); ++i)
    s.push_back(
        {unicode::encode_utf8(cps, i, i + 1), std::int64_t(i) - 1, i + 1 < cps.size() ? std::int64_t(i) + 1 : -1});
  if (!s.empty() && !o_.end_of_word_suffix.empty()) s.back().text += o_.end_of_word_suffix;
  // (rank, left symbol, the two texts' sizes when queued): the lowest rank first, then the leftmost.
  struct Candidate {
    std::int32_t rank;
    std::int64_t left;
    std::size_t left_size, right_size;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  const auto consider = [&](std::int64_t left) {
    if (left < 0 || s[left].next < 0) return;
    const auto it = ranks_.find(s[left].text + '\xff' + s[s[left].next].text);
    if (it != ranks_.end()) queue.push({it->second, left, s[left].text.size(), s[s[left].next].text.size()});
  };
  for (std::size_t i = 0; i + 1 < s.size(); ++i) consider(std::int64_t(i));
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& a = s[c.left];
    // Stale: a side was merged away or grew since this pair was queued.
    if (a.gone || a.next < 0 || a.text.size() != c.left_size || s[a.next].text.size() != c.right_size) continue;
    Symbol& b = s[a.next];
    a.text += b.text;
    b.gone = true;
    a.next = b.next;
    if (b.next >= 0) s[b.next].prev = c.left;
    consider(a.prev);
    consider(c.left);
  }
  std::vector<std::string> out;
  for (const Symbol& x : s)
    if (!x.gone) out.push_back(x.text);
  if (!o_.continuing_subword_suffix.empty())
    for (std::size_t i = 0; i + 1 < out.size(); ++i) out[i] += o_.continuing_subword_suffix;
  return out;
}

void Bpe::encode(const std::vector<std::string>& pieces, std::vector<std::string>& out) const {
  const std::size_t first = out.size();
  for (const std::string& piece : pieces) {
    if (piece.empty()) continue;
    if (o_.ignore_merges && vocab_.count(piece)) {
      out.push_back(piece);
      continue;
    }
    for (std::string& t : merge(piece)) {
      if (vocab_.count(t)) {
        out.push_back(std::move(t));
        continue;
      }
      bool bytes = o_.byte_fallback;
      std::vector<std::string> fallback;
      for (unsigned char b : t) {
        static const char* hex = "0123456789ABCDEF";
        fallback.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
        bytes = bytes && vocab_.count(fallback.back());
      }
      if (bytes)
        out.insert(out.end(), fallback.begin(), fallback.end());
      else if (!o_.unk.empty())
        out.push_back(o_.unk);
    }
  }
  if (!o_.fuse_unk || o_.unk.empty()) return;
  // Consecutive unknown tokens become one, across pre-tokens too.
  std::size_t keep = first;
  for (std::size_t i = first; i < out.size(); ++i) {
    const bool unknown = !vocab_.count(out[i]) || out[i] == o_.unk;
    const bool after_unknown = keep > first && (!vocab_.count(out[keep - 1]) || out[keep - 1] == o_.unk);
    if (unknown && after_unknown) continue;
    if (keep != i) out[keep] = std::move(out[i]);  // never onto itself: a self-moved string may be left empty
    ++keep;
  }
  out.resize(keep);
}

}  // namespace attnscope::tokenizers
