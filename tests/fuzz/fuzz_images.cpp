// libFuzzer: an image through a vision model's preprocessing, from a fuzzed preprocessor_config.json. The input is
// split at its first NUL byte: the config before it; after it, two bytes each of width and height (1 to 256) and the
// RGBA pixels, the rest of the input repeated to fill them. Configs that ask for more than 512 pixels a side are
// skipped after reading (their work, not their parsing, grows with the size).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "vision/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t* split = std::find(data, data + size, std::uint8_t{0});
  const std::string text(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(split));
  const std::uint8_t* rest = split == data + size ? split : split + 1;
  const std::size_t left = static_cast<std::size_t>(data + size - rest);
  const auto byte = [&](std::size_t i) { return left > i ? rest[i] : std::uint8_t{0}; };
  const std::int64_t width = 1 + ((byte(0) | byte(1) << 8) & 0xff), height = 1 + ((byte(2) | byte(3) << 8) & 0xff);
  std::vector<std::uint8_t> rgba(static_cast<std::size_t>(width * height * 4));
  for (std::size_t i = 0; i < rgba.size(); ++i) rgba[i] = left > 4 ? rest[4 + i % (left - 4)] : std::uint8_t(i);
  try {
    const attnscope::Json config = attnscope::Json::parse(text, "preprocessor_config.json");
    const attnscope::vision::Preprocess p = attnscope::vision::read_preprocess(&config, 224, 224);
    const std::int64_t largest = std::max(
        {p.size.height, p.size.width, p.size.shortest_edge, p.crop_height, p.crop_width, p.size.shortest_edge * 4});
    if (largest > 512) return 0;
    const attnscope::vision::Prepared out = attnscope::vision::preprocess(p, rgba.data(), width, height);
    if (out.pixels.data.empty()) __builtin_trap();
  } catch (const attnscope::Error&) {
  } catch (const std::bad_alloc&) {
  }
  return 0;
}
