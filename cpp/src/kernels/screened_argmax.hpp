// The greedy token of a float32 language-model head without reading all of its float32 weights.
//
// A decoding step reads every weight once, and a small model's float32 head is most of them: Marian's
// [512, 58,101] is 119 MB of a step's 207. Greedy decoding needs only the head's argmax. So the screen
// reads the head first as BF16 (half the bytes), which gives every logit within a bound of its float32
// value; the columns whose bound reaches the best lower bound are then multiplied again from the float32
// panels, a panel at a time, by the same kernel and in the same order as the full product (gemm.cpp: each
// column is one lane's sum over k, whatever the columns around it). So the token is the one
// argmax(x·W + b) would give, bit for bit, the first on ties.
//
// The bound for column j, ŵ_j the BF16 column, ‖·‖ the L2 norm, u = 2^-24:
//   |fl(x·w_j + b_j) − fl(x·ŵ_j + b_j)| ≤ ‖x‖·‖w_j − ŵ_j‖ + γ·(‖x‖·(‖w_j‖ + ‖ŵ_j‖) + 2|b_j|) + tiny
// The first term is the weights' rounding (Cauchy–Schwarz); the second each float32 sum's: k multiply-adds
// that may round twice each, then the bias, γ = γ_{2k+2} = (2k+2)·u / (1 − (2k+2)·u) of the sum of |terms|
// (Higham, Accuracy and Stability of Numerical Algorithms, §3.1), with ‖x‖·‖w_j‖ ≥ Σ|x_i·w_ij|; tiny
// covers underflow. The bound holds while no float32 sum overflows: the screen declines an x for which one
// could (‖x‖·‖w_j‖ + |b_j| near FLT_MAX for some j). It computes the bound and the logits' lower and upper ends
// in float32, so every term is rounded up by a factor 1 + 2^-20 and each end widened by 2^-20 of the logit: far
// more than the few roundings of each. When more than 64 columns and 1/16 of them remain candidates (the logits
// nearly equal), it declines too: the whole float32 product is then the cheaper way.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/packed.hpp"

namespace attnscope {
class ThreadPool;
}

namespace attnscope::kernels {

class ScreenedArgmax {
 public:
  // head: float32 panels W [k, n]; bias [n] or null. Both must outlive the screen. Rounds W to BF16 (half its
  // bytes again) and measures every column, on the pool's threads.
  ScreenedArgmax(ThreadPool& pool, const PackedWeight& head, const float* bias);

  // The first j, among the columns not in `excluded`, where x·W + bias is largest, as kernels::gemm computes
  // the product; −1 when the screen cannot tell (a value not finite or near overflow, every column excluded, too
  // many candidates, or natively, where Eigen multiplies in another order): then compute the logits.   x [k]
  std::int64_t argmax(ThreadPool& pool, const float* x, const std::vector<std::int32_t>& excluded = {}) const;

 private:
  const PackedWeight& head_;
  const float* bias_;
  std::unique_ptr<PackedWeight> rounded_;
  std::vector<float> slack_;  // [n]: ‖w_j − ŵ_j‖ + γ·(‖w_j‖ + ‖ŵ_j‖), rounded up: the bound per unit of ‖x‖
  std::vector<float> offset_;  // [n]: 2γ·|b_j| + tiny, rounded up
  double largest_ = 0.0;       // an upper bound of every ‖w_j‖ + |b_j|: whether a float32 sum could overflow
};

}  // namespace attnscope::kernels
