#include "kernels/gemm.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace attnscope::kernels {

namespace {

constexpr std::int64_t kRows = 4;  // rows of A per register block

#ifdef __wasm_simd128__
// acc + x·b, four lanes at a time.
inline v128_t multiply_add(v128_t x, v128_t b, v128_t acc) {
#ifdef __wasm_relaxed_simd__
  // Relaxed SIMD's f32x4.relaxed_madd(x, b, acc) = x·b + acc, one fused instruction where the CPU has FMA. Clang 14
  // emits its prototype opcode instead, which the build rewrites to the shipped one (cpp/tools/relaxed-simd.mjs):
  // the arguments are in the shipped instruction's order.
  return __builtin_wasm_fma_f32x4(x, b, acc);
#else
  return wasm_f32x4_add(acc, wasm_f32x4_mul(x, b));  // SIMD128 has no fused multiply-add
#endif
}
#endif

// pack[p * 8 + j] = op(B)[p, col + j], zero past the last column. [k, 8]
void pack_panel(const GemmArgs& g, std::int64_t col, float* pack) {
  const std::int64_t width = std::min(kPanelColumns, g.n - col);
  if (g.b_transposed) {
    for (std::int64_t j = 0; j < kPanelColumns; ++j) {
      const float* row = g.b + (col + j) * g.ldb;  // B is [n, k]: column col+j of op(B) is row col+j of B
      for (std::int64_t p = 0; p < g.k; ++p) pack[p * kPanelColumns + j] = j < width ? row[p] : 0.0f;
    }
  } else {
    for (std::int64_t p = 0; p < g.k; ++p) {
      const float* row = g.b + p * g.ldb + col;
      std::int64_t j = 0;
      for (; j < width; ++j) pack[p * kPanelColumns + j] = row[j];
      for (; j < kPanelColumns; ++j) pack[p * kPanelColumns + j] = 0.0f;
    }
  }
}

// A model's weight comes from memory on every call (a model's weights do not fit in
// cache). The first 4 rows to use a panel of it need 8 bytes of B per cycle, more than
// memory delivers, and wait; the other rows find the panel in cache and leave memory
// idle. So every block also loads one cache line of the next panel every kTouchEvery
// steps of k (wasm has no prefetch instruction), and the next panel arrives while this
// one computes. Measured on BERT-base at 32 tokens: 174 → 158 ms on one thread.
struct Ahead {
  const std::uint8_t* line = nullptr;  // the next line of the next panel to load
  std::int64_t lines = 0;              // lines of it not loaded yet
};
constexpr std::int64_t kTouchEvery = 8;  // every line once, one per 8 steps of k (tried 4, 16, 32; every other line)
constexpr std::int64_t kLineBytes = 64;

// C[r0 .. r0+R, col .. col+width) = A[r0 .. r0+R, :] · panel (+ bias)
template <int R>
void block(const GemmArgs& g, std::int64_t r0, std::int64_t col, const float* pack, Ahead* ahead = nullptr) {
  const std::int64_t width = std::min(kPanelColumns, g.n - col);
  alignas(16) float out[R][kPanelColumns];
  const float* a[R];
  for (int r = 0; r < R; ++r) a[r] = g.a + (r0 + r) * g.lda;
#ifdef __wasm_simd128__
  v128_t lo[R], hi[R];
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = wasm_f32x4_splat(0.0f);
  const auto step = [&](std::int64_t p) {
    const v128_t b0 = wasm_v128_load(pack + p * kPanelColumns);
    const v128_t b1 = wasm_v128_load(pack + p * kPanelColumns + 4);
    for (int r = 0; r < R; ++r) {
      const v128_t x = wasm_f32x4_splat(a[r][p]);
      lo[r] = multiply_add(x, b0, lo[r]);
      hi[r] = multiply_add(x, b1, hi[r]);
    }
  };
  std::int64_t p = 0;
  if (ahead && ahead->lines > 0) {
    v128_t sink = wasm_f32x4_splat(0.0f);
    const std::int64_t touches = std::min(ahead->lines, g.k / kTouchEvery);
    for (std::int64_t t = 0; t < touches; ++t) {
      sink = wasm_v128_or(sink, wasm_v128_load(ahead->line + t * kLineBytes));
      for (std::int64_t q = 0; q < kTouchEvery; ++q) step(p + q);
      p += kTouchEvery;
    }
    ahead->line += touches * kLineBytes;
    ahead->lines -= touches;
    [[maybe_unused]] volatile float kept = wasm_f32x4_extract_lane(sink, 0);  // so that the loads stay
  }
  for (; p < g.k; ++p) step(p);
  if (width == kPanelColumns) {  // a whole panel: straight from the registers
    const v128_t bias0 = g.bias ? wasm_v128_load(g.bias + col) : wasm_f32x4_splat(0.0f);
    const v128_t bias1 = g.bias ? wasm_v128_load(g.bias + col + 4) : wasm_f32x4_splat(0.0f);
    for (int r = 0; r < R; ++r) {
      float* c = g.c + (r0 + r) * g.ldc + col;
      wasm_v128_store(c, wasm_f32x4_add(lo[r], bias0));
      wasm_v128_store(c + 4, wasm_f32x4_add(hi[r], bias1));
    }
    return;
  }
  for (int r = 0; r < R; ++r) {
    wasm_v128_store(out[r], lo[r]);
    wasm_v128_store(out[r] + 4, hi[r]);
  }
#else
  (void)ahead;  // natively nothing loads ahead: Eigen's GEMM runs there
  for (int r = 0; r < R; ++r)
    for (std::int64_t j = 0; j < kPanelColumns; ++j) out[r][j] = 0.0f;
  for (std::int64_t p = 0; p < g.k; ++p)
    for (int r = 0; r < R; ++r) {
      const float x = a[r][p];
      for (std::int64_t j = 0; j < kPanelColumns; ++j) out[r][j] += x * pack[p * kPanelColumns + j];
    }
#endif
  for (int r = 0; r < R; ++r) {
    float* c = g.c + (r0 + r) * g.ldc + col;
    for (std::int64_t j = 0; j < width; ++j) c[j] = out[r][j] + (g.bias ? g.bias[col + j] : 0.0f);
  }
}

}  // namespace

void gemm_columns(const GemmArgs& g, std::int64_t col_begin, std::int64_t col_end, std::vector<float>& pack) {
#ifdef __wasm_simd128__
  const bool widened = g.packed && g.precision != Precision::f32;  // 16-bit panels become float32 in `pack`
  const std::int64_t panel_rows = g.packed_k ? g.packed_k : g.k, element = bytes_of(g.precision);
  if ((!g.packed || widened) && static_cast<std::int64_t>(pack.size()) < panel_rows * kPanelColumns)
    pack.resize(static_cast<std::size_t>(panel_rows * kPanelColumns));
  const auto* packed = static_cast<const std::uint8_t*>(g.packed);
  for (std::int64_t col = col_begin; col < col_end; col += kPanelColumns) {
    const std::int64_t panel_elements = panel_rows * kPanelColumns;
    const std::uint8_t* source = g.packed ? packed + (col / kPanelColumns) * panel_elements * element : nullptr;
    const float* panel = source && !widened ? reinterpret_cast<const float*>(source) : pack.data();
    if (!g.packed) pack_panel(g, col, pack.data());
    if (widened) widen(source, g.precision, g.k * kPanelColumns, pack.data());
    Ahead ahead;  // the next panel of a weight, loaded a line at a time by this panel's blocks
    if (g.streamed && col + kPanelColumns < col_end)
      ahead = {source + panel_elements * element, panel_elements * element / kLineBytes};
    std::int64_t r = 0;
    for (; r + kRows <= g.m; r += kRows) block<kRows>(g, r, col, panel, &ahead);
    switch (g.m - r) {
      case 3:
        block<3>(g, r, col, panel);
        break;
      case 2:
        block<2>(g, r, col, panel);
        break;
      case 1:
        block<1>(g, r, col, panel);
        break;
      default:
        break;
    }
  }
#else
  // Natively, Eigen's own GEMM (SSE/AVX/AVX-512 packets) is the faster kernel: use it for this column range.
  using Strided =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<> >;
  using StridedOut =
      Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<> >;
  const std::int64_t width = std::min(col_end, g.n) - col_begin;
  if (width <= 0) return;
  const Strided a(g.a, g.m, g.k, Eigen::OuterStride<>(g.lda));
  StridedOut c(g.c + col_begin, g.m, width, Eigen::OuterStride<>(g.ldc));
  if (g.b_transposed) {
    const Strided b(g.b + col_begin * g.ldb, width, g.k, Eigen::OuterStride<>(g.ldb));
    c.noalias() = a * b.transpose();
  } else {
    const Strided b(g.b + col_begin, g.k, width, Eigen::OuterStride<>(g.ldb));
    c.noalias() = a * b;
  }
  if (g.bias) c.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(g.bias + col_begin, width);
  (void)pack;
#endif
}

void pack_b(const GemmArgs& g, float* panels) {
  for (std::int64_t col = 0; col < g.n; col += kPanelColumns) pack_panel(g, col, panels + col * g.k);
}

// 1,000 register blocks over a packed panel. Not inlined: V8 compiles wasm functions
// with its baseline compiler first and switches to optimized code between calls, never
// within one, so the measurement must call this many times.
[[gnu::noinline]] void thousand_blocks(const GemmArgs& g, const float* pack) {
  for (int i = 0; i < 1000; ++i) block<kRows>(g, 0, 0, pack);
}

double micro_kernel_gflops(double seconds) {
  constexpr std::int64_t k = 256;
  std::vector<float> a(kRows * k, 0.5f), b(k * kPanelColumns, 0.25f), pack(k * kPanelColumns), c(kRows * kPanelColumns);
  const GemmArgs g{a.data(),      k, b.data(), kPanelColumns, false, c.data(), kPanelColumns, kRows,
                   kPanelColumns, k, nullptr};
  pack_panel(g, 0, pack.data());
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  for (const auto warm = clock::now(); since(warm) < seconds / 3;) thousand_blocks(g, pack.data());
  const auto start = clock::now();
  std::int64_t calls = 0;
  do {
    thousand_blocks(g, pack.data());
    calls += 1000;
  } while (since(start) < seconds);
  return 2.0 * kRows * kPanelColumns * k * static_cast<double>(calls) / since(start) / 1e9 + 0.0 * c[0];
}

}  // namespace attnscope::kernels
