// A model's files as Model::load reads them: small ones by name in memory, large ones (weights) read on demand.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace attnscope {

// A model's files, by name: "config.json", "model.safetensors", "vocab.json", ...
using ModelFiles = std::map<std::string, std::string>;

// A large file's bytes, read on demand: a model's weights need not sit in memory whole beside the
// weights made from them (in wasm, the file stays a JS Uint8Array and tensors are copied in one by one).
class FileBytes {
 public:
  virtual ~FileBytes() = default;
  virtual std::uint64_t size() const = 0;
  // Copies bytes [offset, offset + count) of the file into dest.
  virtual void read(std::uint64_t offset, std::uint64_t count, std::uint8_t* dest) const = 0;
  // The whole file when it is in memory, else null.
  virtual const std::uint8_t* memory() const { return nullptr; }
};
using LargeFiles = std::map<std::string, std::shared_ptr<const FileBytes>>;

// Whether a file's name says it holds weights (safetensors, or llama.cpp's GGUF): the files read tensor by tensor.
inline bool ends_with(const std::string& name, const char* suffix) {
  const std::string s(suffix);
  return name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
}
inline bool is_weights_file(const std::string& name) {
  return ends_with(name, ".safetensors") || ends_with(name, ".gguf");
}

}  // namespace attnscope
