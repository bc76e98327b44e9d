#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gemm.hpp"

namespace attnscope::kernels {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr std::int64_t kRowBlock = 32;  // query rows per task
constexpr std::int64_t kGemmRowBlock = 16;
}  // namespace

std::int64_t masked_softmax_row(float* s, std::int64_t n_k, std::int64_t i, float scale, bool causal,
                                const std::uint8_t* keep_row, const float* additive_row) {
  const std::int64_t visible = causal ? std::min(i + 1, n_k) : n_k;
  float max = kNegInf;
  for (std::int64_t j = 0; j < visible; ++j) {
    float x = s[j] * scale;
    if (keep_row && !keep_row[j]) x = kNegInf;
    if (additive_row) x += additive_row[j];
    s[j] = x;
    max = std::max(max, x);
  }
  if (max == kNegInf) {  // every key hidden: zeros, never NaN
    std::fill(s, s + n_k, 0.0f);
    return 0;
  }
  float sum = 0.0f;
  for (std::int64_t j = 0; j < visible; ++j) {
    const float e = std::exp(s[j] - max);
    s[j] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (std::int64_t j = 0; j < visible; ++j) s[j] *= inv;
  std::fill(s + visible, s + n_k, 0.0f);
  return visible;
}

void attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v, const AttentionDims& d,
               float scale, bool causal, const Mask& mask, float* out, float* weights) {
  const std::int64_t blocks = (d.n_q + kRowBlock - 1) / kRowBlock;
  // Without a weights output, each thread writes its block's scores to its own scratch.
  std::vector<std::vector<float>> scratch(weights ? 0 : pool.size());
  for (auto& s : scratch) s.resize(static_cast<std::size_t>(std::min(kRowBlock, d.n_q) * d.n_k));
  std::vector<std::vector<float>> packs(pool.size());  // each thread's packed panel of k or v

  pool.parallel_for(static_cast<std::size_t>(d.heads * blocks), [&](std::size_t task, int worker) {
    const std::int64_t h = static_cast<std::int64_t>(task) / blocks;
    const std::int64_t r0 = (static_cast<std::int64_t>(task) % blocks) * kRowBlock;
    const std::int64_t rows = std::min(kRowBlock, d.n_q - r0);
    // Under a causal mask, no row of this block sees a key past its last row.
    const std::int64_t keys = causal ? std::min(d.n_k, r0 + rows) : d.n_k;
    float* s_data = weights ? weights + (h * d.n_q + r0) * d.n_k : scratch[worker].data();
    MatrixMap s(s_data, rows, d.n_k);  // scores, then probabilities: [rows, n_k]

    // scores [rows, keys] = q[h][r0 .. r0+rows] · k[h][0 .. keys]ᵀ
    gemm_serial({q.data + (h * d.n_q + r0) * d.d_k, d.d_k, k.data + h * d.n_k * d.d_k, d.d_k, true, s_data, d.n_k, rows,
                 keys, d.d_k, nullptr},
                packs[worker]);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t i = r0 + r;
      const std::int64_t off = mask.kind == Mask::Kind::none ? 0 : mask_row_offset(mask, h, i, d.n_q, d.n_k);
      masked_softmax_row(s.row(r).data(), keys, i, scale, causal,
                         mask.kind == Mask::Kind::keep ? mask.keep + off : nullptr,
                         mask.kind == Mask::Kind::additive ? mask.additive + off : nullptr);
    }
    if (keys < d.n_k) s.rightCols(d.n_k - keys).setZero();
    // out [rows, d_v] = probabilities [rows, keys] · v[h][0 .. keys]
    gemm_serial({s_data, d.n_k, v.data + h * d.n_k * d.d_v, d.d_v, false, out + (h * d.n_q + r0) * d.d_v, d.d_v, rows,
                 d.d_v, keys, nullptr},
                packs[worker]);
  });
}

void gemm(ThreadPool& pool, ConstMatrixMap a, ConstMatrixMap b, const float* bias, MatrixMap c) {
  const std::int64_t m = a.rows(), n = b.cols(), k = a.cols();
  const GemmArgs g{a.data(), k, b.data(), n, false, c.data(), n, m, n, k, bias};
  std::vector<std::vector<float>> packs(pool.size());
  const std::int64_t panels = (n + 7) / 8, threads = pool.size();
  if (panels >= 2 * threads || m < 2 * kGemmRowBlock) {
    // Split the columns: each task packs its own panels of b once for all rows.
    const std::int64_t per_task = std::max<std::int64_t>(1, panels / (4 * threads));
    const std::int64_t tasks = (panels + per_task - 1) / per_task;
    pool.parallel_for(static_cast<std::size_t>(tasks), [&](std::size_t task, int worker) {
      const std::int64_t begin = static_cast<std::int64_t>(task) * per_task * 8;
      gemm_columns(g, begin, std::min(n, begin + per_task * 8), packs[worker]);
    });
  } else {
    // Few columns, many rows: split the rows.
    const std::int64_t block = std::max(kGemmRowBlock, (m + threads - 1) / threads);
    pool.parallel_for(static_cast<std::size_t>((m + block - 1) / block), [&](std::size_t task, int worker) {
      const std::int64_t r0 = static_cast<std::int64_t>(task) * block;
      GemmArgs rows = g;
      rows.a += r0 * k;
      rows.c += r0 * n;
      rows.m = std::min(block, m - r0);
      gemm_serial(rows, packs[worker]);
    });
  }
}

}  // namespace attnscope::kernels
