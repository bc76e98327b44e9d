// Tensors as they cross AttnScope's API: row-major float buffers with a shape.
//
// A rank-2 tensor [rows, cols] is one matrix; a rank-3 tensor [heads, rows, cols]
// is a stack of `heads` row-major matrices laid out one after another. Eigen
// row-major matrices convert to views implicitly, and every head of a view or
// tensor can be read as an Eigen map without copying.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/buffer.hpp"

namespace attnscope {

namespace kernels {
class PackedWeight;  // a weight matrix laid out for the GEMM kernel once (gemm.hpp)
}

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<Matrix>;
using ConstMatrixMap = Eigen::Map<const Matrix>;
using Shape = std::vector<std::int64_t>;

// "[2, 3, 4]": shapes appear in every error message.
std::string format_shape(const Shape& shape);

// Number of elements; 0 for an empty shape list. Callers validate dimensions
// (see check_shape) before trusting this product.
std::int64_t element_count(const Shape& shape);

// A non-owning, read-only view of a row-major tensor of rank 1, 2 or 3.
struct TensorView {
  const float* data = nullptr;
  Shape shape;
  // Set on model weights: the matrix packed for the GEMM kernel (packed on first use),
  // and a mark that its values were checked when the model loaded (or are checked as they
  // stream in: a one-shot call's weight, whose data is then null).
  const kernels::PackedWeight* packed = nullptr;

  TensorView() = default;
  TensorView(const float* data, Shape shape) : data(data), shape(std::move(shape)) {}
  TensorView(const Matrix& m)  // NOLINT: a matrix is a rank-2 view.
      : data(m.data()), shape{m.rows(), m.cols()} {}

  int rank() const { return static_cast<int>(shape.size()); }
  bool empty() const { return data == nullptr && packed == nullptr; }
  std::int64_t size() const { return element_count(shape); }
  // Rank 3 carries a leading heads axis; rank 2 is one head.
  std::int64_t heads() const { return rank() == 3 ? shape[0] : 1; }
  std::int64_t rows() const { return shape[rank() - 2]; }
  std::int64_t cols() const { return shape[rank() - 1]; }
  ConstMatrixMap head(std::int64_t h) const { return ConstMatrixMap(data + h * rows() * cols(), rows(), cols()); }
};

using TensorData = Buffer<float>;  // a Tensor's values: `resize` and `TensorData(n)` leave them unset

// An owning row-major tensor. Results come back as Tensors.
struct Tensor {
  TensorData data;
  Shape shape;
  std::shared_ptr<kernels::PackedWeight> packed;  // see TensorView::packed

  Tensor() = default;
  explicit Tensor(Shape s) : data(static_cast<std::size_t>(element_count(s)), 0.0f), shape(std::move(s)) {}
  // Values left unset, for a result whose every value the caller writes. A build with
  // ATTNSCOPE_POISON_UNFILLED (the sanitizer build's tests) fills them with NaN, so a value left unwritten
  // shows in every comparison instead of reading as the zero of fresh pages.
  static Tensor unfilled(Shape s) {
    Tensor t;
    t.data.resize(static_cast<std::size_t>(element_count(s)));
#ifdef ATTNSCOPE_POISON_UNFILLED
    std::fill(t.data.begin(), t.data.end(), std::numeric_limits<float>::quiet_NaN());
#endif
    t.shape = std::move(s);
    return t;
  }

  int rank() const { return static_cast<int>(shape.size()); }
  bool empty() const { return shape.empty(); }
  std::int64_t rows() const { return shape[rank() - 2]; }
  std::int64_t cols() const { return shape[rank() - 1]; }
  MatrixMap head(std::int64_t h) { return MatrixMap(data.data() + h * rows() * cols(), rows(), cols()); }
  ConstMatrixMap head(std::int64_t h) const {
    return ConstMatrixMap(data.data() + h * rows() * cols(), rows(), cols());
  }
  // The whole tensor as one matrix of shape [size / cols, cols].
  Matrix matrix() const { return ConstMatrixMap(data.data(), static_cast<Eigen::Index>(data.size()) / cols(), cols()); }
  TensorView view() const {
    TensorView v(data.data(), shape);
    v.packed = packed.get();
    return v;
  }
};

}  // namespace attnscope
