#include "io/safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "kernels/quantized.hpp"

namespace attnscope {

namespace {

// Bytes per value of each dtype safetensors defines; 0 for a name it does not.
std::uint64_t dtype_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

// The weights AttnScope reads; a checkpoint may hold other tensors beside them (older CLIP and BERT files keep their
// int64 position_ids buffers), which load untouched and are refused only when read.
bool is_float(const std::string& dtype) { return dtype == "F32" || dtype == "F16" || dtype == "BF16"; }

// A GGUF's quantized tensor (gguf_checkpoint.cpp names its dtype as ggml does), or f32 for another.
kernels::Precision quantized_of(const std::string& dtype) { return kernels::quantized_named(dtype.c_str()); }

kernels::Precision precision_of(const std::string& dtype) {
  return dtype == "F32"    ? kernels::Precision::f32
         : dtype == "BF16" ? kernels::Precision::bf16
                           : kernels::Precision::f16;
}

// Throws, as check_finite() would, at the first non-finite value of raw 16-bit floats (exponent bits
// all ones): widened, they would not all stay non-finite (an f16 infinity widens to 65536 by widen()'s rebias).
void check_finite_16(const std::string& what, const std::uint8_t* raw, std::int64_t count, kernels::Precision p,
                     std::int64_t first_index = 0) {
  const std::uint16_t exponent = p == kernels::Precision::bf16 ? 0x7f80 : 0x7c00;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint16_t h = static_cast<std::uint16_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
    if ((h & exponent) != exponent) continue;
    const char* kind = (h & ~exponent & 0x7fff) ? "NaN" : h & 0x8000 ? "-Infinity" : "Infinity";
    throw Error("loadModel: " + what + " has a non-finite value (" + kind + ") at index " +
                std::to_string(first_index + i));
  }
}

std::uint64_t whole_number(const Json& j, const std::string& what) {
  if (!j.is_number() || j.number() < 0 || j.number() > 9.0e15 || std::floor(j.number()) != j.number())
    throw Error(what + " must be a whole number from 0 to 9e15");
  return static_cast<std::uint64_t>(j.number());
}

}  // namespace

void MemoryBytes::read(std::uint64_t offset, std::uint64_t count, std::uint8_t* dest) const {
  if (count) std::memcpy(dest, data_ + offset, static_cast<std::size_t>(count));  // dest may be null for none
}

SafeTensors::SafeTensors(const std::uint8_t* data, std::uint64_t size, std::string what)
    : SafeTensors(std::make_shared<MemoryBytes>(data, size), std::move(what)) {}

SafeTensors::SafeTensors(std::shared_ptr<const FileBytes> file, std::string what)
    : file_(std::move(file)), what_(std::move(what)) {
  const std::uint64_t size = file_->size();
  if (size < 8)
    throw Error(what_ + ": the file is " + std::to_string(size) + " bytes, too short for a safetensors header");
  std::uint8_t length[8];
  file_->read(0, 8, length);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | length[i];
  if (n > size - 8)
    throw Error(what_ + ": header length " + std::to_string(n) + " is beyond the end of the file (" +
                std::to_string(size) + " bytes)");
  if (n > kMaxSafetensorsHeader)
    throw Error(what_ + ": header length " + std::to_string(n) + " is above the limit of 100 MiB");
  data_offset_ = 8 + n;
  data_size_ = size - 8 - n;
  std::string text(static_cast<std::size_t>(n), '\0');
  file_->read(8, n, reinterpret_cast<std::uint8_t*>(text.data()));

  const Json header = Json::parse(text, what_ + " header");
  if (!header.is_object()) throw Error(what_ + ": the header is not a JSON object");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, entry] : header.object()) {
    if (name == "__metadata__") continue;
    const std::string where = what_ + ": tensor " + quote(name);
    if (!entry.is_object()) throw Error(where + " is not an object");
    const Json* dtype = entry.find("dtype");
    const Json* shape = entry.find("shape");
    const Json* offsets = entry.find("data_offsets");
    if (!dtype || !dtype->is_string()) throw Error(where + " has no dtype");
    if (!shape || !shape->is_array()) throw Error(where + " has no shape");
    if (!offsets || !offsets->is_array() || offsets->array().size() != 2)
      throw Error(where + " needs data_offsets [begin, end]");
    SafeTensorInfo info;
    info.dtype = dtype->string();
    const std::uint64_t bytes_per = dtype_size(info.dtype);
    if (!bytes_per) throw Error(where + " has dtype " + info.dtype + ", which safetensors does not define");
    if (shape->array().size() > 8) throw Error(where + " has more than 8 dimensions");
    std::uint64_t count = 1;
    for (const Json& d : shape->array()) {
      const std::uint64_t dim = whole_number(d, where + ": a shape dimension");
      // Refuse products that overflow before multiplying.
      if (dim != 0 && count > (std::uint64_t{1} << 62) / dim) throw Error(where + ": the shape's size overflows");
      count *= dim;
      info.shape.push_back(static_cast<std::int64_t>(dim));
    }
    info.begin = whole_number(offsets->array()[0], where + ": data_offsets[0]");
    info.end = whole_number(offsets->array()[1], where + ": data_offsets[1]");
    if (info.begin > info.end || info.end > data_size_)
      throw Error(where + " has data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                  "] outside the data section (" + std::to_string(data_size_) + " bytes)");
    if (info.end - info.begin != count * bytes_per)
      throw Error(where + " has " + std::to_string(info.end - info.begin) + " bytes but " + info.dtype + " " +
                  format_shape(info.shape) + " needs " + std::to_string(count * bytes_per));
    ranges.emplace_back(info.begin, info.end);
    tensors_.emplace(name, std::move(info));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second && ranges[i].first != ranges[i].second)
      throw Error(what_ + ": tensors overlap at bytes [" + std::to_string(ranges[i].first) + ", " +
                  std::to_string(ranges[i - 1].second) + ")");
}

SafeTensors::SafeTensors(std::shared_ptr<const FileBytes> file, std::string what,
                         std::map<std::string, SafeTensorInfo> tensors)
    : file_(std::move(file)), data_size_(file_->size()), what_(std::move(what)), tensors_(std::move(tensors)) {}

const std::uint8_t* SafeTensors::raw(const std::string& name, const Shape& expected,
                                     std::unique_ptr<std::uint8_t[]>& scratch) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(what_ + ": tensor " + quote(name) + " is missing");
  const SafeTensorInfo& info = it->second;
  if (!is_float(info.dtype) && !kernels::is_quantized(quantized_of(info.dtype)))
    throw Error(what_ + ": tensor " + quote(name) + " has dtype " + info.dtype +
                "; AttnScope reads weights in F32, F16 and BF16 (and from a GGUF Q8_0, Q4_0, Q4_K and Q6_K)");
  bool fits = info.shape.size() == expected.size();
  for (std::size_t i = 0; fits && i < expected.size(); ++i) fits = expected[i] < 0 || expected[i] == info.shape[i];
  if (!fits)
    throw Error(what_ + ": tensor " + quote(name) + " has shape " + format_shape(info.shape) +
                " but the config needs " + format_shape(expected));
  const std::uint8_t* memory = file_->memory();
  if (memory && !info.interleaved) return memory + data_offset_ + info.begin;
  const std::size_t bytes = static_cast<std::size_t>(info.end - info.begin);
  std::unique_ptr<std::uint8_t[]> stored;
  if (!memory || info.interleaved) {
    (info.interleaved ? stored : scratch).reset(new std::uint8_t[bytes]);
    if (memory)
      std::memcpy(stored.get(), memory + data_offset_ + info.begin, bytes);
    else
      file_->read(data_offset_ + info.begin, bytes, (info.interleaved ? stored : scratch).get());
  }
  if (!info.interleaved) return scratch.get();
  // Row h·per + j·per/2 + i (transformers': each head's halves) is stored at h·per + 2i + j (llama.cpp's pairs).
  const std::int64_t rows = info.shape[0], per = rows / info.interleaved;
  const std::size_t row = bytes / static_cast<std::size_t>(rows);
  scratch.reset(new std::uint8_t[bytes]);
  for (std::int64_t h = 0; h < info.interleaved; ++h)
    for (std::int64_t j = 0; j < 2; ++j)
      for (std::int64_t i = 0; i < per / 2; ++i)
        std::memcpy(scratch.get() + (h * per + j * (per / 2) + i) * row, stored.get() + (h * per + 2 * i + j) * row,
                    row);
  return scratch.get();
}

void SafeTensors::check_blocks(const std::string& name, kernels::Precision p, const std::uint8_t* data,
                               std::int64_t count) const {
  const std::int64_t bad = kernels::first_bad_block(p, data, count);
  if (bad >= 0)
    throw Error("loadModel: " + what_ + ": tensor " + quote(name) + " has a non-finite scale in block " +
                std::to_string(bad) + " (" + kernels::file_block(p).name + ")");
}

Tensor SafeTensors::read(const std::string& name, const Shape& expected) const {
  std::unique_ptr<std::uint8_t[]> scratch;
  const std::uint8_t* src = raw(name, expected, scratch);
  const SafeTensorInfo& info = tensors_.at(name);
  Tensor t(info.shape.empty() ? Shape{1} : info.shape);  // a scalar is one value
  const std::int64_t count = static_cast<std::int64_t>(t.data.size());
  if (const kernels::Precision q = quantized_of(info.dtype); kernels::is_quantized(q)) {
    check_blocks(name, q, src, count / kernels::file_block(q).values);
    kernels::dequantize_row(q, src, count, t.data.data());
  } else {
    const kernels::Precision p = precision_of(info.dtype);
    if (p != kernels::Precision::f32) check_finite_16(what_ + ": tensor " + quote(name), src, count, p);
    kernels::widen(src, p, count, t.data.data());
  }
  check_finite("loadModel", (what_ + ": tensor " + quote(name)).c_str(), t.data.data(), count);
  if (const float add = tensors_.at(name).add)
    for (float& x : t.data) x += add;
  return t;
}

std::shared_ptr<const kernels::PackedWeight> SafeTensors::matrix(const std::string& name, std::int64_t rows,
                                                                 std::int64_t cols, bool transposed, std::int64_t first,
                                                                 std::int64_t count) const {
  std::unique_ptr<std::uint8_t[]> scratch;
  const std::uint8_t* whole = raw(name, {rows, cols}, scratch);
  if (count < 0) count = rows;
  if (first < 0 || first + count > rows) throw Error(what_ + ": tensor " + quote(name) + ": rows out of range");
  if (const kernels::Precision q = quantized_of(tensors_.at(name).dtype); kernels::is_quantized(q)) {
    // Rows of blocks along cols: a Linear's [out, in] (or an embedding's [vocab, d]) as the GEMM's B [in, out].
    if (!transposed)
      throw Error(what_ + ": tensor " + quote(name) + " is quantized, which AttnScope reads as a Linear's [out, in]");
    const kernels::FileBlock& f = kernels::file_block(q);
    if (cols % kernels::superblock_rows(q))  // a panel's super-block spans 32 or 256 values of a row, as its blocks do
      throw Error(what_ + ": tensor " + quote(name) + " has rows of " + std::to_string(cols) + " values, not whole " +
                  f.name + " blocks");
    const std::uint8_t* src = whole + first * (cols / f.values * f.bytes);
    check_blocks(name, q, src, count * cols / f.values);
    return std::make_shared<kernels::PackedWeight>(kernels::MatrixSource{src, q, cols, count, true});
  }
  const kernels::Precision p = precision_of(tensors_.at(name).dtype);
  const std::uint8_t* src = whole + first * cols * (p == kernels::Precision::f32 ? 4 : 2);
  if (p == kernels::Precision::f32)
    check_finite("loadModel", (what_ + ": tensor " + quote(name)).c_str(), reinterpret_cast<const float*>(src),
                 count * cols, false, first * cols);
  else
    check_finite_16(what_ + ": tensor " + quote(name), src, count * cols, p, first * cols);
  // B [k, n]: the rows, or their transpose
  const std::int64_t k = transposed ? cols : count, n = transposed ? count : cols;
  return std::make_shared<kernels::PackedWeight>(kernels::MatrixSource{src, p, k, n, transposed});
}

}  // namespace attnscope
