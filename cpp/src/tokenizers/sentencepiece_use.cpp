// Universal Sentence Encoder's SentencePiece tokenizer, matching the original
// TF.js implementation id for id, including its choices:
// - symbols are UTF-16 code units (the original indexes a JS string);
// - the lattice is scanned by end position, then start position, then match
//   length; a later arc wins ties, and any arc replaces a best score of exactly 0;
// - a position no piece starts at becomes one unknown unit (id 0, score 0);
// - the backward pass steps back by the UTF-16 length of the chosen piece;
// - consecutive unknowns merge into one id 0;
// - a null score (the shipped vocabulary has some, e.g. ":") counts as 0, as
//   `null + number` does in JS, so those pieces are strongly preferred.
#include <algorithm>
#include <unordered_map>

#include "attnscope/error.hpp"
#include "attnscope/tokenizer.hpp"
#include "io/json.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope {

namespace {

constexpr char16_t kSeparator = u'\u2581';  // '▁', SentencePiece's word boundary
constexpr int kReserved = 6;                // unk, control and user-defined symbols

class SentencePieceUse final : public Tokenizer {
 public:
  SentencePieceUse(const Json& vocab, const std::string& what) {
    if (!vocab.is_array()) throw Error(what + ": expected an array of [piece, score] pairs");
    if (vocab.array().size() > kMaxVocabulary)
      throw Error(what + ": " + std::to_string(vocab.array().size()) + " entries, above the limit of " +
                  std::to_string(kMaxVocabulary));
    if (vocab.array().empty()) throw Error(what + ": the vocabulary is empty");
    nodes_.emplace_back();
    for (std::size_t i = 0; i < vocab.array().size(); ++i) {
      const Json& e = vocab.array()[i];
      if (!e.is_array() || e.array().size() < 2 || !e.array()[0].is_string() ||
          !(e.array()[1].is_number() || e.array()[1].is_null()))
        throw Error(what + ": entry " + std::to_string(i) + " is not a [piece, score] pair");
      pieces_.push_back(utf8_to_utf16(e.array()[0].string()));
      const double score = e.array()[1].is_null() ? 0.0 : e.array()[1].number();
      if (static_cast<int>(i) >= kReserved) insert(pieces_.back(), score, static_cast<int>(i));
    }
  }

  std::string normalization() const override { return "NFKC"; }
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(pieces_.size()); }
  std::string token(std::int32_t id) const override { return utf16_to_utf8(pieces_.at(static_cast<std::size_t>(id))); }
  std::string label(std::int32_t id) const override {
    std::u16string piece = pieces_.at(static_cast<std::size_t>(id));
    std::replace(piece.begin(), piece.end(), kSeparator, u' ');
    return unicode::readable(utf16_to_utf8(piece));
  }

  // The pieces joined, '▁' back to spaces, without the leading one.
  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special) const override {
    std::u16string text;
    for (std::int32_t id : ids)
      if (!(skip_special && id < kReserved)) text += pieces_.at(static_cast<std::size_t>(id));
    for (char16_t& c : text)
      if (c == kSeparator) c = u' ';
    if (!text.empty() && text[0] == u' ') text.erase(0, 1);
    return utf16_to_utf8(text);
  }

  Encoding encode(std::string_view utf8) const override {
    std::u16string text = utf8_to_utf16(utf8);
    if (!text.empty()) {
      for (auto& c : text)
        if (c == u' ') c = kSeparator;
      text.insert(text.begin(), kSeparator);
    }
    const std::size_t n = text.size();
    // arcs[end] lists (start, piece) in the order the original visits them.
    struct Arc {
      std::size_t start, length;
      double score;
      int index;
    };
    std::vector<std::vector<Arc>> arcs(n + 1);
    for (std::size_t i = 0; i < n; ++i) {
      bool any = false;
      int node = 0;
      for (std::size_t j = i; j < n; ++j) {
        node = child(node, text[j]);
        if (node < 0) break;
        if (nodes_[node].end) {
          arcs[j + 1].push_back({i, j + 1 - i, nodes_[node].score, nodes_[node].index});
          any = true;
        }
      }
      if (!any) arcs[i + 1].push_back({i, 1, 0.0, 0});
    }
    // Arcs ending at `end` were appended in increasing start order, as the original iterates them.
    std::vector<double> best(n + 1, 0.0);
    std::vector<int> words(n + 1, 0);
    for (std::size_t end = 0; end <= n; ++end)
      for (const Arc& a : arcs[end]) {
        const double score = a.score + best[a.start];
        if (best[end] == 0.0 || score >= best[end]) {
          best[end] = score;
          words[end] = a.index;
        }
      }
    // Backward pass, then merge runs of unknowns; spans are kept for the token strings.
    struct Piece {
      int id;
      std::size_t begin, end;
    };
    std::vector<Piece> reversed;
    for (std::ptrdiff_t at = static_cast<std::ptrdiff_t>(n); at > 0;) {
      const int id = words[at];
      const std::ptrdiff_t step = static_cast<std::ptrdiff_t>(pieces_[id].size());
      const std::ptrdiff_t begin = std::max<std::ptrdiff_t>(0, at - std::max<std::ptrdiff_t>(step, 1));
      if (!reversed.empty() && id == 0 && reversed.back().id == 0) {
        reversed.back().begin = static_cast<std::size_t>(begin);
      } else {
        reversed.push_back({id, static_cast<std::size_t>(begin), static_cast<std::size_t>(at)});
      }
      at -= std::max<std::ptrdiff_t>(step, 1);  // an empty piece would loop forever in the original
    }
    Encoding e;
    for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) {
      e.ids.push_back(it->id);
      e.tokens.push_back(it->id == 0 ? utf16_to_utf8(std::u16string_view(text).substr(it->begin, it->end - it->begin))
                                     : utf16_to_utf8(pieces_[it->id]));
    }
    return e;
  }

 private:
  struct Node {
    bool end = false;
    double score = 0;
    int index = 0;
  };

  int child(int node, char16_t c) const {
    const auto it = children_.find((static_cast<std::uint64_t>(node) << 16) | c);
    return it == children_.end() ? -1 : it->second;
  }

  void insert(const std::u16string& piece, double score, int index) {
    if (piece.empty()) return;
    int node = 0;
    for (char16_t c : piece) {
      const std::uint64_t key = (static_cast<std::uint64_t>(node) << 16) | c;
      auto it = children_.find(key);
      if (it == children_.end()) {
        nodes_.emplace_back();
        it = children_.emplace(key, static_cast<int>(nodes_.size() - 1)).first;
      }
      node = it->second;
    }
    nodes_[node] = {true, score, index};  // a repeated piece: the last one wins, as in the original
  }

  std::vector<std::u16string> pieces_;
  std::vector<Node> nodes_;
  std::unordered_map<std::uint64_t, int> children_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_use(const Json& vocab, const std::string& what) {
  return std::make_unique<SentencePieceUse>(vocab, what);
}

}  // namespace attnscope
