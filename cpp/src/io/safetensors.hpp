// Hugging Face safetensors, read from bytes in memory:
//   [u64 little-endian header length N][N bytes of JSON header][tensor data]
// The header maps names to { dtype, shape, data_offsets: [begin, end) }, offsets
// relative to the data section. Everything is bounds-checked before use: a header
// length beyond the file, offsets out of range or overlapping, a dtype or shape
// that does not match its byte size, a missing tensor, bad JSON are all Errors.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "attnscope/tensor.hpp"

namespace attnscope {

struct SafeTensorInfo {
  std::string dtype;  // F32, F16 or BF16
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // byte range within the data section
};

class SafeTensors {
 public:
  // Views `data` (the whole file, which must outlive this object). `what` names it in errors.
  SafeTensors(const std::uint8_t* data, std::uint64_t size, std::string what);

  const std::map<std::string, SafeTensorInfo>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }

  // The tensor as float32, checked against `expected` shape (dimension -1 matches any)
  // and for finite values. Throws naming the file and tensor.
  Tensor read(const std::string& name, const Shape& expected) const;

 private:
  const std::uint8_t* data_;  // start of the data section
  std::uint64_t data_size_;
  std::string what_;
  std::map<std::string, SafeTensorInfo> tensors_;
};

// Largest safetensors header accepted (the spec's own limit is 100 MB).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100u << 20;

}  // namespace attnscope
