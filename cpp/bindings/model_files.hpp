// A model's files as JS hands them over ({ name: Uint8Array }): the weights stay JS arrays, read tensor by tensor;
// the other files (configs, tokenizers) are copied into the heap. What does not fit is refused before any is read.
#pragma once

#include <emscripten/val.h>

#include "attnscope/files.hpp"

namespace attnscope::bindings {

// { name: Uint8Array } → the small files' copies; with `large`, *.safetensors stay in JS there. `op` names the call
// in errors.
ModelFiles copy_files(const char* op, const emscripten::val& files, LargeFiles* large = nullptr);

}  // namespace attnscope::bindings
