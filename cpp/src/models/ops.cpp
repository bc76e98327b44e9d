#include "models/ops.hpp"

namespace attnscope::ops {

Matrix layer_norm(const Matrix& x, const Tensor& scale, const Tensor& bias, float eps) {
  Matrix y(x.rows(), x.cols());
  const auto g = Eigen::Map<const Eigen::RowVectorXf>(scale.data.data(), x.cols());
  const auto b = Eigen::Map<const Eigen::RowVectorXf>(bias.data.data(), x.cols());
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const float mean = x.row(i).mean();
    const float var = (x.row(i).array() - mean).square().mean();
    y.row(i) = ((x.row(i).array() - mean) / std::sqrt(var + eps)).matrix().cwiseProduct(g) + b;
  }
  return y;
}

Tensor to_tensor(const Matrix& m) {
  Tensor t({m.rows(), m.cols()});
  t.head(0) = m;
  return t;
}

}  // namespace attnscope::ops
