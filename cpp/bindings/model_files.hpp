// A model's files as JS hands them over ({ name: Uint8Array }): the weights stay JS arrays, read tensor by tensor;
// the other files (configs, tokenizers) are copied into the heap. What does not fit is refused before any is read.
#pragma once

#include <emscripten/val.h>

#include "attnscope/files.hpp"

namespace attnscope::bindings {

// { name: Uint8Array } → the small files' copies; with `large`, *.safetensors stay in JS there. `op` names the call
// in errors.
ModelFiles copy_files(const char* op, const emscripten::val& files, LargeFiles* large = nullptr);

// The heap a GGUF's weights take (gguf_weight_bytes), from the first bytes of its parts: [{ name, head: Uint8Array of
// the file's first bytes, size: the file's }] → { weightBytes }, or { part, needBytes } when a header runs past its
// `head` (that part's bytes [0, needBytes) are needed), or { error }.
emscripten::val gguf_weight_bytes(const emscripten::val& parts);

}  // namespace attnscope::bindings
