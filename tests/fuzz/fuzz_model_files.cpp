// libFuzzer: Model::load on a fuzzed config.json beside fuzzed weights. The input
// is split at its first NUL byte: config.json before it, model.safetensors after.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnscope/error.hpp"
#include "attnscope/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const char* text = reinterpret_cast<const char*>(data);
  const char* split = std::find(text, text + size, '\0');
  attnscope::ModelFiles files;
  files["config.json"] = std::string(text, split);
  if (split != text + size) files["model.safetensors"] = std::string(split + 1, text + size);
  try {
    attnscope::Model::load(files);
  } catch (const attnscope::Error&) {
  } catch (const std::bad_alloc&) {
  }
  return 0;
}
