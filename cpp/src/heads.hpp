// Moving between the [n, heads·d] layout of a projection and the [heads, n, d]
// stack the attention kernels read. Head h owns columns h·d … (h+1)·d − 1.
#pragma once

#include "attnscope/tensor.hpp"

namespace attnscope {

inline Tensor split_heads(const Matrix& m, std::int64_t heads) {
  const std::int64_t n = m.rows(), d = m.cols() / heads;
  Tensor t({heads, n, d});
  for (std::int64_t h = 0; h < heads; ++h) t.head(h) = m.middleCols(h * d, d);
  return t;
}

inline Matrix merge_heads(const Tensor& t) {
  const std::int64_t heads = t.shape[0], n = t.shape[1], d = t.shape[2];
  Matrix m(n, heads * d);
  for (std::int64_t h = 0; h < heads; ++h) m.middleCols(h * d, d) = t.head(h);
  return m;
}

}  // namespace attnscope
