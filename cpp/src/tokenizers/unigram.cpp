#include "tokenizers/unigram.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "attnscope/error.hpp"

namespace attnscope::tokenizers {

namespace {

// The length of the UTF-8 character starting with byte `c` (1 for a byte that starts none, as sentencepiece steps).
std::size_t char_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xF0 && c < 0xF8) return 4;
  if (c >= 0xE0) return c < 0xF0 ? 3 : 1;
  if (c >= 0xC0) return 2;
  return 1;
}

constexpr float kUnknownPenalty = 10.0f;

}  // namespace

Unigram::Unigram(std::vector<Piece> pieces, std::int32_t unk_id, bool byte_fallback, const std::string& what)
    : pieces_(std::move(pieces)), unk_id_(unk_id), byte_fallback_(byte_fallback) {
  if (pieces_.empty()) throw Error(what + ": the unigram model has no pieces");
  if (unk_id_ < 0 || static_cast<std::size_t>(unk_id_) >= pieces_.size())
    throw Error(what + ": the unknown piece's id " + std::to_string(unk_id_) + " is not below the " +
                std::to_string(pieces_.size()) + " pieces");
  min_score_ = std::numeric_limits<float>::max();
  max_score_ = std::numeric_limits<float>::lowest();
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& p = pieces_[i];
    const auto id = static_cast<std::int32_t>(i);
    ids_.emplace(p.text, id);  // a repeated text keeps its first id, as both implementations look pieces up
    if (p.kind == Kind::normal) {
      min_score_ = std::min(min_score_, p.score);
      max_score_ = std::max(max_score_, p.score);
    }
    if ((p.kind == Kind::normal || p.kind == Kind::user_defined) && !p.text.empty()) {
      matched_.emplace(p.text, id);
      longest_ = std::max(longest_, p.text.size());
    }
  }
  if (min_score_ > max_score_) min_score_ = max_score_ = 0;
}

std::int32_t Unigram::id(const std::string& text) const {
  const auto it = ids_.find(text);
  return it == ids_.end() ? unk_id_ : it->second;
}

void Unigram::add(const std::string& text, std::int32_t id) {
  if (id < 0) return;
  const auto i = static_cast<std::size_t>(id);
  if (i >= pieces_.size()) pieces_.resize(i + 1, {"", 0.0f, Kind::unused});
  if (pieces_[i].text != text) pieces_[i] = {text, 0.0f, Kind::control};
  ids_[text] = id;
}

void Unigram::encode(const std::vector<std::string>& pieces, std::vector<std::string>& out) const {
  for (const std::string& piece : pieces)
    for (Match& m : encode(piece)) out.push_back(std::move(m.text));
}

std::vector<Unigram::Match> Unigram::encode(std::string_view text) const {
  struct Best {
    double score = 0;
    std::int64_t start = -1;
    std::int32_t id = -1;
  };
  const std::size_t n = text.size();
  std::vector<Best> best(n + 1);
  best[0].start = 0;
  const double unk_score = static_cast<double>(min_score_) - kUnknownPenalty;
  std::string key;
  for (std::size_t start = 0; start < n;) {
    const std::size_t one = std::min(char_length(static_cast<unsigned char>(text[start])), n - start);
    const double here = best[start].score;
    bool single = false;
    for (std::size_t length = 1; length <= std::min(longest_, n - start); ++length) {
      key.assign(text.data() + start, length);
      const auto it = matched_.find(key);
      if (it == matched_.end()) continue;
      const Piece& p = pieces_[static_cast<std::size_t>(it->second)];
      // A user-defined piece always wins over the pieces inside it.
      const double score = p.kind == Kind::user_defined ? static_cast<double>(length) * max_score_ - 0.1 : p.score;
      Best& to = best[start + length];
      if (to.start < 0 || here + score > to.score) to = {here + score, static_cast<std::int64_t>(start), it->second};
      if (length == one) single = true;
    }
    if (!single) {
      Best& to = best[start + one];
      if (to.start < 0 || here + unk_score > to.score)
        to = {here + unk_score, static_cast<std::int64_t>(start), unk_id_};
    }
    start += one;
  }
  std::vector<Match> path;
  for (std::size_t end = n; end > 0;) {
    const Best& b = best[end];
    const auto start = static_cast<std::size_t>(b.start);
    path.push_back({b.id, std::string(text.substr(start, end - start))});
    end = start;
  }
  std::reverse(path.begin(), path.end());
  std::vector<Match> out;
  for (Match& m : path) {
    const bool unknown = m.id == unk_id_;
    if (unknown && byte_fallback_) {
      char name[8];
      for (unsigned char c : m.text) {
        std::snprintf(name, sizeof name, "<0x%02X>", c);
        out.push_back({id(name), name});
      }
      continue;
    }
    if (unknown && !out.empty() && out.back().id == unk_id_ && !byte_fallback_)
      out.back().text += m.text;
    else
      out.push_back(std::move(m));
  }
  return out;
}

}  // namespace attnscope::tokenizers
