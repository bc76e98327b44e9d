// AttnScope's own JSON reader (cpp/src/io/json.cpp) against a maintained library from Debian, which it
// should give way to unless the library measures slower or heavier. This times both on one file in
// wasm, as the engine reads tokenizer.json: the parse, and the heap the parsed tree holds.
//   node build/wasm/bench/json_parsers.js <file.json> attnscope|nlohmann|nlohmann-ordered
//   (npm run bench:json: Gemma 3's tokenizer.json, 33 MB)
// One parser per process, so that the peak heap is that parser's.
// nlohmann::json (objects as std::map: a tokenizer.json needs no member order, its ordered parts are
// arrays) and nlohmann::ordered_json (file order, as AttnScope's reader keeps it).
#include <emscripten/heap.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "io/json.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double live_mib() { return static_cast<double>(mallinfo().uordblks) / (1 << 20); }

template <typename Parse>
void measure(const char* name, const std::string& text, Parse parse) {
  std::vector<double> ms;
  double held = 0;
  for (int round = 0; round < 3; ++round) {
    const double before = live_mib();
    const auto start = Clock::now();
    auto tree = parse(text);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    held = live_mib() - before;
  }
  std::sort(ms.begin(), ms.end());
  std::printf("  %-28s parse %7.0f ms (median of 3)   parsed tree %6.0f MiB of heap\n", name, ms[1], held);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: json_parsers <file.json> attnscope|nlohmann|nlohmann-ordered\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const std::string which = argv[2];
  if (which == "attnscope")
    measure("AttnScope (io/json.cpp)", text, [](const std::string& t) { return attnscope::Json::parse(t, "file"); });
  else if (which == "nlohmann")
    measure("nlohmann::json 3.11", text, [](const std::string& t) { return nlohmann::json::parse(t); });
  else
    measure("nlohmann::ordered_json 3.11", text, [](const std::string& t) { return nlohmann::ordered_json::parse(t); });
  std::printf("  peak wasm heap %.0f MiB\n", static_cast<double>(emscripten_get_heap_size()) / (1 << 20));
}
