#include "model_files.hpp"

#include <malloc.h>

#include "attnscope/model.hpp"
#include "convert.hpp"
#include "engine.hpp"

namespace attnscope::bindings {

namespace {

// Most bytes of small model files (configs, tokenizers) one load may copy into the heap.
constexpr double kMaxSmallFileBytes = 512.0 * 1024 * 1024;

// Reading past the first bytes of a file that JS has only begun (a range request's, a Blob slice's): the bytes up to
// `end` are needed.
struct NeedBytes {
  int part;
  std::uint64_t end;
};

// A weight file that stays in JS: a Uint8Array, or a File read in pieces (web/src/file-pieces.ts: its byteLength, and
// a subarray that reads, undefined when the file can no longer be read). Tensors are copied into the heap one at a
// time. With `size` above its length, the bytes are the file's first ones, and reading past them throws NeedBytes.
class JsFileBytes final : public FileBytes {
 public:
  JsFileBytes(std::string name, val bytes) : JsFileBytes(std::move(name), bytes, bytes["byteLength"].as<double>()) {}
  JsFileBytes(std::string name, val bytes, double size, int part = -1)
      : name_(std::move(name)),
        bytes_(std::move(bytes)),
        have_(bytes_["byteLength"].as<double>()),
        size_(size),
        part_(part) {}
  std::uint64_t size() const override { return static_cast<std::uint64_t>(size_); }
  void read(std::uint64_t offset, std::uint64_t count, std::uint8_t* dest) const override {
    if (static_cast<double>(offset + count) > have_) throw NeedBytes{part_, offset + count};
    const val piece = bytes_.call<val>("subarray", static_cast<double>(offset), static_cast<double>(offset + count));
    if (piece.isUndefined() || piece["length"].as<double>() != static_cast<double>(count))
      throw Error(name_ + ": the file could not be read (it was changed or removed after it was chosen)");
    val(emscripten::typed_memory_view(static_cast<std::size_t>(count), dest)).call<void>("set", piece);
  }

 private:
  std::string name_;
  val bytes_;
  double have_, size_;
  int part_;  // which of the files given together, for NeedBytes
};

}  // namespace

ModelFiles copy_files(const char* op, const val& files, LargeFiles* large) {
  const val names = val::global("Object").call<val>("keys", files);
  const int count = names["length"].as<int>();
  double small = 0, weights = 0;
  // A GGUF's weights take the heap their headers say (gguf_weight_bytes), which is not quite the file's size.
  LargeFiles ggufs;
  for (int i = 0; i < count; ++i) {
    const std::string name = names[i].as<std::string>();
    if (large && ends_with(name, ".gguf"))
      ggufs.emplace(name, std::make_shared<JsFileBytes>(name, files[names[i]]));
    else
      (large && is_weights_file(name) ? weights : small) += files[names[i]]["byteLength"].as<double>();
  }
  if (!ggufs.empty()) weights += static_cast<double>(Model::gguf_weight_bytes(ggufs));
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
      (*large)[name] = std::make_shared<JsFileBytes>(name, bytes);
      continue;
    }
    std::string& data = copy[name];
    data.resize(bytes["byteLength"].as<std::size_t>());
    val(emscripten::typed_memory_view(data.size(), reinterpret_cast<std::uint8_t*>(data.data())))
        .call<void>("set", bytes);
  }
  return copy;
}

val gguf_weight_bytes(const val& parts) {
  const char* op = "ggufWeightBytes";
  return guard(op, [&] {
    LargeFiles files;
    const int count = parts["length"].as<int>();
    for (int i = 0; i < count; ++i) {
      const std::string name = parts[i]["name"].as<std::string>();
      files.emplace(name, std::make_shared<JsFileBytes>(name, parts[i]["head"], parts[i]["size"].as<double>(), i));
    }
    val r = val::object();
    try {
      r.set("weightBytes", static_cast<double>(Model::gguf_weight_bytes(files)));
    } catch (const NeedBytes& need) {
      r.set("part", need.part);
      r.set("needBytes", static_cast<double>(need.end));
    }
    return r;
  });
}

}  // namespace attnscope::bindings
