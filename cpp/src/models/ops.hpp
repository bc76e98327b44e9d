// Row-wise operations of the transformer block (norms, activations). Shapes are [n, d] row-major.
#pragma once

#include <cmath>

#include "attnscope/tensor.hpp"
#include "kernels/vexp.hpp"

namespace attnscope::ops {

// y = (x − mean) / sqrt(var + eps) · scale + bias, per row. Out of line (ops.cpp), like to_tensor: a size-optimized
// file that inlined these would instantiate Eigen's loops for them, and the linker may keep that copy for every caller.
Matrix layer_norm(const Matrix& x, const Tensor& scale, const Tensor& bias, float eps);

// A copy of `m` as a [rows, cols] tensor, for results that leave the model.
Tensor to_tensor(const Matrix& m);

inline void relu(Eigen::Ref<Matrix> x) { x = x.cwiseMax(0.0f); }

// GELU, exact: x·Φ(x) (kernels::gelu: four at a time in wasm).
inline void gelu(Eigen::Ref<Matrix> x) {
  for (Eigen::Index i = 0; i < x.rows(); ++i) kernels::gelu(x.row(i).data(), x.cols());
}

// GELU, tanh approximation (GPT-2's gelu_new, Gemma's gelu_pytorch_tanh; kernels::gelu_tanh).
inline void gelu_tanh(Eigen::Ref<Matrix> x) {
  for (Eigen::Index i = 0; i < x.rows(); ++i) kernels::gelu_tanh(x.row(i).data(), x.cols());
}

// SiLU: x·σ(x) (kernels::silu).
inline void silu(Eigen::Ref<Matrix> x) {
  for (Eigen::Index i = 0; i < x.rows(); ++i) kernels::silu(x.row(i).data(), x.cols());
}

// Quick GELU: x·σ(1.702·x) (CLIP). In wasm kernels::quick_gelu, four lanes at a time, where Eigen's exp is a scalar
// call per element; natively Eigen's own vectorized exp.
inline void quick_gelu(Eigen::Ref<Matrix> x) {
#ifdef __wasm_simd128__
  for (Eigen::Index i = 0; i < x.rows(); ++i) kernels::quick_gelu(x.row(i).data(), x.cols());
#else
  x = x.array() / (1.0f + (-1.702f * x.array()).exp());
#endif
}

}  // namespace attnscope::ops
