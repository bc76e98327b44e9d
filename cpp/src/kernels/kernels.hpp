// The optimized kernels behind Runtime. Inputs here are already validated.
#pragma once

#include <vector>

#include "attnscope/attention.hpp"
#include "kernels/scores.hpp"
#include "threads/thread_pool.hpp"

namespace attnscope::kernels {

// Offset of row (head h, query i) in a mask of shape [n_q, n_k] or [heads, n_q, n_k].
inline std::int64_t mask_row_offset(const Mask& m, std::int64_t h, std::int64_t i, std::int64_t n_q, std::int64_t n_k) {
  return ((m.shape.size() == 3 ? h : 0) * n_q + i) * n_k;
}

// How one query's scores become its weights: scaled (and soft-capped), the keys it may
// not see hidden, then a softmax.
struct ScoreRule {
  float scale = 1.0f;
  bool causal = false;      // a query sees keys up to its own position
  std::int64_t offset = 0;  // query row i sits at position offset + i among the keys (a KV cache's new rows)
  std::int64_t window = 0;  // > 0: keys window or more positions back are hidden too (sliding-window attention)
  float softcap = 0.0f;     // > 0: a score becomes softcap · tanh(score · scale / softcap) (Gemma 2)
  Mask mask;

  // The positions of the keys query row i may see.
  KeyRange keys(std::int64_t i) const {
    KeyRange r;
    if (causal) r.last = offset + i;
    if (window > 0) r.first = offset + i - window + 1;
    return r;
  }
};

// One row of scores s[0..n_k) for query row i, in place: scale (soft-cap), hide keys
// (rule.keys(i), keep mask), add the additive mask, then a max-subtracted softmax. A row
// with every key hidden becomes all zeros. Returns the number of leading keys that can be
// non-zero so callers may skip the rest.
std::int64_t masked_softmax_row(float* s, std::int64_t n_k, std::int64_t i, const ScoreRule& rule,
                                const std::uint8_t* keep_row, const float* additive_row);

// masked_softmax_row on the keys [begin, end) of row i of head h, s being that row's scores [0, n_k): the part
// attention computed, no key outside it visible to the row. The rule's mask is read at those keys. Returns the
// keys from `begin` on that can be non-zero. s outside [begin, end) is left as it is.
std::int64_t softmax_keys(float* s, std::int64_t begin, std::int64_t end, std::int64_t h, std::int64_t i,
                          const ScoreRule& rule, const AttentionDims& d);

// Where attention() writes row i of head h's output: out + h·head_stride + i·row_stride.
struct OutputLayout {
  std::int64_t head_stride, row_stride;
  // [H, n_q, d_v], as the API returns it.
  static OutputLayout stacked(const AttentionDims& d) { return {d.n_q * d.d_v, d.d_v}; }
  // [n_q, H·d_v], head h in columns h·d_v … (h+1)·d_v − 1: the concatenation W_O multiplies.
  static OutputLayout side_by_side(const AttentionDims& d) { return {d.d_v, d.heads * d.d_v}; }
};

// out[h] = softmax(rule(q[h] k[g]ᵀ)) v[g] for every head h, where g = h / d.group: query
// heads share key/value heads in groups (grouped-query attention; group 1 otherwise).
//   q [H, n_q, d_k]  k [H/group, kv_rows, d_k]  v [H/group, kv_rows, d_v]  (keys 0 .. n_k of kv_rows)
//     →  out (laid out as `layout` says), weights [H, n_q, n_k]
// Tasks are (head, block of query rows). With `weights` and `sink` null it runs fused, tile
// by tile of keys with an online softmax, in O(n·d) memory. Keys no query of a block can
// see (causal, sliding window) are skipped, not computed and hidden. With a `sink` instead of
// `weights`, each block's weights go to it from a block-sized buffer, in cache.
void attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v, const AttentionDims& d,
               const ScoreRule& rule, float* out, OutputLayout layout, float* weights,
               const WeightsSink* sink = nullptr);

// attention() for a few query rows against many keys (a decoding step): k and v read where they
// lie, no panels packed (few_rows.cpp). attention() sends n_q <= kFewRows here.
inline constexpr std::int64_t kFewRows = 4;
void few_rows_attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
                        const AttentionDims& d, const ScoreRule& rule, float* out, OutputLayout layout, float* weights);

// One projection split by head: out [H, m, d] where head h is columns h·d … (h+1)·d − 1
// of a · w (+ bias), d = w.cols() / H. That is the layout attention() reads, written
// straight from the GEMM's registers.
struct HeadProjection {
  std::int64_t heads;          // H
  ConstMatrixMap a;            // [m, k]
  ConstMatrixMap w;            // [k, H·d]
  const float* bias;           // [H·d] or null
  const PackedWeight* packed;  // w packed once (a model's weight), or null
  float* out;                  // [H, m, d]
};

// Every projection in `projections` (q, k and v, say) in one parallel loop over
// (projection, head, block of columns); with more than one thread and a one-shot call's weights
// still to read from JS, one loop per projection while the calling thread reads the next weight.
// `next`, when given, is the weight of the GEMM that comes after them with `next_rows` rows (a
// one-shot call's W_O): read ahead too when that GEMM would read it whole.
void project_heads(ThreadPool& pool, const std::vector<HeadProjection>& projections, const PackedWeight* next = nullptr,
                   std::int64_t next_rows = 0);

// c = a · b (+ bias broadcast over rows), split across threads by blocks of rows of a.
//   a [m, k]  b [k, n]  bias [n] or null  →  c [m, n]
// `packed`, when given, is b packed once (a model's weight, in its own precision): no per-call
// packing. In wasm b's data is then not read (a 16-bit weight has no float32 copy); natively
// Eigen multiplies packed->matrix().
void gemm(ThreadPool& pool, ConstMatrixMap a, ConstMatrixMap b, const float* bias, MatrixMap c,
          const PackedWeight* packed = nullptr);

}  // namespace attnscope::kernels
