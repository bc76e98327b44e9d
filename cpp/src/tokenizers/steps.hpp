// What the tokenizer.json steps (pieces.cpp, decoders.cpp) share: reading a step's JSON, and text replacement.
#pragma once

#include <string>

#include "attnscope/error.hpp"
#include "io/json.hpp"

namespace attnscope::tokenizers {

inline std::string string_of(const Json* j, const std::string& fallback = "") {
  return j && j->is_string() ? j->string() : fallback;
}

inline std::string type_of(const Json& j) { return string_of(j.find("type")); }

// A special token's text in tokenizer_config.json: "<s>" or { "content": "<s>" } (absent: `fallback`).
inline std::string token_text(const Json* j, const std::string& fallback = "") {
  return j && j->is_object() ? string_of(j->find("content"), fallback) : string_of(j, fallback);
}

[[noreturn]] inline void unsupported(const char* what, const std::string& type, const char* supported) {
  throw Error("tokenizer.json: " + std::string(what) + " type " + quote(type) + " is not supported (" + supported +
              ")");
}

// A pattern's literal text: { "String": "…" }; a { "Regex": … } only where `regex` is given.
inline std::string literal(const Json& j, const char* what) {
  const Json* pattern = j.find("pattern");
  const Json* text = pattern ? pattern->find("String") : nullptr;
  if (!text || !text->is_string())
    throw Error("tokenizer.json: " + std::string(what) + " needs a String pattern (a Regex one is not supported here)");
  return text->string();
}

inline void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size())
    out.append(s, at, hit - at).append(to);
  s = out.append(s, at, std::string::npos);
}

}  // namespace attnscope::tokenizers
