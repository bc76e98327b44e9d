#include "kernels/screened_argmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/gemm.hpp"
#include "kernels/kernels.hpp"
#include "kernels/simd.hpp"

namespace attnscope::kernels {

namespace {

constexpr double kWiden = 1.0 + 0x1p-20;  // each float32 term of the bound rounded up by this much
constexpr float kFloatInfinity = std::numeric_limits<float>::infinity();
constexpr std::int64_t kPairBytes = 2 * kPanelColumns;  // a pair of rows of an 8-bit panel
constexpr double kLevels = 127.0;                       // q_j in [−127, 127]

float rounded_up(double v) { return std::nextafter(static_cast<float>(v * kWiden), kFloatInfinity); }

#ifdef __wasm_simd128__
// Logit j's lower and upper ends, l[j] ∓ (a·norm[j] + b·error[j] + offset[j] + |l[j]|·2^-19).
struct Ends {
  const float* l;
  const float* norm;
  const float* error;
  const float* offset;
  float a, b;  // ‖x − x̂‖ + γ·‖x‖ and ‖x̂‖, rounded up
  float bound(std::int64_t j) const { return a * norm[j] + b * error[j] + offset[j] + std::abs(l[j]) * 0x1p-19f; }
  v128_t bound4(std::int64_t j) const {
    const v128_t weights = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_splat(a), wasm_v128_load(norm + j)),
                                          wasm_f32x4_mul(wasm_f32x4_splat(b), wasm_v128_load(error + j)));
    return wasm_f32x4_add(wasm_f32x4_add(weights, wasm_v128_load(offset + j)),
                          wasm_f32x4_mul(wasm_f32x4_abs(wasm_v128_load(l + j)), wasm_f32x4_splat(0x1p-19f)));
  }
};

// Whether every l[0 .. n) is finite (four at a time: x − x is 0 for each finite x, NaN otherwise).
bool all_finite(const float* l, std::int64_t n) {
  std::int64_t j = 0;
  float sum = 0.0f;
  v128_t acc = wasm_f32x4_splat(0.0f);
  for (; j + 4 <= n; j += 4) {
    const v128_t v = wasm_v128_load(l + j);
    acc = wasm_f32x4_add(acc, wasm_f32x4_sub(v, v));
  }
  alignas(16) float lanes[4];
  wasm_v128_store(lanes, acc);
  for (float lane : lanes) sum += lane;
  for (; j < n; ++j) sum += l[j] - l[j];
  return sum == 0.0f;
}

// The largest lower end.
float best_lower_end(const Ends& e, std::int64_t n) {
  std::int64_t j = 0;
  float best = -kFloatInfinity;
  v128_t m = wasm_f32x4_splat(best);
  for (; j + 4 <= n; j += 4) m = wasm_f32x4_pmax(m, wasm_f32x4_sub(wasm_v128_load(e.l + j), e.bound4(j)));
  alignas(16) float lanes[4];
  wasm_v128_store(lanes, m);
  for (float lane : lanes) best = std::max(best, lane);
  for (; j < n; ++j) best = std::max(best, e.l[j] - e.bound(j));
  return best;
}

// The columns whose upper end reaches `floor`, in order (four at a time, then each of a four that has one).
std::vector<std::int64_t> reaching(const Ends& e, std::int64_t n, float floor) {
  std::vector<std::int64_t> out;
  std::int64_t j = 0;
  const v128_t f = wasm_f32x4_splat(floor);
  for (; j + 4 <= n; j += 4)
    if (wasm_v128_any_true(wasm_f32x4_ge(wasm_f32x4_add(wasm_v128_load(e.l + j), e.bound4(j)), f)))
      for (std::int64_t i = j; i < j + 4; ++i)
        if (e.l[i] + e.bound(i) >= floor) out.push_back(i);
  for (; j < n; ++j)
    if (e.l[j] + e.bound(j) >= floor) out.push_back(j);
  return out;
}

// The exact integer sums x_q·q_j of T panels `apart` panels apart, from `panel` on, into out (8 per panel).
// As gemm.cpp's decoding step: a thread reads four streams far apart faster than one.
template <int T>
void integer_sums(const std::int8_t* panels, std::int64_t pairs, std::int64_t panel, std::int64_t apart,
                  const std::int32_t* x, std::int32_t* out) {
  v128_t lo[T], hi[T];
  const std::int8_t* b[T];
  for (int t = 0; t < T; ++t) {
    lo[t] = hi[t] = wasm_i32x4_splat(0);
    b[t] = panels + (panel + t * apart) * pairs * kPairBytes;
  }
  for (std::int64_t p = 0; p < pairs; ++p) {
    const v128_t xp = wasm_v128_load32_splat(x + p);  // (x_q[2p], x_q[2p + 1]) in each 32-bit lane
    for (int t = 0; t < T; ++t) {
      const v128_t v = wasm_v128_load(b[t] + p * kPairBytes);
      lo[t] = wasm_i32x4_add(lo[t], wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(v), xp));
      hi[t] = wasm_i32x4_add(hi[t], wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(v), xp));
    }
  }
  for (int t = 0; t < T; ++t) {
    wasm_v128_store(out + (panel + t * apart) * kPanelColumns, lo[t]);
    wasm_v128_store(out + (panel + t * apart) * kPanelColumns + 4, hi[t]);
  }
}
#endif

}  // namespace

ScreenedArgmax::ScreenedArgmax(ThreadPool& pool, const PackedWeight& head, const float* bias)
    : head_(head), bias_(bias), pairs_((head.k() + 1) / 2) {
  const std::int64_t k = head.k(), n = head.n(), panels = (n + kPanelColumns - 1) / kPanelColumns;
  const auto width = static_cast<std::size_t>(panels * kPanelColumns);
  quantized_.resize(static_cast<std::size_t>(panels * pairs_ * kPairBytes));
  for (std::vector<float>* v : {&scale_, &bias8_, &norm_, &error_, &offset_}) v->assign(width, 0.0f);
  const double steps = 2.0 * static_cast<double>(k) + 2.0, unit = 0x1p-24, tiny = steps * 0x1p-149;
  gamma_ = steps * unit / (1.0 - steps * unit);
  const auto* exact = static_cast<const float*>(head.panels());  // zero past the last column
  std::vector<double> columns(width);                            // ‖w_j‖ + |b_j|
  for_panels(pool, panels, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t panel = first; panel < last; ++panel) {
      const float* w = exact + panel * k * kPanelColumns;
      std::int8_t* q = quantized_.data() + panel * pairs_ * kPairBytes;
      for (std::int64_t j = 0; j < kPanelColumns; ++j) {
        const std::int64_t col = panel * kPanelColumns + j, slot = j / 4 * 8 + j % 4 * 2;
        float largest = 0.0f;
        for (std::int64_t p = 0; p < k; ++p) largest = std::max(largest, std::abs(w[p * kPanelColumns + j]));
        const float s = largest / static_cast<float>(kLevels);  // 0 for a zero column (or one below 127 · 2^-149)
        // The nearest level, or next to it where the reciprocal rounds: the error below is the one made, either way.
        const double inverse = s > 0.0f ? 1.0 / s : 0.0;
        double error = 0.0, squares = 0.0;
        for (std::int64_t p = 0; p < k; ++p) {
          const double v = w[p * kPanelColumns + j];
          const double level = std::clamp(std::nearbyint(v * inverse), -kLevels, kLevels);
          q[p / 2 * kPairBytes + slot + p % 2] = static_cast<std::int8_t>(level);
          error += (v - level * s) * (v - level * s), squares += v * v;
        }
        if (k % 2) q[(pairs_ - 1) * kPairBytes + slot + 1] = 0;
        const double b = bias && col < n ? std::abs(static_cast<double>(bias[col])) : 0.0;
        scale_[col] = s;
        bias8_[col] = bias && col < n ? bias[col] : 0.0f;
        norm_[col] = rounded_up(std::sqrt(squares));
        error_[col] = rounded_up(std::sqrt(error));
        offset_[col] = rounded_up(gamma_ * b + 0x1p-19 * b + tiny);
        // A NaN or infinite weight (the loaders refuse them) leaves the screen declining every x.
        columns[col] = std::isfinite(squares) ? std::sqrt(squares) + b : std::numeric_limits<double>::infinity();
      }
    }
  });
  for (double c : columns) largest_ = std::max(largest_, c * kWiden);
}

std::int64_t ScreenedArgmax::argmax(ThreadPool& pool, const float* x, const std::vector<std::int32_t>& excluded) const {
#ifndef __wasm_simd128__
  (void)pool, (void)x, (void)excluded, (void)head_, (void)bias_;
  return -1;  // natively kernels::gemm multiplies with Eigen, in another order than the panels
#else
  const std::int64_t k = head_.k(), n = head_.n(), panels = (n + kPanelColumns - 1) / kPanelColumns;
  double squares = 0.0;
  float largest = 0.0f;
  for (std::int64_t p = 0; p < k; ++p)
    squares += static_cast<double>(x[p]) * x[p], largest = std::max(largest, std::abs(x[p]));
  if (!std::isfinite(squares)) return -1;
  const float norm = rounded_up(std::sqrt(squares));
  // No float32 sum may overflow: each partial sum is at most ‖x‖·‖w_j‖ + |b_j| (with rounding, a little more).
  if (!(std::max<double>(norm, 1.0) * largest_ < 0.25 * std::numeric_limits<float>::max())) return -1;

  // x as x_q·s_x, |x_q| small enough that no column's integer sum leaves int32 (each |q_j| ≤ 127).
  const std::int64_t qmax = std::min<std::int64_t>(32767, 2147483647 / (127 * std::max<std::int64_t>(k, 1)));
  if (qmax < 1) return -1;
  // (1 for an x of zeros, or one so small that its step would be 0: then every level is 0, x̂ = 0, still bounded.)
  const float step = largest / static_cast<float>(qmax), sx = step > 0.0f ? step : 1.0f;
  std::vector<std::int32_t> pairs(static_cast<std::size_t>(pairs_), 0);  // x_q[2p] low, x_q[2p + 1] high
  double rest = 0.0, kept = 0.0;                                         // ‖x − x̂‖², ‖x̂‖²
  for (std::int64_t p = 0; p < k; ++p) {
    const double level = std::clamp(std::nearbyint(x[p] / static_cast<double>(sx)), -static_cast<double>(qmax),
                                    static_cast<double>(qmax));
    const double rounded = level * sx;
    rest += (x[p] - rounded) * (x[p] - rounded), kept += rounded * rounded;
    const auto bits = static_cast<std::uint32_t>(static_cast<std::uint16_t>(static_cast<std::int16_t>(level)));
    pairs[p / 2] = static_cast<std::int32_t>(static_cast<std::uint32_t>(pairs[p / 2]) | bits << (16 * (p % 2)));
  }

  // x̂·Ŵ + b [n], each logit within bound(j) of its float32 value.
  Buffer<float> logits(static_cast<std::size_t>(panels * kPanelColumns));
  float* l = logits.data();
  for_panels(pool, panels, [&](std::int64_t first, std::int64_t last) {
    auto* sums = reinterpret_cast<std::int32_t*>(l);  // the integer sums first, then in place their logits
    const std::int64_t share = (last - first) / 4;
    for (std::int64_t i = 0; i < share; ++i)
      integer_sums<4>(quantized_.data(), pairs_, first + i, share, pairs.data(), sums);
    for (std::int64_t i = first + 4 * share; i < last; ++i)
      integer_sums<1>(quantized_.data(), pairs_, i, 0, pairs.data(), sums);
    const v128_t xs = wasm_f32x4_splat(sx);
    for (std::int64_t j = first * kPanelColumns; j < last * kPanelColumns; j += 4) {
      const v128_t sum = wasm_f32x4_convert_i32x4(wasm_v128_load(sums + j));
      const v128_t scaled = wasm_f32x4_mul(wasm_f32x4_mul(sum, wasm_v128_load(scale_.data() + j)), xs);
      wasm_v128_store(l + j, wasm_f32x4_add(scaled, wasm_v128_load(bias8_.data() + j)));
    }
  });
  if (!all_finite(l, n)) return -1;
  for (std::int32_t id : excluded)
    if (id >= 0 && id < n) l[id] = -kFloatInfinity;  // below every lower end; its upper end is NaN
  // The best lower end: the float32 argmax's logit is at least this. Then every column whose upper end reaches it.
  const Ends ends{l,
                  norm_.data(),
                  error_.data(),
                  offset_.data(),
                  rounded_up(std::sqrt(rest) * kWiden + gamma_ * norm),
                  rounded_up(std::sqrt(kept))};
  const float floor = best_lower_end(ends, n);
  if (floor == -kFloatInfinity) return -1;  // every column excluded
  const std::vector<std::int64_t> candidates = reaching(ends, n, floor);
  if (static_cast<std::int64_t>(candidates.size()) > std::max<std::int64_t>(64, n / 16)) return -1;
  // Their panels again in float32, into the same places.
  GemmArgs g = GemmArgs().lhs(x, k).out(l, n).shape(1, n, k).add(bias_);
  g.packed = head_.panels(), g.streamed = true, g.precision = Precision::f32;
  std::vector<float> scratch;
  std::int64_t done = -1;  // the last panel multiplied again
  for (std::int64_t j : candidates) {
    const std::int64_t col = j / kPanelColumns * kPanelColumns;
    if (col != done) gemm_columns(g, col, std::min(n, col + kPanelColumns), scratch);
    done = col;
  }
  std::int64_t best = -1;
  for (std::int64_t j : candidates) {
    if (!std::isfinite(l[j])) return -1;
    if (best < 0 || l[j] > l[best]) best = j;
  }
  return best;
#endif
}

}  // namespace attnscope::kernels
