// libFuzzer: the JSON reader on arbitrary bytes. Errors are expected; crashes,
// leaks and undefined behaviour are not.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnscope/error.hpp"
#include "io/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    attnscope::Json::parse(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const attnscope::Error&) {
  }
  return 0;
}
