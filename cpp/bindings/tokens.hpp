// Token ids and texts as JS sees them, for the model's and the tokenizer's handles.
#pragma once

#include <emscripten/val.h>

#include <string>
#include <vector>

#include "attnscope/tokenizer.hpp"

namespace attnscope::bindings {

using emscripten::val;

// Each id's label (Tokenizer::label), each checked against the vocabulary → string[]
val labelled(const Tokenizer& t, const std::vector<std::int32_t>& ids);
// { utf8: Uint8Array } of ids, each checked against the vocabulary.
val decoded(const Tokenizer& t, const std::vector<std::int32_t>& ids, bool skip_special);
// { tokens: string[], ids: Int32Array }
val encoding_to_js(const Encoding& e);
// An id as the vocabulary spells it; "#id" without a tokenizer or past its vocabulary.
std::string token_of(const Tokenizer* t, std::int32_t id);
// Rows of ids [rows, k] → string[][] of their tokens.
val token_rows(const Tokenizer* t, const std::vector<std::int32_t>& ids, std::int64_t k);

}  // namespace attnscope::bindings
