#include "kernels/screened_argmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnscope/buffer.hpp"
#include "kernels/gemm.hpp"
#include "kernels/kernels.hpp"
#include "kernels/simd.hpp"

namespace attnscope::kernels {

namespace {

constexpr double kWiden = 1.0 + 0x1p-20;  // each float32 term of the bound rounded up by this much
constexpr float kFloatInfinity = std::numeric_limits<float>::infinity();

float rounded_up(double v) { return std::nextafter(static_cast<float>(v * kWiden), kFloatInfinity); }

// Logit j's lower and upper ends, l[j] ∓ (norm·slack[j] + offset[j] + |l[j]|·2^-20).
struct Ends {
  const float* l;
  const float* slack;
  const float* offset;
  float norm;
  float bound(std::int64_t j) const { return norm * slack[j] + offset[j] + std::abs(l[j]) * 0x1p-20f; }
#ifdef __wasm_simd128__
  v128_t bound4(std::int64_t j) const {
    const v128_t b =
        wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_splat(norm), wasm_v128_load(slack + j)), wasm_v128_load(offset + j));
    return wasm_f32x4_add(b, wasm_f32x4_mul(wasm_f32x4_abs(wasm_v128_load(l + j)), wasm_f32x4_splat(0x1p-20f)));
  }
#endif
};

// Whether every l[0 .. n) is finite (in wasm four at a time: x − x is 0 for each finite x, NaN otherwise).
bool all_finite(const float* l, std::int64_t n) {
  std::int64_t j = 0;
  float sum = 0.0f;
#ifdef __wasm_simd128__
  v128_t acc = wasm_f32x4_splat(0.0f);
  for (; j + 4 <= n; j += 4) {
    const v128_t v = wasm_v128_load(l + j);
    acc = wasm_f32x4_add(acc, wasm_f32x4_sub(v, v));
  }
  alignas(16) float lanes[4];
  wasm_v128_store(lanes, acc);
  for (float lane : lanes) sum += lane;
#endif
  for (; j < n; ++j) sum += l[j] - l[j];
  return sum == 0.0f;
}

// The largest lower end.
float best_lower_end(const Ends& e, std::int64_t n) {
  std::int64_t j = 0;
  float best = -kFloatInfinity;
#ifdef __wasm_simd128__
  v128_t m = wasm_f32x4_splat(best);
  for (; j + 4 <= n; j += 4) m = wasm_f32x4_pmax(m, wasm_f32x4_sub(wasm_v128_load(e.l + j), e.bound4(j)));
  alignas(16) float lanes[4];
  wasm_v128_store(lanes, m);
  for (float lane : lanes) best = std::max(best, lane);
#endif
  for (; j < n; ++j) best = std::max(best, e.l[j] - e.bound(j));
  return best;
}

// The columns whose upper end reaches `floor`, in order (a few: the rest are four at a time in wasm).
std::vector<std::int64_t> reaching(const Ends& e, std::int64_t n, float floor) {
  std::vector<std::int64_t> out;
  std::int64_t j = 0;
#ifdef __wasm_simd128__
  const v128_t f = wasm_f32x4_splat(floor);
  for (; j + 4 <= n; j += 4)
    if (wasm_v128_any_true(wasm_f32x4_ge(wasm_f32x4_add(wasm_v128_load(e.l + j), e.bound4(j)), f)))
      for (std::int64_t i = j; i < j + 4; ++i)
        if (e.l[i] + e.bound(i) >= floor) out.push_back(i);
#endif
  for (; j < n; ++j)
    if (e.l[j] + e.bound(j) >= floor) out.push_back(j);
  return out;
}

}  // namespace

ScreenedArgmax::ScreenedArgmax(ThreadPool& pool, const PackedWeight& head, const float* bias)
    : head_(head),
      bias_(bias),
      rounded_(head.rounded_to_bf16(pool)),
      slack_(static_cast<std::size_t>(head.n())),
      offset_(static_cast<std::size_t>(head.n())) {
  const std::int64_t k = head.k(), n = head.n();
  const double steps = 2.0 * static_cast<double>(k) + 2.0, unit = 0x1p-24;
  const double gamma = steps * unit / (1.0 - steps * unit), tiny = steps * 0x1p-149;
  const auto* exact = static_cast<const float*>(head.panels());
  const auto* rounded = static_cast<const std::uint16_t*>(rounded_->panels());
  std::vector<double> columns(static_cast<std::size_t>(n));  // ‖w_j‖ + |b_j|
  for_panels(pool, (n + kPanelColumns - 1) / kPanelColumns, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t col = first * kPanelColumns; col < last * kPanelColumns; col += kPanelColumns) {
      double error[kPanelColumns] = {}, w[kPanelColumns] = {}, r[kPanelColumns] = {};
      const std::int64_t base = packed_size(k, col);  // the panel: k rows of 8 columns
      for (std::int64_t p = 0; p < k; ++p)
        for (std::int64_t j = 0; j < kPanelColumns; ++j) {
          const double a = exact[base + p * kPanelColumns + j];
          const double b = widen(rounded[base + p * kPanelColumns + panel_slot(j, Precision::bf16)], Precision::bf16);
          error[j] += (a - b) * (a - b), w[j] += a * a, r[j] += b * b;
        }
      for (std::int64_t j = 0; j < kPanelColumns && col + j < n; ++j) {
        const double b = bias ? std::abs(static_cast<double>(bias[col + j])) : 0.0;
        slack_[col + j] = rounded_up(std::sqrt(error[j]) + gamma * (std::sqrt(w[j]) + std::sqrt(r[j])));
        offset_[col + j] = rounded_up(2.0 * gamma * b + tiny);
        columns[col + j] = std::sqrt(w[j]) + b;
      }
    }
  });
  for (double c : columns) largest_ = std::max(largest_, c * kWiden);
}

std::int64_t ScreenedArgmax::argmax(ThreadPool& pool, const float* x, const std::vector<std::int32_t>& excluded) const {
  if (!kPacksB) return -1;  // natively kernels::gemm multiplies with Eigen, in another order than the panels
  const std::int64_t k = head_.k(), n = head_.n();
  double squares = 0.0;
  for (std::int64_t p = 0; p < k; ++p) squares += static_cast<double>(x[p]) * x[p];
  const float norm = rounded_up(std::sqrt(squares));
  // No float32 sum may overflow: each partial sum is at most ‖x‖·‖w_j‖ + |b_j| (with rounding, a little more).
  if (!(std::max<double>(norm, 1.0) * largest_ < 0.25 * std::numeric_limits<float>::max())) return -1;

  // x·Ŵ + b [n], each logit within bound(j) of its float32 value.
  Buffer<float> logits(static_cast<std::size_t>(n));
  float* l = logits.data();
  gemm(pool, ConstMatrixMap(x, 1, k), ConstMatrixMap(nullptr, k, n), bias_, MatrixMap(l, 1, n), rounded_.get());
  if (!all_finite(l, n)) return -1;
  for (std::int32_t id : excluded)
    if (id >= 0 && id < n) l[id] = -kFloatInfinity;  // below every lower end; its upper end is NaN
  // The best lower end: the float32 argmax's logit is at least this. Then every column whose upper end reaches it.
  const Ends ends{l, slack_.data(), offset_.data(), norm};
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
}

}  // namespace attnscope::kernels
