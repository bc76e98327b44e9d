#include "tokenizers/sentencepiece.hpp"

#include <cstring>

#include "attnscope/error.hpp"
#include "attnscope/tokenizer.hpp"

namespace attnscope::tokenizers {

namespace {

// A darts-clone unit: label in bits 0–7 (bit 31 set on leaves), has-leaf bit 8, offset from bit 10 (× 256 when bit
// 9 is set); a leaf unit's value is its low 31 bits.
bool has_leaf(std::uint32_t u) { return (u >> 8) & 1u; }
std::uint32_t value(std::uint32_t u) { return u & ((1u << 31) - 1); }
std::uint32_t label(std::uint32_t u) { return u & ((1u << 31) | 0xFFu); }
std::uint32_t offset(std::uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

// The length of a valid UTF-8 character at the start of s (no surrogates, no overlongs), or 0.
std::size_t valid_char(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) >= 0xA0)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if ((c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) >= 0x90)) return 0;
    return 4;
  }
  return 0;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
constexpr std::string_view kSpace = "\xE2\x96\x81";  // '▁'

// Protocol buffers' wire format, each read checked against the end of the message.
class Wire {
 public:
  Wire(std::string_view bytes, const std::string& what) : s_(bytes), what_(what) {}
  bool done() const { return at_ >= s_.size(); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) fail("a number runs past the end");
      const auto c = static_cast<unsigned char>(s_[at_++]);
      v |= static_cast<std::uint64_t>(c & 0x7F) << shift;
      if (!(c & 0x80)) return v;
    }
    fail("a number is longer than 10 bytes");
  }
  std::string_view bytes() {
    const std::uint64_t n = varint();
    if (n > s_.size() - at_) fail("a field of " + std::to_string(n) + " bytes runs past the end");
    const std::string_view out = s_.substr(at_, static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return out;
  }
  float fixed32() {
    if (s_.size() - at_ < 4) fail("a float runs past the end");
    std::uint32_t u = 0;
    for (int i = 0; i < 4; ++i) u |= static_cast<std::uint32_t>(static_cast<unsigned char>(s_[at_ + i])) << (8 * i);
    at_ += 4;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  void skip(int wire) {
    if (wire == 0) {
      varint();
    } else if (wire == 1 || wire == 5) {
      const std::size_t n = wire == 1 ? 8 : 4;
      if (s_.size() - at_ < n) fail("a field runs past the end");
      at_ += n;
    } else if (wire == 2) {
      bytes();
    } else {
      fail("wire type " + std::to_string(wire) + " is not one a SentencePiece model uses");
    }
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(what_ + ": not a SentencePiece model (" + why + " at byte " + std::to_string(at_) + ")");
  }

 private:
  std::string_view s_;
  std::size_t at_ = 0;
  const std::string& what_;
};

// Reads a message's fields: `field(number, wire, reader)` reads the ones it knows and returns false for the others.
template <typename Field>
void each_field(Wire& w, Field field) {
  while (!w.done()) {
    const std::uint64_t key = w.varint();
    const auto number = static_cast<std::uint32_t>(key >> 3);
    const int wire = static_cast<int>(key & 7);
    if (number == 0) w.fail("field number 0");
    if (!field(number, wire)) w.skip(wire);
  }
}

// The pieces of a unigram model; the other model types tokenize by other rules.
std::vector<Unigram::Piece> unigram_pieces(const SpmModel& m, const std::string& what) {
  if (m.type == SpmModel::Type::unigram) return m.pieces;
  const char* kind = m.type == SpmModel::Type::bpe ? "a BPE" : m.type == SpmModel::Type::word ? "a word" : "a char";
  throw Error(what + ": " + kind + " SentencePiece model; AttnScope reads unigram ones");
}

}  // namespace

CharsMap::CharsMap(std::string blob, const std::string& what) : blob_(std::move(blob)) {
  if (blob_.empty()) return;
  if (blob_.size() < 4) throw Error(what + ": the precompiled charsmap is " + std::to_string(blob_.size()) + " bytes");
  std::uint32_t size = 0;
  for (int i = 0; i < 4; ++i) size |= static_cast<std::uint32_t>(static_cast<unsigned char>(blob_[i])) << (8 * i);
  if (size % 4 != 0 || size == 0 || size > blob_.size() - 4)
    throw Error(what + ": the precompiled charsmap's trie of " + std::to_string(size) + " bytes does not fit its " +
                std::to_string(blob_.size()) + " bytes");
  units_.resize(size / 4);
  for (std::size_t i = 0; i < units_.size(); ++i)
    for (int k = 0; k < 4; ++k)
      units_[i] |= static_cast<std::uint32_t>(static_cast<unsigned char>(blob_[4 + 4 * i + k])) << (8 * k);
  strings_ = std::string_view(blob_).substr(4 + size);
}

std::optional<std::pair<std::string_view, std::size_t>> CharsMap::match(std::string_view text) const {
  if (units_.empty()) return std::nullopt;
  std::size_t node = offset(units_[0]);
  std::optional<std::pair<std::string_view, std::size_t>> longest;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    node ^= c;
    if (node >= units_.size()) break;
    const std::uint32_t u = units_[node];
    if (label(u) != c) break;
    node ^= offset(u);
    if (node >= units_.size()) break;
    if (!has_leaf(u)) continue;
    const std::size_t at = value(units_[node]);
    const std::size_t end = at < strings_.size() ? strings_.find('\0', at) : std::string_view::npos;
    if (end == std::string_view::npos) continue;  // a value outside the strings: no rule
    longest = std::make_pair(strings_.substr(at, end - at), i + 1);
  }
  return longest;
}

std::string CharsMap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    if (const auto m = match(text)) {
      out += m->first;
      text.remove_prefix(m->second);
      continue;
    }
    const std::size_t n = valid_char(text);
    out += n ? text.substr(0, n) : kReplacement;
    text.remove_prefix(n ? n : 1);
  }
  return out;
}

SpmModel read_spm(std::string_view bytes, const std::string& what) {
  SpmModel m;
  Wire top(bytes, what);
  bool has_unk = false;
  each_field(top, [&](std::uint32_t number, int wire) {
    if (wire != 2 || number < 1 || number > 3) return false;
    Wire inner(top.bytes(), what);
    if (number == 1) {  // SentencePiece { piece = 1; score = 2; type = 3 }
      if (m.pieces.size() >= kMaxVocabulary) inner.fail("more than 1,000,000 pieces");
      Unigram::Piece p{"", 0.0f, Unigram::Kind::normal};
      each_field(inner, [&](std::uint32_t n, int w) {
        if (n == 1 && w == 2)
          p.text = std::string(inner.bytes());
        else if (n == 2 && w == 5)
          p.score = inner.fixed32();
        else if (n == 3 && w == 0) {
          const std::uint64_t t = inner.varint();
          if (t < 1 || t > 6) inner.fail("piece type " + std::to_string(t));
          p.kind = static_cast<Unigram::Kind>(t);
        } else
          return false;
        return true;
      });
      if (p.kind == Unigram::Kind::unknown && !has_unk) {
        has_unk = true;
        m.unk_id = static_cast<std::int32_t>(m.pieces.size());
      }
      m.pieces.push_back(std::move(p));
    } else if (number == 2) {  // TrainerSpec
      each_field(inner, [&](std::uint32_t n, int w) {
        if (w != 0) return false;
        if (n == 3) {
          const std::uint64_t t = inner.varint();
          if (t < 1 || t > 4) inner.fail("model type " + std::to_string(t));
          m.type = static_cast<SpmModel::Type>(t);
        } else if (n == 24)
          m.treat_whitespace_as_suffix = inner.varint() != 0;
        else if (n == 35)
          m.byte_fallback = inner.varint() != 0;
        else
          return false;
        return true;
      });
    } else {  // NormalizerSpec
      each_field(inner, [&](std::uint32_t n, int w) {
        if (n == 2 && w == 2)
          m.charsmap = std::string(inner.bytes());
        else if (n == 3 && w == 0)
          m.add_dummy_prefix = inner.varint() != 0;
        else if (n == 4 && w == 0)
          m.remove_extra_whitespaces = inner.varint() != 0;
        else if (n == 5 && w == 0)
          m.escape_whitespaces = inner.varint() != 0;
        else
          return false;
        return true;
      });
    }
    return true;
  });
  if (m.pieces.empty()) throw Error(what + ": not a SentencePiece model (it has no pieces)");
  if (!has_unk) throw Error(what + ": the SentencePiece model has no unknown piece");
  return m;
}

std::string spm_normalize(std::string_view text, const CharsMap& map, const SpmModel& spec) {
  const auto next = [&](std::string_view s) -> std::pair<std::string_view, std::size_t> {
    if (const auto m = map.match(s)) return *m;
    const std::size_t n = valid_char(s);
    return n ? std::make_pair(s.substr(0, n), n) : std::make_pair(kReplacement, std::size_t{1});
  };
  if (spec.remove_extra_whitespaces)
    while (!text.empty()) {
      const auto [piece, used] = next(text);
      if (piece != " ") break;
      text.remove_prefix(used);
    }
  std::string out;
  if (text.empty()) return out;
  const std::string_view space = spec.escape_whitespaces ? kSpace : std::string_view(" ");
  if (spec.add_dummy_prefix && !spec.treat_whitespace_as_suffix) out += space;
  bool previous_space = spec.remove_extra_whitespaces;
  while (!text.empty()) {
    auto [piece, used] = next(text);
    text.remove_prefix(used);
    if (previous_space)
      while (!piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    if (piece.empty()) continue;
    for (char c : piece)
      if (c == ' ')
        out += space;
      else
        out += c;
    if (spec.remove_extra_whitespaces) previous_space = piece.back() == ' ';
  }
  if (spec.remove_extra_whitespaces)
    while (out.size() >= space.size() && out.compare(out.size() - space.size(), space.size(), space) == 0)
      out.resize(out.size() - space.size());
  if (spec.add_dummy_prefix && spec.treat_whitespace_as_suffix) out += space;
  return out;
}

SentencePiece::SentencePiece(std::string_view bytes, const std::string& what)
    : spec_(read_spm(bytes, what)),
      map_(spec_.charsmap, what),
      unigram_(unigram_pieces(spec_, what), spec_.unk_id, spec_.byte_fallback, what) {}

std::vector<Unigram::Match> SentencePiece::encode(std::string_view text) const {
  return unigram_.encode(spm_normalize(text, map_, spec_));
}

}  // namespace attnscope::tokenizers
