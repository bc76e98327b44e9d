// A small, strict JSON reader for model files (config.json, safetensors headers,
// vocabularies). Depth and size are bounded; every failure is an attnscope::Error
// naming the file and the byte offset.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope {

class Json {
 public:
  enum class Type { null, boolean, number, string, array, object };

  // Parses `text`; `what` names the source in errors ("config.json").
  static Json parse(std::string_view text, const std::string& what);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::null; }
  bool is_number() const { return type_ == Type::number; }
  bool is_string() const { return type_ == Type::string; }
  bool is_array() const { return type_ == Type::array; }
  bool is_object() const { return type_ == Type::object; }

  bool boolean() const { return bool_; }
  double number() const { return number_; }
  const std::string& string() const { return string_; }
  const std::vector<Json>& array() const { return array_; }
  // Object members in file order (duplicate keys are refused by the parser).
  const std::vector<std::pair<std::string, Json>>& object() const { return object_; }
  // The member named `key`, or nullptr.
  const Json* find(std::string_view key) const;

 private:
  friend class JsonParser;
  Type type_ = Type::null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Json> array_;
  std::vector<std::pair<std::string, Json>> object_;
};

// Length of the valid multi-byte UTF-8 sequence starting at s[at] (no overlongs,
// surrogates or values past U+10FFFF), or 0 when it is not one.
std::size_t utf8_sequence_length(std::string_view s, std::size_t at);

// Appends the UTF-8 encoding of code point `cp` (surrogates encoded as WTF-8).
void append_utf8(std::string& out, std::uint32_t cp);

// `s` as a JSON string literal: quotes, backslashes and control characters escaped, other bytes as they are.
std::string json_string(std::string_view s);
// The same, appended to `out`.
void append_json_string(std::string& out, std::string_view s);

}  // namespace attnscope
