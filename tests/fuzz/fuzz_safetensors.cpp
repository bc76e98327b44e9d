// libFuzzer: the safetensors reader on arbitrary bytes, reading every tensor it accepts.
#include <cstddef>
#include <cstdint>

#include "attnscope/error.hpp"
#include "io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const attnscope::SafeTensors st(data, size, "model.safetensors");
    for (const auto& [name, info] : st.tensors()) {
      try {
        st.read(name, attnscope::Shape(info.shape.size(), -1));
      } catch (const attnscope::Error&) {
      }
    }
  } catch (const attnscope::Error&) {
  }
  return 0;
}
