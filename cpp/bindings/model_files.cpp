#include "model_files.hpp"

#include <malloc.h>

#include "convert.hpp"
#include "engine.hpp"

namespace attnscope::bindings {

namespace {

// Most bytes of small model files (configs, tokenizers) one load may copy into the heap.
constexpr double kMaxSmallFileBytes = 512.0 * 1024 * 1024;

// A weight file that stays a JS Uint8Array: tensors are copied into the heap one at a time.
class JsFileBytes final : public FileBytes {
 public:
  explicit JsFileBytes(val bytes) : bytes_(std::move(bytes)), size_(bytes_["byteLength"].as<double>()) {}
  std::uint64_t size() const override { return static_cast<std::uint64_t>(size_); }
  void read(std::uint64_t offset, std::uint64_t count, std::uint8_t* dest) const override {
    val(emscripten::typed_memory_view(static_cast<std::size_t>(count), dest))
        .call<void>("set",
                    bytes_.call<val>("subarray", static_cast<double>(offset), static_cast<double>(offset + count)));
  }

 private:
  val bytes_;
  double size_;
};

}  // namespace

ModelFiles copy_files(const char* op, const val& files, LargeFiles* large) {
  const val names = val::global("Object").call<val>("keys", files);
  const int count = names["length"].as<int>();
  double small = 0, weights = 0;
  for (int i = 0; i < count; ++i) {
    const std::string name = names[i].as<std::string>();
    (large && is_weights_file(name) ? weights : small) += files[names[i]]["byteLength"].as<double>();
  }
  const auto mib = [](double bytes) { return std::to_string(static_cast<long long>(bytes / (1 << 20))); };
  if (small > kMaxSmallFileBytes)
    throw Error(std::string(op) + ": the files besides the weights hold " + mib(small) + " MiB, above the limit of " +
                mib(kMaxSmallFileBytes) + " MiB");
  const double in_use = allocated_bytes();
  if (weights + small + in_use + kRunningRoom > kMaxHeapBytes)
    throw Error(std::string(op) + ": the weights need " + mib(weights) + " MiB of the engine's " + mib(kMaxHeapBytes) +
                " MiB heap, which holds " + mib(in_use) + " MiB already and keeps " + mib(kRunningRoom) +
                " MiB for running: the model is too large for this engine (dispose of other models first)");
  ModelFiles copy;
  for (int i = 0; i < count; ++i) {
    const std::string name = names[i].as<std::string>();
    const val bytes = files[names[i]];
    if (large && is_weights_file(name)) {
      (*large)[name] = std::make_shared<JsFileBytes>(bytes);
      continue;
    }
    std::string& data = copy[name];
    data.resize(bytes["byteLength"].as<std::size_t>());
    val(emscripten::typed_memory_view(data.size(), reinterpret_cast<std::uint8_t*>(data.data())))
        .call<void>("set", bytes);
  }
  return copy;
}

}  // namespace attnscope::bindings
