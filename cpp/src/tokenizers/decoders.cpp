// tokenizer.json's decoders: tokens back to text as Hugging Face's JS tokenizers spell it, and one
// token's bytes for its label.
#include <cctype>
#include <string>

#include "attnscope/tokenizer.hpp"
#include "tokenizers/bpe.hpp"
#include "tokenizers/pieces.hpp"
#include "tokenizers/steps.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope::tokenizers {

namespace {

// A <0xNN> byte-fallback token's byte.
bool byte_token(const std::string& t, char& byte) {
  if (t.size() != 6 || t.rfind("<0x", 0) != 0 || t[5] != '>' || !std::isxdigit(static_cast<unsigned char>(t[3])) ||
      !std::isxdigit(static_cast<unsigned char>(t[4])))
    return false;
  byte = static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16));
  return true;
}

// Runs of tokens that stand for bytes (`bytes_of` sets them and says so) become the text those bytes spell, U+FFFD
// where they spell none (as TextDecoder does); the other tokens pass as they are.
template <typename BytesOf>
std::vector<std::string> spell_byte_runs(const std::vector<std::string>& tokens, BytesOf bytes_of) {
  std::vector<std::string> out;
  std::string bytes, raw;
  for (const std::string& t : tokens) {
    raw.clear();
    if (bytes_of(t, raw)) {
      bytes += raw;
      continue;
    }
    if (!bytes.empty()) out.push_back(unicode::whatwg_utf8(bytes)), bytes.clear();
    out.push_back(t);
  }
  if (!bytes.empty()) out.push_back(unicode::whatwg_utf8(bytes));
  return out;
}

}  // namespace

Decoder::~Decoder() = default;

std::unique_ptr<Decoder> Decoder::byte_level() {
  std::unique_ptr<Decoder> d(new Decoder());
  d->kind_ = Kind::byte_level;
  return d;
}

std::unique_ptr<Decoder> Decoder::read(const Json* j) {
  if (!j || j->is_null()) return nullptr;
  const std::string type = type_of(*j);
  std::unique_ptr<Decoder> d(new Decoder());
  if (type == "ByteLevel") {
    d->kind_ = Kind::byte_level;
  } else if (type == "Sequence") {
    const Json* list = j->find("decoders");
    if (list && list->is_array())
      for (const Json& x : list->array())
        if (auto step = read(&x)) d->steps_.push_back(std::move(step));
  } else if (type == "Replace") {
    d->kind_ = Kind::replace;
    d->text_ = literal(*j, "the Replace decoder");
    d->with_ = string_of(j->find("content"));
  } else if (type == "ByteFallback") {
    d->kind_ = Kind::byte_fallback;
  } else if (type == "Fuse") {
    d->kind_ = Kind::fuse;
  } else if (type == "Strip") {
    d->kind_ = Kind::strip;
    d->text_ = string_of(j->find("content"), " ");
    const Json* start = j->find("start");
    const Json* stop = j->find("stop");
    d->start_ = start && start->is_number() ? static_cast<int>(start->number()) : 0;
    d->stop_ = stop && stop->is_number() ? static_cast<int>(stop->number()) : 0;
  } else if (type == "Metaspace") {
    d->kind_ = Kind::metaspace;
    d->text_ = string_of(j->find("replacement"), "\u2581");
  } else {
    unsupported("decoder", type, "Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace");
  }
  return d;
}

std::vector<std::string> Decoder::decode(std::vector<std::string> tokens,
                                         const std::unordered_set<std::string>& added) const {
  switch (kind_) {
    case Kind::sequence:
      for (const auto& step : steps_) tokens = step->decode(std::move(tokens), added);
      return tokens;
    case Kind::byte_level:  // every token but an added one is bytes in the byte alphabet
      return spell_byte_runs(tokens, [&](const std::string& t, std::string& raw) {
        return !added.count(t) && from_byte_alphabet(t, raw);
      });
    case Kind::replace:
      for (std::string& t : tokens) replace_all(t, text_, with_);
      return tokens;
    case Kind::byte_fallback:  // <0xNN> tokens are one byte each
      return spell_byte_runs(tokens, [](const std::string& t, std::string& raw) {
        char byte;
        if (!byte_token(t, byte)) return false;
        raw = byte;
        return true;
      });
    case Kind::fuse:
      return {join(tokens)};
    case Kind::strip:
      for (std::string& t : tokens) {
        std::size_t a = 0, b = t.size();
        for (int i = 0; i < start_ && t.compare(a, text_.size(), text_) == 0 && a < b; ++i) a += text_.size();
        for (int i = 0; i < stop_ && b >= a + text_.size() && t.compare(b - text_.size(), text_.size(), text_) == 0;
             ++i)
          b -= text_.size();
        t = t.substr(a, b - a);
      }
      return tokens;
    case Kind::metaspace:
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        replace_all(tokens[i], text_, " ");
        if (i == 0 && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
      }
      return tokens;
  }
  return tokens;
}

std::string Decoder::label(std::string token, bool added) const {
  switch (kind_) {
    case Kind::sequence:
      for (const auto& step : steps_) token = step->label(std::move(token), added);
      return token;
    case Kind::byte_level: {
      std::string raw;
      return !added && from_byte_alphabet(token, raw) ? raw : token;
    }
    case Kind::byte_fallback: {
      char byte;
      return byte_token(token, byte) ? std::string(1, byte) : token;
    }
    case Kind::replace:
      replace_all(token, text_, with_);
      return token;
    case Kind::metaspace:  // the leading space stays: a label shows where a word begins
      replace_all(token, text_, " ");
      return token;
    case Kind::fuse:
    case Kind::strip:
      return token;
  }
  return token;
}

}  // namespace attnscope::tokenizers

namespace attnscope {

std::string Tokenizer::label(std::int32_t id) const { return unicode::readable(token(id)); }

}  // namespace attnscope
