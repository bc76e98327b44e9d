// A model's weight matrix as the GEMM reads it: packed once into panels of 8 columns (k × 8
// values, contiguous, zero past the last column), in the precision its file holds. 16-bit
// weights (BF16, F16) stay 16-bit in the heap and are widened to float32 a panel at a time,
// inside the multiply (gemm.cpp), so a 0.5B-parameter model needs 1 GB, not 2.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "attnscope/packing.hpp"
#include "attnscope/tensor.hpp"
#include "kernels/simd.hpp"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace attnscope {
class ThreadPool;
}

namespace attnscope::kernels {

inline constexpr std::int64_t kPanelColumns = 8;  // columns of B per packed panel

// How a panel holds its values: float32, 16-bit floats, or one of ggml's quantized formats at the file's own bits per
// value (quantized.hpp): super-blocks of rows, each a header of scales and the codes of 8 columns.
enum class Precision : std::uint8_t { f32, bf16, f16, q8_0, q4_0, q4_k, q6_k };
inline constexpr bool is_quantized(Precision p) { return p >= Precision::q8_0; }
// Bytes per value of the float layouts.
inline constexpr std::int64_t bytes_of(Precision p) { return p == Precision::f32 ? 4 : 2; }
// Rows of a quantized panel's super-block, and its bytes (its 8 columns' share of as many of the file's blocks).
inline constexpr std::int64_t superblock_rows(Precision p) {
  return p == Precision::q8_0 || p == Precision::q4_0 ? 32 : 256;
}
inline constexpr std::int64_t superblock_bytes(Precision p) {
  return p == Precision::q8_0   ? 16 + 32 * 8
         : p == Precision::q4_0 ? 16 + 32 * 4
         : p == Precision::q4_k ? 160 + 256 * 4
                                : 144 + 256 * 6;
}
// Bytes of a panel's first k rows (k a whole number of super-blocks, for a quantized panel).
inline constexpr std::int64_t panel_bytes(std::int64_t k, Precision p) {
  return is_quantized(p) ? k / superblock_rows(p) * superblock_bytes(p) : k * kPanelColumns * bytes_of(p);
}

// One 16-bit value as float32. Exact: bf16 is float32's top half; f16 is rebiased through a
// float multiply, which also places f16's subnormals. Finite inputs only (weights are checked).
inline float widen(std::uint16_t h, Precision p) {
  std::uint32_t bits = p == Precision::bf16 ? std::uint32_t{h} << 16 : std::uint32_t{h & 0x7fffu} << 13;
  float f;
  static_assert(sizeof f == sizeof bits);
  std::memcpy(&f, &bits, 4);
  if (p == Precision::bf16) return f;
  f *= 0x1p112f;  // 2^(127 − 15)
  std::memcpy(&bits, &f, 4);
  bits |= std::uint32_t{h & 0x8000u} << 16;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Values v[0 .. count) of `precision` (little-endian) as float32 into out.
void widen(const void* v, Precision precision, std::int64_t count, float* out);

// A 16-bit panel row holds its eight columns in the order [c0, c4, c1, c5, c2, c6, c3, c7]: read as
// four 32-bit lanes, the low halves are columns 0-3 and the high halves columns 4-7, so a row widens
// with one shift or mask per half instead of an extend and a shift. (The decoding step, one row of A
// against every weight, is bound by these instructions.) Slot of column j:
inline constexpr std::int64_t panel_slot(std::int64_t j, Precision p) {
  return p == Precision::f32 ? j : j < 4 ? 2 * j : 2 * (j - 4) + 1;
}

#ifdef __wasm_simd128__
// Row p of a 16-bit panel as float32: columns 0-3 into b0, 4-7 into b1.
template <Precision P>
inline void widen_panel_row(const std::uint16_t* row, v128_t& b0, v128_t& b1) {
  const v128_t x = wasm_v128_load(row);
  if constexpr (P == Precision::bf16) {
    b0 = wasm_i32x4_shl(x, 16);                                          // low halves: bf16 is float32's top half
    b1 = wasm_v128_and(x, wasm_i32x4_splat(std::int32_t(0xffff0000u)));  // high halves, already in place
  } else {
    const auto f16 = [](v128_t w) {  // w: four f16 values zero-extended to 32 bits, rebiased as widen() does
      const v128_t magnitude = wasm_i32x4_splat(0x7fff);
      const v128_t f = wasm_f32x4_mul(wasm_i32x4_shl(wasm_v128_and(w, magnitude), 13), wasm_f32x4_splat(0x1p112f));
      return wasm_v128_or(f, wasm_i32x4_shl(wasm_v128_andnot(w, magnitude), 16));  // the sign bit
    };
    b0 = f16(wasm_v128_and(x, wasm_i32x4_splat(0xffff)));
    b1 = f16(wasm_u32x4_shr(x, 16));
  }
}
#endif

// B [k, n] as a file holds it: row-major [k, n], or [n, k] read transposed (a Linear's [out, in]).
// A quantized `precision`: [n, k] in ggml's blocks of that format along k (transposed).
struct MatrixSource {
  const void* data;
  Precision precision;
  std::int64_t k, n;
  bool transposed;
};

// Floats (or 16-bit values) in the panels of a B with k rows and n columns: ceil(n / 8) panels of k × 8.
std::int64_t packed_size(std::int64_t k, std::int64_t n);

// Rows of a streamed weight [k, n] read at a time: about 128 KB, so that the block and its panels stay
// in cache while they are packed and multiplied.
inline std::int64_t stream_block_rows(std::int64_t n) { return n > 4096 ? 8 : (32 * 1024) / n; }

// Columns [col_begin, col_end) (col_begin a multiple of 8) of `count` rows [count, n], row-major, into
// rows [first, first + count) of their panels, each `panel_rows` rows long, at `panels` (the panels of
// the whole B). False if any of those values is NaN or ±Infinity: checked as they pass.
bool pack_rows_into(const float* rows, std::int64_t n, std::int64_t count, std::int64_t col_begin, std::int64_t col_end,
                    float* panels, std::int64_t panel_rows, std::int64_t first);

// Every block of rows of a streamed weight [k, n] in turn, for both ways of multiplying one (read whole,
// or a block at a time: kernels.cpp): rows [first, first + count) are read from `source` into `rows` on
// the calling thread (with other threads, while they work on the block before), then the block's columns
// are split in up to `shares` runs of whole pairs of panels (as pack_rows_into goes) and task(rows, first,
// count, col_begin, col_end, worker) runs for each, on the pool's threads (on this one alone without a
// pool). A task returns whether the values it packed were all finite; if one was not, the source rejects
// the block.
using BlockTask = std::function<bool(const float* rows, std::int64_t first, std::int64_t count, std::int64_t col_begin,
                                     std::int64_t col_end, int worker)>;
void for_each_block(const RowSource& source, std::int64_t k, std::int64_t n, ThreadPool* pool, std::int64_t shares,
                    const BlockTask& task);

class PackedWeight {
 public:
  // A float32 B [k, n] at b, which must stay there: packed on first use, thread-safe. The encoders'
  // weights, read as float32 Tensors, and the layers JS keeps in the engine.
  PackedWeight(const float* b, std::int64_t k, std::int64_t n);
  // Packed now, keeping the source's precision (and natively also a row-major float32 copy of B
  // for Eigen's GEMM, which does its own packing). The source may go away afterwards.
  explicit PackedWeight(const MatrixSource& source);
  // A float32 B [k, n] read from `source` (StreamedWeight): GEMMs with few rows multiply it a block
  // of rows at a time as it arrives (kernels.cpp); the first call to panels() (or natively matrix())
  // reads every block into panels, checking each. On the calling thread only: the source is JS.
  PackedWeight(std::int64_t k, std::int64_t n, const RowSource& source);
  // The source of a streamed weight whose panels are not read yet, else null.
  const RowSource* source() const { return source_ && !whole_ ? source_ : nullptr; }
  // A streamed weight read whole into panels now, packed on every thread of `pool`, or with none on the
  // calling thread alone (as panels() would), while the pool's threads may be busy with other work. Nothing
  // for other weights, or once read.
  void read(ThreadPool* pool) const;

  std::int64_t k() const { return k_; }
  std::int64_t n() const { return n_; }
  Precision precision() const { return precision_; }
  // The panels (packing them the first time, for the float32 constructor).
  const void* panels() const;
  // The panels of columns [col, …): col a multiple of 8.
  const void* panels_from(std::int64_t col) const;
  // B row-major float32 [k, n]: natively, where Eigen multiplies; null in wasm for packed sources.
  const float* matrix() const;
  // Column j of B [k] as float32: a tied language-model head's embedding row j.
  void column(std::int64_t j, float* out) const;
  // B [k, n] as float32.
  Tensor unpack() const;
  // x [k] cut into blocks of `block` rows (k a multiple of it), each through its own rows of B:
  // out [k / block, n], row b = x[b·block, (b+1)·block) · B[b·block, (b+1)·block). One head's output through its
  // rows of W_O, for every head at once, reading B once in its own precision.
  void block_rows(const float* x, std::int64_t block, float* out) const;
  // Heap bytes held.
  std::int64_t bytes() const;

 private:
  // Panel c as float32 or 16-bit rows: itself, or dequantized into `scratch` (then `as` is f32).
  const std::uint8_t* panel_as_read(std::int64_t c, std::vector<float>& scratch, Precision& as) const;
  // Every block of a streamed weight into panels_ (natively also matrix_), checked; packed on the
  // pool's threads if one is given.
  void read_whole(ThreadPool* pool) const;

  const float* b_ = nullptr;  // float32 source (first constructor)
  std::int64_t k_, n_;
  const RowSource* source_ = nullptr;
  mutable bool whole_ = false;  // a streamed weight read whole
  Precision precision_ = Precision::f32;
  mutable std::once_flag once_;
  // Written in full right after they are sized.
  mutable Buffer<std::uint8_t> panels_;
  mutable std::vector<float> matrix_;  // natively, for packed and streamed sources
};

// fn(first, last) over blocks of the panels [0, count) on the pool's threads: for passes over a whole weight.
void for_panels(ThreadPool& pool, std::int64_t count, const std::function<void(std::int64_t, std::int64_t)>& fn);

// Marks a model's float32 weight matrix [k, n] for packing on first use (and as checked at load).
void prepare_weight(Tensor& w);

}  // namespace attnscope::kernels
