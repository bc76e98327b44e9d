// Packed, register-blocked matrix multiply: the hot loop of projections, FFNs,
// q·kᵀ and weights·v.
//
//   C[m, n] = A[m, k] · B (+ bias[n])     B is [k, n], or [n, k] read transposed
//   (or C += …, with `accumulate`: a weight multiplied a block of its rows at a time)
//
// B is packed in panels of 8 columns (k × 8 floats, contiguous) and each 4 × 8
// block of C is accumulated in registers over k (in chunks of up to 768 steps, each
// added into C): with SIMD128 that is 8 v128 accumulators, 2 loads of B and 4
// broadcasts of A per step of k.
// That is the kernel in wasm, where Eigen 3.4 has no SIMD128 packet code. Natively
// Eigen's own GEMM (SSE/AVX/AVX-512) is faster, so native builds use it for the
// same column ranges; both are held to the plain-loop reference in tests (native
// ctest, and Vitest on the wasm builds).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "attnscope/tensor.hpp"
#include "kernels/packed.hpp"

namespace attnscope::kernels {

struct GemmArgs {
  const float* a = nullptr;
  std::int64_t lda = 0;  // A [m, k], row stride lda
  const float* b = nullptr;
  std::int64_t ldb = 0;  // B [k, n] (row stride ldb), or [n, k] when b_transposed
  bool b_transposed = false;
  float* c = nullptr;
  std::int64_t ldc = 0;  // C [m, n], row stride ldc
  std::int64_t m = 0, n = 0, k = 0;
  const float* bias = nullptr;           // [n] or null
  const void* packed = nullptr;          // B already in panels (PackedWeight::panels, pack_b), or null
  std::int64_t packed_k = 0;             // rows per packed panel when B is their leading k rows; 0: k
  bool streamed = false;                 // B is packed and comes from memory (a model's weight): load panels ahead
  bool accumulate = false;               // C += A·B (+ bias): one block of k of a product over several
  Precision precision = Precision::f32;  // of the packed panels: 16-bit ones are widened a panel at a time

  // A small builder, so that each call names what it sets:
  //   GemmArgs().lhs(a, lda).rhs(b, ldb).out(c, ldc).shape(m, n, k).add(bias)
  GemmArgs& lhs(const float* data, std::int64_t stride) {
    a = data;
    lda = stride;
    return *this;
  }
  GemmArgs& rhs(const float* data, std::int64_t stride, bool transposed = false) {
    b = data;
    ldb = stride;
    b_transposed = transposed;
    return *this;
  }
  GemmArgs& out(float* data, std::int64_t stride) {
    c = data;
    ldc = stride;
    return *this;
  }
  GemmArgs& shape(std::int64_t rows, std::int64_t cols, std::int64_t depth) {
    m = rows;
    n = cols;
    k = depth;
    return *this;
  }
  GemmArgs& add(const float* row_bias) {
    bias = row_bias;
    return *this;
  }
};

// Whether gemm_columns multiplies from panels (wasm). Natively Eigen reads B as it is,
// so nothing needs packing ahead.
#ifdef __wasm_simd128__
inline constexpr bool kPacksB = true;
#else
inline constexpr bool kPacksB = false;
#endif

// op(B) of `g` (its b, ldb, b_transposed, k and n) packed into `panels`, packed_size(k, n) floats.
// (Attention packs its k and v so on every call; a model's weights are PackedWeights.)
void pack_b(const GemmArgs& g, float* panels);

// Computes columns [col_begin, col_end) of C (col_begin a multiple of 8).
// `pack` is scratch for one panel of B, grown as needed (no allocation once warm).
void gemm_columns(const GemmArgs& g, std::int64_t col_begin, std::int64_t col_end, std::vector<float>& pack);

// The 4 × 8 register block's own throughput, in GFLOPS, on one thread with its
// operands in L1 cache (k = 256), run for about `seconds`: the ceiling the GEMM's
// efficiency is measured against.
double micro_kernel_gflops(double seconds);

// The whole of C on one thread.
inline void gemm_serial(const GemmArgs& g, std::vector<float>& pack) { gemm_columns(g, 0, g.n, pack); }

}  // namespace attnscope::kernels
