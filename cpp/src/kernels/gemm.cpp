#include "kernels/gemm.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/quantized.hpp"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace attnscope::kernels {

namespace {

constexpr std::int64_t kRows = 4;  // rows of A per register block

// pack[p * 8 + j] = op(B)[p, col + j], zero past the last column. [k, 8]
void pack_panel(const GemmArgs& g, std::int64_t col, float* pack) {
  const std::int64_t width = std::min(kPanelColumns, g.n - col);
  if (g.b_transposed) {
    for (std::int64_t j = 0; j < kPanelColumns; ++j) {
      const float* row = g.b + (col + j) * g.ldb;  // B is [n, k]: column col+j of op(B) is row col+j of B
      for (std::int64_t p = 0; p < g.k; ++p) pack[p * kPanelColumns + j] = j < width ? row[p] : 0.0f;
    }
  } else {
    if (width == kPanelColumns) {  // a whole panel: each row's eight floats as two v128 moves
      for (std::int64_t p = 0; p < g.k; ++p) std::memcpy(pack + p * kPanelColumns, g.b + p * g.ldb + col, 32);
      return;
    }
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
// one computes.
struct Ahead {
  const std::uint8_t* line = nullptr;  // the next line of the next panel to load
  std::int64_t lines = 0;              // lines of it not loaded yet
};
constexpr std::int64_t kTouchEvery = 8;  // every line once, one per 8 steps of k
constexpr std::int64_t kLineBytes = 64;

// A panel of B as the register blocks read it: eight float32 columns of a row, as two v128.
struct FloatPanel {
  using Element = float;
#ifdef __wasm_simd128__
  static void row(const float* at, v128_t& b0, v128_t& b1) {
    b0 = wasm_v128_load(at);
    b1 = wasm_v128_load(at + 4);
  }
#endif
};

#ifdef __wasm_simd128__
// A 16-bit panel, widened in registers a row at a time (packed.hpp): in a decoding step's few rows,
// where widening the whole panel into scratch first would cost more than the multiply.
template <Precision P>
struct HalfPanel {
  using Element = std::uint16_t;
  static void row(const std::uint16_t* at, v128_t& b0, v128_t& b1) { widen_panel_row<P>(at, b0, b1); }
};

// The first k rows of a 16-bit panel as float32 rows of eight, in column order, into `out`.
template <Precision P>
void widen_panel(const std::uint16_t* panel, std::int64_t k, float* out) {
  for (std::int64_t p = 0; p < k; ++p) {
    v128_t b0, b1;
    HalfPanel<P>::row(panel + p * kPanelColumns, b0, b1);
    wasm_v128_store(out + p * kPanelColumns, b0);
    wasm_v128_store(out + p * kPanelColumns + 4, b1);
  }
}

// C[r0 .. r0+R, col .. col+width) = the accumulated rows lo | hi (+ bias).
template <int R>
void store_rows(const GemmArgs& g, std::int64_t r0, std::int64_t col, const v128_t* lo, const v128_t* hi) {
  const std::int64_t width = std::min(kPanelColumns, g.n - col);
  if (width == kPanelColumns) {  // a whole panel: straight from the registers
    const v128_t bias0 = g.bias ? wasm_v128_load(g.bias + col) : wasm_f32x4_splat(0.0f);
    const v128_t bias1 = g.bias ? wasm_v128_load(g.bias + col + 4) : wasm_f32x4_splat(0.0f);
    for (int r = 0; r < R; ++r) {
      float* c = g.c + (r0 + r) * g.ldc + col;
      v128_t c0 = wasm_f32x4_add(lo[r], bias0), c1 = wasm_f32x4_add(hi[r], bias1);
      if (g.accumulate) c0 = wasm_f32x4_add(wasm_v128_load(c), c0), c1 = wasm_f32x4_add(wasm_v128_load(c + 4), c1);
      wasm_v128_store(c, c0);
      wasm_v128_store(c + 4, c1);
    }
    return;
  }
  for (int r = 0; r < R; ++r) {
    alignas(16) float out[kPanelColumns];
    wasm_v128_store(out, lo[r]);
    wasm_v128_store(out + 4, hi[r]);
    float* c = g.c + (r0 + r) * g.ldc + col;
    for (std::int64_t j = 0; j < width; ++j)
      c[j] = (g.accumulate ? c[j] : 0.0f) + (out[j] + (g.bias ? g.bias[col + j] : 0.0f));
  }
}

// The 1-3 rows of A in a decoding step (or a GEMM's last rows) against T panels at once, `apart`
// columns apart. A decoding step reads every weight once and does little with it, so two things
// decide its speed (`npm run bench:decode` times it):
// - registers: V8 has 16 vector registers. The R·T·2 sums, R broadcasts and a row of each panel
//   must fit, or V8 keeps sums on the stack, and each step waits for a store and a load.
// - streams: a single thread reads one sequential stream slower than four streams at least four
//   panels apart (as the CPU's prefetchers follow each). Panels side by side count as one.
// So one row of A goes against four panels far apart, two rows against two, three against one.
template <int R, int T, typename Panel>
void narrow_panels(const GemmArgs& g, std::int64_t col, std::int64_t apart, const typename Panel::Element* first,
                   std::int64_t panel_elements) {
  v128_t lo[T][R], hi[T][R];
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < R; ++r) lo[t][r] = hi[t][r] = wasm_f32x4_splat(0.0f);
  const typename Panel::Element* b[T];
  for (int t = 0; t < T; ++t) b[t] = first + t * (apart / kPanelColumns) * panel_elements;
  const float* a = g.a;
  for (std::int64_t p = 0; p < g.k; ++p, ++a) {
    v128_t x[R];
    for (int r = 0; r < R; ++r) x[r] = wasm_v128_load32_splat(a + r * g.lda);
    for (int t = 0; t < T; ++t) {
      v128_t b0, b1;
      Panel::row(b[t] + p * kPanelColumns, b0, b1);
      for (int r = 0; r < R; ++r) {
        lo[t][r] = multiply_add(x[r], b0, lo[t][r]);
        hi[t][r] = multiply_add(x[r], b1, hi[t][r]);
      }
    }
  }
  for (int t = 0; t < T; ++t) store_rows<R>(g, 0, col + t * apart, lo[t], hi[t]);
}

// Every row of C, columns [col_begin, col_end), when A has fewer than kRows rows and B is packed:
// T streams over equal shares of the panels, then the panels left over one at a time.
template <int R, typename Panel>
void narrow(const GemmArgs& g, std::int64_t col_begin, std::int64_t col_end, const typename Panel::Element* panels,
            std::int64_t panel_elements) {
  constexpr int T = R == 1 ? 4 : R == 2 ? 2 : 1;
  const std::int64_t count = (col_end - col_begin + kPanelColumns - 1) / kPanelColumns;
  const std::int64_t share = count / T, apart = share * kPanelColumns;
  for (std::int64_t i = 0; i < share; ++i)
    narrow_panels<R, T, Panel>(g, col_begin + i * kPanelColumns, apart, panels + i * panel_elements, panel_elements);
  for (std::int64_t i = share * T; i < count; ++i)
    narrow_panels<R, 1, Panel>(g, col_begin + i * kPanelColumns, 0, panels + i * panel_elements, panel_elements);
}

// A decoding step's row of A as integers, for the codes to multiply exactly in i32x4.dot_i16x8_s (two rows of codes
// and two values of A per lane, summed in int32): each group of a quantized format's rows (32 values, 16 for Q6_K)
// as integers of 30 bits on the group's own power of two, a = (hi · 2^15 + lo) · unit, hi in [−2^14, 2^14] and lo in
// [0, 2^15) as int16. That is 29 bits of each group's largest value where float32 keeps 24, and the sums of code ·
// hi and code · lo over a group stay below 2^27 (Q8_0's codes, the widest, have 8 bits), so a group's dot product is
// exact until its two sums become float32. A group with a value that is not finite has a NaN unit, as float32
// arithmetic would give; one whose largest value is under 2^-121, which float32 holds only as a subnormal, comes out as
// zeros.
struct SplitRow {
  std::vector<std::int16_t> hi, lo;
  std::vector<float> unit, sum;  // per group: 2^e, and the sum of its values (for the mins)
};

void split_row(const float* a, std::int64_t k, std::int64_t group, SplitRow& out) {
  const auto size = static_cast<std::size_t>(k), groups = static_cast<std::size_t>(k / group);
  out.hi.assign(size, 0), out.lo.assign(size, 0), out.unit.assign(groups, 0.0f), out.sum.assign(groups, 0.0f);
  for (std::size_t q = 0; q < groups; ++q) {
    const float* x = a + q * group;
    double largest = 0, sum = 0;
    for (std::int64_t p = 0; p < group; ++p) largest = std::max(largest, std::abs(double{x[p]})), sum += x[p];
    out.sum[q] = static_cast<float>(sum);
    if (!std::isfinite(largest) || std::isnan(sum)) {
      out.unit[q] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    if (largest == 0) continue;
    int e = 0;
    std::frexp(largest, &e);  // largest < 2^e, so that every value times 2^(29 − e) is at most 2^29
    const double scale = std::ldexp(1.0, 29 - e);
    out.unit[q] = static_cast<float>(std::ldexp(1.0, e - 29));
    for (std::int64_t p = 0; p < group; ++p) {
      const auto v = static_cast<std::int32_t>(std::nearbyint(double{x[p]} * scale));
      const std::int32_t hi = v >> 15;  // floor(v / 2^15): lo = v − hi · 2^15 is never negative
      out.hi[q * group + p] = static_cast<std::int16_t>(hi);
      out.lo[q * group + p] = static_cast<std::int16_t>(v - hi * 32768);
    }
  }
}

// The row of A against T quantized panels at once, `apart` columns apart (as narrow_panels), codes and A as
// integers (SplitRow): per group, per panel, two rows of codes at a time (group_code_pairs) into int32 sums of code ·
// hi and code · lo for columns 0-3 and 4-7, which become float32 once, at the group's end, times its unit and the
// columns' scales; a 4-bit panel's mins (and Q6_K's 32 · scale, its codes stored 0-63) come off as min · the group's
// sum of A. The panels go a super-block at a time each; four at once, but one for Q6_K, whose decoding needs the
// registers the others' sums would take (`QUANTIZED_ONLY=1 npm run bench:decode` times the choices).
template <int T, Precision P>
void narrow_quantized(const GemmArgs& g, std::int64_t col, std::int64_t apart, const std::uint8_t* first,
                      std::int64_t panel_size, const SplitRow& a) {
  constexpr std::int64_t kRowsPer = superblock_rows(P), kSize = superblock_bytes(P), kGroup = group_rows(P);
  constexpr bool kMins = P != Precision::q8_0;
  // Q6_K's one stream came from memory at two thirds of the speed it runs in cache: each group also loads its share
  // of the next super-block's lines (wasm has no prefetch instruction), which arrive while it computes. The other
  // formats' four streams were slower so.
  constexpr std::int64_t kAhead = P == Precision::q6_k ? (kSize + kLineBytes - 1) / kLineBytes : 0;
  constexpr std::int64_t kAheadEach = (kAhead + kRowsPer / kGroup - 1) / (kRowsPer / kGroup);
  const std::int64_t superblocks = g.k / kRowsPer;
  v128_t sink = wasm_f32x4_splat(0.0f);
  v128_t lo[T], hi[T];
  for (int t = 0; t < T; ++t) lo[t] = hi[t] = wasm_f32x4_splat(0.0f);
  const std::uint8_t* b[T];
  for (int t = 0; t < T; ++t) b[t] = first + t * (apart / kPanelColumns) * panel_size;
  for (std::int64_t s = 0; s < superblocks; ++s)
    for (int t = 0; t < T; ++t) {
      const std::uint8_t* sb = b[t] + s * kSize;
      for (std::int64_t q = 0; q < kRowsPer / kGroup; ++q) {
        const std::int64_t group = s * (kRowsPer / kGroup) + q;
        const std::int16_t *ah = a.hi.data() + group * kGroup, *al = a.lo.data() + group * kGroup;
        if (kAhead && s + 1 < superblocks)
          for (std::int64_t i = q * kAheadEach; i < std::min(kAhead, (q + 1) * kAheadEach); ++i)
            sink = wasm_v128_or(sink, wasm_v128_load(sb + kSize + i * kLineBytes));
        v128_t h0 = wasm_i32x4_splat(0), h1 = h0, l0 = h0, l1 = h0;
        group_code_pairs<P>(sb, q, [&](int row, v128_t c0, v128_t c1) {
          const v128_t xh = wasm_v128_load32_splat(ah + row), xl = wasm_v128_load32_splat(al + row);
          h0 = wasm_i32x4_add(h0, wasm_i32x4_dot_i16x8(c0, xh)), h1 = wasm_i32x4_add(h1, wasm_i32x4_dot_i16x8(c1, xh));
          l0 = wasm_i32x4_add(l0, wasm_i32x4_dot_i16x8(c0, xl)), l1 = wasm_i32x4_add(l1, wasm_i32x4_dot_i16x8(c1, xl));
        });
        const v128_t unit = wasm_v128_load32_splat(a.unit.data() + group);
        const v128_t high = wasm_f32x4_mul(unit, wasm_f32x4_splat(32768.0f));
        const v128_t d0 =
            multiply_add(wasm_f32x4_convert_i32x4(l0), unit, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(h0), high));
        const v128_t d1 =
            multiply_add(wasm_f32x4_convert_i32x4(l1), unit, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(h1), high));
        v128_t s0, s1, m0, m1;
        group_scales<P>(sb, q, s0, s1, m0, m1);
        if constexpr (P == Precision::q6_k)
          m0 = wasm_f32x4_mul(s0, wasm_f32x4_splat(32.0f)), m1 = wasm_f32x4_mul(s1, wasm_f32x4_splat(32.0f));
        lo[t] = multiply_add(d0, s0, lo[t]);
        hi[t] = multiply_add(d1, s1, hi[t]);
        if constexpr (kMins) {
          const v128_t sum = wasm_f32x4_neg(wasm_v128_load32_splat(a.sum.data() + group));
          lo[t] = multiply_add(sum, m0, lo[t]);
          hi[t] = multiply_add(sum, m1, hi[t]);
        }
      }
    }
  for (int t = 0; t < T; ++t) store_rows<1>(g, 0, col + t * apart, &lo[t], &hi[t]);
  [[maybe_unused]] volatile float kept = wasm_f32x4_extract_lane(sink, 0);  // so that the loads stay
}

// Every column in [col_begin, col_end) of a decoding step's one row against quantized panels. Two or three rows (a
// few characters typed) dequantize each panel once into scratch, as many rows do, which costs about what decoding it
// per row in registers would, in a third of the code.
template <Precision P>
void narrow_quantized_row(const GemmArgs& g, std::int64_t col_begin, std::int64_t col_end, const std::uint8_t* panels,
                          std::int64_t panel_size) {
  constexpr int T = P == Precision::q6_k ? 1 : 4;
  SplitRow a;
  split_row(g.a, g.k, group_rows(P), a);
  const std::int64_t count = (col_end - col_begin + kPanelColumns - 1) / kPanelColumns;
  const std::int64_t share = count / T, apart = share * kPanelColumns;
  for (std::int64_t i = 0; i < share; ++i)
    narrow_quantized<T, P>(g, col_begin + i * kPanelColumns, apart, panels + i * panel_size, panel_size, a);
  for (std::int64_t i = share * T; i < count; ++i)
    narrow_quantized<1, P>(g, col_begin + i * kPanelColumns, 0, panels + i * panel_size, panel_size, a);
}

template <typename Panel>
void narrow_rows(const GemmArgs& g, std::int64_t col_begin, std::int64_t col_end, const typename Panel::Element* panels,
                 std::int64_t panel_elements) {
  if (g.m == 1) narrow<1, Panel>(g, col_begin, col_end, panels, panel_elements);
  if (g.m == 2) narrow<2, Panel>(g, col_begin, col_end, panels, panel_elements);
  if (g.m == 3) narrow<3, Panel>(g, col_begin, col_end, panels, panel_elements);
}
#endif

// C[r0 .. r0+R, col .. col+width) = A[r0 .. r0+R, :] · panel (+ bias)
template <int R>
void block(const GemmArgs& g, std::int64_t r0, std::int64_t col, const float* pack, Ahead* ahead = nullptr) {
  const float* a[R];
  for (int r = 0; r < R; ++r) a[r] = g.a + (r0 + r) * g.lda;
#ifdef __wasm_simd128__
  v128_t lo[R], hi[R];
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = wasm_f32x4_splat(0.0f);
  // Steps of k as 32-bit ints, as wasm's addresses are: with a 64-bit index every step's addresses took i64
  // arithmetic and a wrap, and V8's code for SIMD128's multiply then add ran a fifth slower (`npm run bench:gemm`).
  const auto step = [&](int p) {
    const v128_t b0 = wasm_v128_load(pack + p * int{kPanelColumns});
    const v128_t b1 = wasm_v128_load(pack + p * int{kPanelColumns} + 4);
    for (int r = 0; r < R; ++r) {
      const v128_t x = wasm_v128_load32_splat(a[r] + p);
      lo[r] = multiply_add(x, b0, lo[r]);
      hi[r] = multiply_add(x, b1, hi[r]);
    }
  };
  int p = 0;
  const int k = static_cast<int>(g.k), every = static_cast<int>(kTouchEvery), line = static_cast<int>(kLineBytes);
  if (ahead && ahead->lines > 0) {
    v128_t sink = wasm_f32x4_splat(0.0f);
    const int touches = static_cast<int>(std::min<std::int64_t>(ahead->lines, k / every));
    for (int t = 0; t < touches; ++t) {
      sink = wasm_v128_or(sink, wasm_v128_load(ahead->line + t * line));
      for (int q = 0; q < every; ++q) step(p + q);
      p += every;
    }
    ahead->line += touches * kLineBytes;
    ahead->lines -= touches;
    [[maybe_unused]] volatile float kept = wasm_f32x4_extract_lane(sink, 0);  // so that the loads stay
  }
  for (; p < k; ++p) step(p);
  store_rows<R>(g, r0, col, lo, hi);
#else
  (void)ahead;  // natively nothing loads ahead: Eigen's GEMM runs there
  float out[R][kPanelColumns] = {};
  for (std::int64_t p = 0; p < g.k; ++p)
    for (int r = 0; r < R; ++r)
      for (std::int64_t j = 0; j < kPanelColumns; ++j) out[r][j] += a[r][p] * pack[p * kPanelColumns + j];
  const std::int64_t width = std::min(kPanelColumns, g.n - col);
  for (int r = 0; r < R; ++r) {
    float* c = g.c + (r0 + r) * g.ldc + col;
    for (std::int64_t j = 0; j < width; ++j)
      c[j] = (g.accumulate ? c[j] : 0.0f) + (out[r][j] + (g.bias ? g.bias[col + j] : 0.0f));
  }
#endif
}

#ifdef __wasm_simd128__
// Rows of A that one pass multiplies by every panel of a column range before the next rows: at most 640 KB of A
// (a chunk of k's columns of them, below), which stays in a 1 MB L2 cache while the panels go by. A pass over every
// row per panel would bring a long A back from memory (or the last-level cache) once per panel: A at n = 4096, d 768
// is 12 MB (`npm run bench:gemm` times that projection). Each pass reads B again, and packs or widens its panels
// again when they are not float32 panels already: per value of B, one load or conversion against the pass's (rows per
// pass) multiply-adds. So the rows are split into as few passes as fit, of equal size: ViT-B/16's 197 rows at k = 768
// (605 KB) in one, where passes of 256 KB read each weight three times.
constexpr std::int64_t kPassFloats = 160 * 1024;
std::int64_t rows_per_pass(std::int64_t m, std::int64_t k) {
  const std::int64_t most = std::max(kRows, kPassFloats / std::max<std::int64_t>(k, 1) / kRows * kRows);
  const std::int64_t passes = (m + most - 1) / most, rows = (m + passes - 1) / passes;
  return (rows + kRows - 1) / kRows * kRows;
}

// Steps of k per chunk: a long k (an FFN's output, k = 3072) is multiplied in equal chunks of at most this many, each
// added into C, so that a panel's chunk (24 KB) stays in a 48 KB L1 cache while every block of the pass's rows goes
// by it, where a whole panel at k = 3072 (96 KB) came from L2 for each block.
constexpr std::int64_t kChunkDepth = 768;
std::int64_t chunk_depth(std::int64_t k) {
  const std::int64_t chunks = std::max<std::int64_t>(1, (k + kChunkDepth - 1) / kChunkDepth);
  return std::max<std::int64_t>(1, (k + chunks - 1) / chunks);
}

// C[first .. last, col .. col+8) = A[first .. last, :] · panel (+ bias): blocks of kRows rows, then the 1-3 left.
void rows_by_panel(const GemmArgs& g, std::int64_t first, std::int64_t last, std::int64_t col, const float* panel,
                   Ahead& ahead) {
  std::int64_t r = first;
  // The full block through a pointer that no optimizer can see through. Called directly, it has this one caller
  // in the engine, and wasm-opt inlines it into gemm_columns: in that large function V8's code for its loop
  // reloads the stack limit's address from the stack every step of k, and SIMD128's loop, limited by
  // instructions, ran a twentieth slower (ViT-B/16 on one thread). As its own function it runs as fast as
  // in `npm run bench:gemm`, where micro_kernel_gflops is a second caller and keeps it apart.
  static void (*volatile const full_block)(const GemmArgs&, std::int64_t, std::int64_t, const float*, Ahead*) =
      &block<kRows>;
  const auto full = full_block;
  for (; r + kRows <= last; r += kRows) full(g, r, col, panel, &ahead);
  switch (last - r) {
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
#endif

}  // namespace

void gemm_columns(const GemmArgs& g, std::int64_t col_begin, std::int64_t col_end, std::vector<float>& pack) {
#ifdef __wasm_simd128__
  const std::int64_t panel_rows = g.packed_k ? g.packed_k : g.k, panel_size = panel_bytes(panel_rows, g.precision);
  const std::int64_t panel_elements = panel_rows * kPanelColumns;
  // A decoding step: 16-bit panels, and for one row quantized ones, become floats in registers.
  if (g.m < kRows && g.packed && (!is_quantized(g.precision) || g.m == 1)) {
    const std::uint8_t* first = static_cast<const std::uint8_t*>(g.packed) + (col_begin / kPanelColumns) * panel_size;
    const auto* half = reinterpret_cast<const std::uint16_t*>(first);
    if (g.precision == Precision::q8_0)
      narrow_quantized_row<Precision::q8_0>(g, col_begin, col_end, first, panel_size);
    else if (g.precision == Precision::q4_0)
      narrow_quantized_row<Precision::q4_0>(g, col_begin, col_end, first, panel_size);
    else if (g.precision == Precision::q4_k)
      narrow_quantized_row<Precision::q4_k>(g, col_begin, col_end, first, panel_size);
    else if (g.precision == Precision::q6_k)
      narrow_quantized_row<Precision::q6_k>(g, col_begin, col_end, first, panel_size);
    else if (g.precision == Precision::bf16)
      narrow_rows<HalfPanel<Precision::bf16>>(g, col_begin, col_end, half, panel_elements);
    else if (g.precision == Precision::f16)
      narrow_rows<HalfPanel<Precision::f16>>(g, col_begin, col_end, half, panel_elements);
    else
      narrow_rows<FloatPanel>(g, col_begin, col_end, reinterpret_cast<const float*>(first), panel_elements);
    return;
  }
  // 16-bit and quantized panels become float32 in `pack`, a chunk of k at a time: whole super-blocks of a quantized
  // one.
  const bool widened = g.packed && g.precision != Precision::f32;
  const std::int64_t granule = is_quantized(g.precision) ? superblock_rows(g.precision) : 1;
  const std::int64_t depth = std::min(g.k, (chunk_depth(g.k) + granule - 1) / granule * granule);
  if ((!g.packed || widened) && static_cast<std::int64_t>(pack.size()) < depth * kPanelColumns)
    pack.resize(static_cast<std::size_t>(depth * kPanelColumns));
  const auto* packed = static_cast<const std::uint8_t*>(g.packed);
  for (std::int64_t k0 = 0; k0 == 0 || k0 < g.k; k0 += depth) {
    // Steps [k0, k0 + depth) of k, added into C after the first chunk (which adds the bias).
    GemmArgs part = g;
    part.k = std::min(depth, g.k - k0);
    part.a = g.a + k0;
    part.b = g.b_transposed ? g.b + k0 : g.b + k0 * g.ldb;
    if (k0 > 0) part.accumulate = true, part.bias = nullptr;
    const std::int64_t pass = g.m < kRows ? g.m : rows_per_pass(g.m, part.k);
    for (std::int64_t first = 0; first < g.m; first += pass) {
      const std::int64_t last = std::min(g.m, first + pass);
      for (std::int64_t col = col_begin; col < col_end; col += kPanelColumns) {
        const std::uint8_t* source =
            g.packed ? packed + (col / kPanelColumns) * panel_size + panel_bytes(k0, g.precision) : nullptr;
        if (!g.packed) pack_panel(part, col, pack.data());
        const float* panel = source && !widened ? reinterpret_cast<const float*>(source) : pack.data();
        const auto* half = reinterpret_cast<const std::uint16_t*>(source);
        if (widened && is_quantized(g.precision))
          dequantize_panel(packed + (col / kPanelColumns) * panel_size, g.precision, k0, part.k, pack.data());
        else if (widened && g.precision == Precision::bf16)
          widen_panel<Precision::bf16>(half, part.k, pack.data());
        else if (widened)
          widen_panel<Precision::f16>(half, part.k, pack.data());
        if (g.m < kRows) {  // B packed here (or dequantized), a panel at a time
          narrow_rows<FloatPanel>(part, col, col + kPanelColumns, panel, panel_elements);
          continue;
        }
        Ahead ahead;  // the next panel's chunk of a weight, loaded a line at a time by this panel's blocks
        if (g.streamed && col + kPanelColumns < col_end)
          ahead = {source + panel_size, panel_bytes(part.k, g.precision) / kLineBytes};
        rows_by_panel(part, first, last, col, panel, ahead);
      }
    }
  }
#else
  // Natively, Eigen's own GEMM (SSE/AVX/AVX-512 packets) is the faster kernel: use it for this column range.
  using Strided =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;
  using StridedOut =
      Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;
  const std::int64_t width = std::min(col_end, g.n) - col_begin;
  if (width <= 0) return;
  const Strided a(g.a, g.m, g.k, Eigen::OuterStride<>(g.lda));
  StridedOut c(g.c + col_begin, g.m, width, Eigen::OuterStride<>(g.ldc));
  if (!g.accumulate) c.setZero();
  if (g.b_transposed) {
    const Strided b(g.b + col_begin * g.ldb, width, g.k, Eigen::OuterStride<>(g.ldb));
    c.noalias() += a * b.transpose();
  } else {
    const Strided b(g.b + col_begin, g.k, width, Eigen::OuterStride<>(g.ldb));
    c.noalias() += a * b;
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
  const GemmArgs g = GemmArgs()
                         .lhs(a.data(), k)
                         .rhs(b.data(), kPanelColumns)
                         .out(c.data(), kPanelColumns)
                         .shape(kRows, kPanelColumns, k);
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
