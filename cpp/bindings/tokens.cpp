#include "tokens.hpp"

#include "convert.hpp"

namespace attnscope::bindings {

namespace {

void check_vocabulary(const char* op, const Tokenizer& t, const std::vector<std::int32_t>& ids) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= t.vocab_size())
      throw Error(std::string(op) + ": id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                  " is outside the vocabulary [0, " + std::to_string(t.vocab_size()) + ")");
}

}  // namespace

val labelled(const Tokenizer& t, const std::vector<std::int32_t>& ids) {
  check_vocabulary("labels", t, ids);
  val out = val::array();
  for (std::int32_t id : ids) out.call<void>("push", t.label(id));
  return out;
}

val decoded(const Tokenizer& t, const std::vector<std::int32_t>& ids, bool skip_special) {
  check_vocabulary("decode", t, ids);
  // As bytes: embind hands strings to JS through a TextDecoder that drops a leading U+FEFF.
  const std::string text = t.decode(ids, skip_special);
  val out = val::object();
  out.set(
      "utf8",
      val::global("Uint8Array")
          .new_(val(emscripten::typed_memory_view(text.size(), reinterpret_cast<const std::uint8_t*>(text.data())))));
  return out;
}

val encoding_to_js(const Encoding& e) {
  val out = val::object();
  val tokens = val::array();
  for (const auto& t : e.tokens) tokens.call<void>("push", t);
  out.set("tokens", tokens);
  out.set("ids", int32_array(e.ids));
  return out;
}

std::string token_of(const Tokenizer* t, std::int32_t id) {
  return t && id >= 0 && id < t->vocab_size() ? t->token(id) : "#" + std::to_string(id);
}

val token_rows(const Tokenizer* t, const std::vector<std::int32_t>& ids, std::int64_t k) {
  val rows = val::array();
  for (std::size_t i = 0; i < ids.size(); i += static_cast<std::size_t>(k)) {
    val row = val::array();
    for (std::size_t j = i; j < i + static_cast<std::size_t>(k) && j < ids.size(); ++j)
      row.call<void>("push", token_of(t, ids[j]));
    rows.call<void>("push", row);
  }
  return rows;
}

}  // namespace attnscope::bindings
