// libFuzzer: the GGUF reader on arbitrary bytes, the heap its header says the weights take, then the checkpoint it
// describes read as a model, every tensor read. A file that loads has a plan.
#include <cstddef>
#include <cstdint>
#include <new>

#include "attnscope/error.hpp"
#include "attnscope/model.hpp"
#include "io/gguf.hpp"
#include "io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const attnscope::Gguf g(std::make_shared<attnscope::MemoryBytes>(data, size), "model.gguf");
  } catch (const attnscope::Error&) {
  }
  bool planned = false;
  try {
    attnscope::Model::gguf_weight_bytes({{"model.gguf", std::make_shared<attnscope::MemoryBytes>(data, size)}});
    planned = true;
  } catch (const attnscope::Error&) {
  }
  attnscope::ModelFiles files;
  files["model.gguf"] = std::string(reinterpret_cast<const char*>(data), size);
  try {
    attnscope::Model::load(files);
    if (!planned) __builtin_trap();
  } catch (const attnscope::Error&) {
  } catch (const std::bad_alloc&) {
  }
  return 0;
}
