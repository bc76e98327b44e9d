// The optimized kernels behind Runtime. Inputs here are already validated.
#pragma once

#include <vector>

#include "attnscope/attention.hpp"
#include "thread_pool.hpp"

namespace attnscope::kernels {

// Offset of row (head h, query i) in a mask of shape [n_q, n_k] or [heads, n_q, n_k].
inline std::int64_t mask_row_offset(const Mask& m, std::int64_t h, std::int64_t i, std::int64_t n_q, std::int64_t n_k) {
  return ((m.shape.size() == 3 ? h : 0) * n_q + i) * n_k;
}

// One row of scores s[0..n_k) for query i, in place: scale, hide keys (causal,
// keep mask), add the additive mask, then a max-subtracted softmax. A row with
// every key hidden becomes all zeros. Returns the number of leading keys that
// can be non-zero (n_k, or i+1 when causal) so callers may skip the rest.
std::int64_t masked_softmax_row(float* s, std::int64_t n_k, std::int64_t i, float scale, bool causal,
                                const std::uint8_t* keep_row, const float* additive_row);

// Where attention() writes row i of head h's output: out + h·head_stride + i·row_stride.
struct OutputLayout {
  std::int64_t head_stride, row_stride;
  // [H, n_q, d_v], as the API returns it.
  static OutputLayout stacked(const AttentionDims& d) { return {d.n_q * d.d_v, d.d_v}; }
  // [n_q, H·d_v], head h in columns h·d_v … (h+1)·d_v − 1: the concatenation W_O multiplies.
  static OutputLayout side_by_side(const AttentionDims& d) { return {d.d_v, d.heads * d.d_v}; }
};

// out[h] = softmax(q[h] k[h]ᵀ · scale + mask) v[h] for every head h.
//   q [H, n_q, d_k]  k [H, n_k, d_k]  v [H, n_k, d_v]  →  out (laid out as `layout` says), weights [H, n_q, n_k]
// Tasks are (head, block of query rows). With `weights` null it runs fused, tile by
// tile of keys with an online softmax, in O(n·d) memory.
void attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v, const AttentionDims& d,
               float scale, bool causal, const Mask& mask, float* out, OutputLayout layout, float* weights);

// One projection split by head: out [H, m, d] where head h is columns h·d … (h+1)·d − 1
// of a · w (+ bias), d = w.cols() / H. That is the layout attention() reads, written
// straight from the GEMM's registers.
struct HeadProjection {
  ConstMatrixMap a;            // [m, k]
  ConstMatrixMap w;            // [k, H·d]
  const float* bias;           // [H·d] or null
  const PackedWeight* packed;  // w packed once (a model's weight), or null
  float* out;                  // [H, m, d]
};

// Every projection in `projections` (q, k and v, say) in one parallel loop over
// (projection, head, block of columns).
void project_heads(ThreadPool& pool, std::int64_t heads, const std::vector<HeadProjection>& projections);

// c = a · b (+ bias broadcast over rows), split across threads by blocks of rows of a.
//   a [m, k]  b [k, n]  bias [n] or null  →  c [m, n]
// `packed`, when given, is b packed once (a model's weight): no per-call packing.
void gemm(ThreadPool& pool, ConstMatrixMap a, ConstMatrixMap b, const float* bias, MatrixMap c,
          const PackedWeight* packed = nullptr);

}  // namespace attnscope::kernels
