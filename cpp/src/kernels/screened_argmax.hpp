// The greedy token of a float32 language-model head without reading all of its float32 weights.
//
// A decoding step reads every weight once, and a small model's float32 head is most of them: Marian's
// [512, 58,101] is 119 MB of a step's 207. Greedy decoding needs only the head's argmax. So the screen
// reads the head first as 8-bit integers, a quarter of its bytes: column j as q_j·s_j (q_j in [−127, 127],
// s_j = max|w_j| / 127), and x as x_q·s_x (x_q 16-bit). Each x_q·q_j is an exact int32 sum, and each logit
// comes within a bound of its float32 value. The columns whose bound reaches the best lower bound are then
// multiplied again from the float32 panels, a panel at a time, by the same kernel and in the same order as the
// full product (gemm.cpp: each column is one lane's sum over k, whatever the columns around it). So the token
// is the one argmax(x·W + b) would give, bit for bit, the first on ties.
//
// The bound for column j, with x̂ = s_x·x_q, ŵ_j = s_j·q_j, ‖·‖ the L2 norm, u = 2^-24, and l̂_j the screen's
// logit fl(fl(fl(x_q·q_j)·s_j)·s_x + b_j):
//   |fl(x·w_j + b_j) − l̂_j| ≤ ‖x − x̂‖·‖w_j‖ + ‖x̂‖·‖w_j − ŵ_j‖ + γ·(‖x‖·‖w_j‖ + |b_j|)
//                             + tiny + 2^-19·(|l̂_j| + |b_j|)
// The first two terms are the roundings of x and w_j (x·w − x̂·ŵ = (x − x̂)·w + x̂·(w − ŵ), then Cauchy–Schwarz).
// The third is the float32 sum's: k multiply-adds that may round twice each, then the bias, γ = γ_{2k+2} =
// (2k+2)·u / (1 − (2k+2)·u) of the sum of |terms| (Higham, Accuracy and Stability of Numerical Algorithms,
// §3.1), with ‖x‖·‖w_j‖ ≥ Σ|x_i·w_ij|; tiny covers underflow. The last covers the screen's own four roundings
// and those of the two ends l̂_j ∓ bound. The integer sum is exact: |x_q| ≤ (2^31 − 1) / (127·k) keeps it
// within int32. The bound holds while no float32 sum overflows: the screen declines an x for which one could
// (‖x‖·‖w_j‖ + |b_j| near FLT_MAX for some j). It computes the bound in float32, each term rounded up by a
// factor 1 + 2^-20: far more than the few roundings of the sum. When more than 64 columns and 1/16 of them
// remain candidates (the logits nearly equal), it declines too: the whole float32 product is then the cheaper
// way.
#pragma once

#include <cstdint>
#include <vector>

#include "attnscope/buffer.hpp"
#include "kernels/packed.hpp"

namespace attnscope {
class ThreadPool;
}

namespace attnscope::kernels {

class ScreenedArgmax {
 public:
  // head: float32 panels W [k, n]; bias [n] or null. Both must outlive the screen. Rounds W to 8 bits (a quarter
  // of its bytes again) and measures every column, on the pool's threads.
  ScreenedArgmax(ThreadPool& pool, const PackedWeight& head, const float* bias);

  // The first j, among the columns not in `excluded`, where x·W + bias is largest, as kernels::gemm computes
  // the product; −1 when the screen cannot tell (a value not finite or near overflow, every column excluded, too
  // many candidates, or natively, where Eigen multiplies in another order): then compute the logits.   x [k]
  std::int64_t argmax(ThreadPool& pool, const float* x, const std::vector<std::int32_t>& excluded = {}) const;

 private:
  const PackedWeight& head_;
  const float* bias_;
  // 8-bit panels of 8 columns, in pairs of rows (2p, 2p + 1), 16 bytes each: columns 0-3, then 4-7, each
  // column's two rows side by side. Widened to 16 bits, each half against (x_q[2p], x_q[2p + 1]) repeated gives
  // four columns' two products summed in one i32x4.dot_i16x8_s. An odd k's last pair ends in a zero row.
  std::int64_t pairs_;  // pairs of rows: ⌈k / 2⌉
  Buffer<std::int8_t> quantized_;
  // Per column, [n rounded up to 8], zero past n:
  std::vector<float> scale_;   // s_j
  std::vector<float> bias8_;   // b_j
  std::vector<float> norm_;    // ‖w_j‖, rounded up
  std::vector<float> error_;   // ‖w_j − ŵ_j‖, rounded up
  std::vector<float> offset_;  // γ·|b_j| + 2^-19·|b_j| + tiny, rounded up
  double gamma_ = 0.0;         // γ_{2k+2}
  double largest_ = 0.0;       // an upper bound of every ‖w_j‖ + |b_j|: whether a float32 sum could overflow
};

}  // namespace attnscope::kernels
