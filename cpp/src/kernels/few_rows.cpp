// Attention for a few query rows against many keys: a decoding step (one new token against
// the KV cache), or a few characters typed at the end of the text.
//
// The general path packs every head's kᵀ and v into the GEMM's panels first. That pays off
// when many query rows share them, but a decoding step has one row per head, so packing the
// whole cache cost more than the attention itself: at 1,024 tokens of context, a
// SmolLM2-135M-shaped step went from 15 to 29 ms. Here each row reads k and v where they lie,
// one dot product per key and one scaled row of v added per key, and the softmax is the
// same code the general path runs.
#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/packed.hpp"

namespace attnscope::kernels {

namespace {

// a · b over n floats.
float dot(const float* a, const float* b, std::int64_t n) {
  std::int64_t j = 0;
  float sum = 0.0f;
#ifdef __wasm_simd128__
  v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0;
  for (; j + 8 <= n; j += 8) {
    acc0 = multiply_add(wasm_v128_load(a + j), wasm_v128_load(b + j), acc0);
    acc1 = multiply_add(wasm_v128_load(a + j + 4), wasm_v128_load(b + j + 4), acc1);
  }
  const v128_t acc = wasm_f32x4_add(acc0, acc1);
  sum = (wasm_f32x4_extract_lane(acc, 0) + wasm_f32x4_extract_lane(acc, 1)) +
        (wasm_f32x4_extract_lane(acc, 2) + wasm_f32x4_extract_lane(acc, 3));
#endif
  for (; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

// o += p · x over n floats.
void add_scaled(float* o, float p, const float* x, std::int64_t n) {
  std::int64_t j = 0;
#ifdef __wasm_simd128__
  const v128_t scale = wasm_f32x4_splat(p);
  for (; j + 4 <= n; j += 4) wasm_v128_store(o + j, multiply_add(scale, wasm_v128_load(x + j), wasm_v128_load(o + j)));
#endif
  for (; j < n; ++j) o[j] += p * x[j];
}

}  // namespace

void few_rows_attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
                        const AttentionDims& d, const ScoreRule& rule, float* out, OutputLayout layout,
                        float* weights) {
  std::vector<std::vector<float>> scratch(weights ? 0 : pool.size());  // a row of scores per worker
  for (auto& s : scratch) s.resize(static_cast<std::size_t>(d.n_k));
  const Mask& mask = rule.mask;
  pool.parallel_for(static_cast<std::size_t>(d.heads), [&](std::size_t task, int worker) {
    const std::int64_t h = static_cast<std::int64_t>(task), g = h / d.group;
    const float* keys = k.data + g * d.kv_rows() * d.d_k;
    const float* values = v.data + g * d.kv_rows() * d.d_v;
    for (std::int64_t i = 0; i < d.n_q; ++i) {
      const KeyRange range = rule.keys(i);  // the keys row i may see: [begin, end)
      const std::int64_t end = std::clamp<std::int64_t>(range.last, -1, d.n_k - 1) + 1;
      const std::int64_t begin = std::clamp<std::int64_t>(range.first, 0, end);
      float* s = weights ? weights + (h * d.n_q + i) * d.n_k : scratch[static_cast<std::size_t>(worker)].data();
      const float* query = q.data + (h * d.n_q + i) * d.d_k;
      for (std::int64_t j = begin; j < end; ++j) s[j] = dot(query, keys + j * d.d_k, d.d_k);
      const std::int64_t off = mask.kind == Mask::Kind::none ? 0 : mask_row_offset(mask, h, i, d.n_q, d.n_k) + begin;
      ScoreRule row_rule = rule;  // the row from key `begin` on
      row_rule.offset -= begin;
      const std::int64_t visible =
          end > begin ? masked_softmax_row(s + begin, end - begin, i, row_rule,
                                           mask.kind == Mask::Kind::keep ? mask.keep + off : nullptr,
                                           mask.kind == Mask::Kind::additive ? mask.additive + off : nullptr)
                      : 0;
      if (weights) {
        std::fill(s, s + begin, 0.0f);
        std::fill(s + end, s + d.n_k, 0.0f);
      }
      float* o = out + h * layout.head_stride + i * layout.row_stride;  // zeros when no key is visible
      std::fill(o, o + d.d_v, 0.0f);
      for (std::int64_t j = begin; j < begin + visible; ++j) add_scaled(o, s[j], values + j * d.d_v, d.d_v);
    }
  });
}

}  // namespace attnscope::kernels
