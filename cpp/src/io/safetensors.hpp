// Hugging Face safetensors, read from a file's bytes, in memory or on demand:
//   [u64 little-endian header length N][N bytes of JSON header][tensor data]
// The header maps names to { dtype, shape, data_offsets: [begin, end) }, offsets
// relative to the data section. Everything is bounds-checked before use: a header
// length beyond the file, offsets out of range or overlapping, a dtype or shape
// that does not match its byte size, a missing tensor, bad JSON are all Errors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/files.hpp"
#include "attnscope/tensor.hpp"
#include "kernels/packed.hpp"

namespace attnscope {

// Bytes of a file held in memory (which must outlive this).
class MemoryBytes final : public FileBytes {
 public:
  MemoryBytes(const std::uint8_t* data, std::uint64_t size) : data_(data), size_(size) {}
  std::uint64_t size() const override { return size_; }
  void read(std::uint64_t offset, std::uint64_t count, std::uint8_t* dest) const override;
  const std::uint8_t* memory() const override { return data_; }

 private:
  const std::uint8_t* data_;
  std::uint64_t size_;
};

struct SafeTensorInfo {
  std::string dtype;  // F32, F16 or BF16; from a GGUF also Q8_0, Q4_0, Q4_K, Q6_K
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // byte range within the data section
  // As a GGUF holds them (gguf_checkpoint.cpp): the rows of `interleaved` heads with each head's RoPE halves
  // interleaved in pairs, as llama.cpp's converter permutes Llama's q and k, put back in halves when read; `add`
  // added to every value (Gemma's norms, stored as 1 + w).
  std::int64_t interleaved = 0;
  float add = 0;
};

class SafeTensors {
 public:
  // Reads the header of `file`; tensors are read when asked for. `what` names it in errors.
  SafeTensors(std::shared_ptr<const FileBytes> file, std::string what);
  // Views `data` (the whole file, which must outlive this object).
  SafeTensors(const std::uint8_t* data, std::uint64_t size, std::string what);
  // Tensors another format's reader found in `file` (a GGUF's), checked as it checks them; offsets from the file's
  // start.
  SafeTensors(std::shared_ptr<const FileBytes> file, std::string what, std::map<std::string, SafeTensorInfo> tensors);

  const std::map<std::string, SafeTensorInfo>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }

  // The tensor as float32, checked against `expected` shape (dimension -1 matches any)
  // and for finite values. Throws naming the file and tensor.
  Tensor read(const std::string& name, const Shape& expected) const;
  // A matrix [rows, cols] packed for the GEMM in its own precision (F32, F16, BF16) and checked
  // for finite values: B = the matrix, or its transpose when `transposed` (a Linear's [out, in]).
  // With `count` >= 0, only rows [first, first + count) of it (Phi-3's q, k, v stacked in one tensor).
  std::shared_ptr<const kernels::PackedWeight> matrix(const std::string& name, std::int64_t rows, std::int64_t cols,
                                                      bool transposed, std::int64_t first = 0,
                                                      std::int64_t count = -1) const;

 private:
  // The tensor's bytes (checked against `expected`): in memory, or read into `scratch`. Scratch is allocated, never
  // filled first: a std::vector's resize wrote each byte through a call, a third of a model's load.
  const std::uint8_t* raw(const std::string& name, const Shape& expected,
                          std::unique_ptr<std::uint8_t[]>& scratch) const;

  // Throws, naming the tensor, if one of the `count` quantized blocks at `data` has a scale that is not finite.
  void check_blocks(const std::string& name, kernels::Precision p, const std::uint8_t* data, std::int64_t count) const;

  std::shared_ptr<const FileBytes> file_;
  std::uint64_t data_offset_ = 0, data_size_ = 0;  // the data section within the file
  std::string what_;
  std::map<std::string, SafeTensorInfo> tensors_;
};

// Largest safetensors header accepted (the spec's own limit is 100 MB).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100u << 20;

}  // namespace attnscope
