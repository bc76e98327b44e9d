// Attention for a few query rows against many keys: a decoding step (one new token against
// the KV cache), or a few characters typed at the end of the text.
//
// The general path packs every head's kᵀ and v into the GEMM's panels first. That pays off
// when many query rows share them, but a decoding step has one row per head, so packing the
// whole cache cost more than the attention itself: at 1,024 tokens of context, a
// SmolLM2-135M-shaped step went from 15 to 29 ms. Here each row reads k and v where they lie:
// the query heads that share a key/value head take each block of keys in turn while it is in
// cache, four keys' dot products at a time, then their probabilities times v with a block of
// the output row held in registers over every key; the softmax is the same code the general
// path runs. Measured on 30 layers of that step at 1,024 tokens (one thread, cache warm):
// 5.8 ms before, 3.9-4.5 after.
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

#ifdef __wasm_simd128__
// The lane sums of a, b, c and d, as one vector.
v128_t lane_sums(v128_t a, v128_t b, v128_t c, v128_t d) {
  const v128_t ab = wasm_f32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 2, 6), wasm_i32x4_shuffle(a, b, 1, 5, 3, 7));
  const v128_t cd = wasm_f32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 2, 6), wasm_i32x4_shuffle(c, d, 1, 5, 3, 7));
  return wasm_f32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}
#endif

// s[j] = query · keys[j] (rows of d floats) for j in [begin, end). Four keys at a time, each into
// its own sums: one dot product at a time waits on its sums' latency. Not more: with eight, V8
// kept a sum on the stack (it has 16 vector registers, and loads all keys' vectors first), and
// 30 layers of a SmolLM2-135M step at 1,024 tokens took 4.9 ms against 4.3 with four (5.8 one
// key at a time).
void scores(const float* query, const float* keys, std::int64_t d, std::int64_t begin, std::int64_t end, float* s) {
  std::int64_t j = begin;
#ifdef __wasm_simd128__
  if (d % 4 == 0)
    for (; j + 4 <= end; j += 4) {
      const float* k = keys + j * d;
      v128_t acc[4];
      for (v128_t& a : acc) a = wasm_f32x4_splat(0.0f);
      for (std::int64_t p = 0; p < d; p += 4) {
        const v128_t q = wasm_v128_load(query + p);
        for (int t = 0; t < 4; ++t) acc[t] = multiply_add(q, wasm_v128_load(k + t * d + p), acc[t]);
      }
      wasm_v128_store(s + j, lane_sums(acc[0], acc[1], acc[2], acc[3]));
    }
#endif
  for (; j < end; ++j) s[j] = dot(query, keys + j * d, d);
}

// o[c0 .. c1) = Σ p[j] · values[j][c0 .. c1) (rows of d floats) over j in [begin, end).
// Sixteen columns of o at a time stay in registers over every key, instead of o being read and
// written per key (thirty-two kept sums on the stack, as in scores()).
void weighted_sum(const float* p, const float* values, std::int64_t d, std::int64_t c0, std::int64_t c1,
                  std::int64_t begin, std::int64_t end, float* o) {
  std::int64_t c = c0;
#ifdef __wasm_simd128__
  for (; c + 16 <= c1; c += 16) {
    v128_t acc[4];
    for (v128_t& a : acc) a = wasm_f32x4_splat(0.0f);
    for (std::int64_t j = begin; j < end; ++j) {
      const v128_t x = wasm_v128_load32_splat(p + j);
      const float* row = values + j * d + c;
      for (int t = 0; t < 4; ++t) acc[t] = multiply_add(x, wasm_v128_load(row + 4 * t), acc[t]);
    }
    for (int t = 0; t < 4; ++t) wasm_v128_store(o + c + 4 * t, acc[t]);
  }
  for (; c + 4 <= c1; c += 4) {
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (std::int64_t j = begin; j < end; ++j)
      acc = multiply_add(wasm_v128_load32_splat(p + j), wasm_v128_load(values + j * d + c), acc);
    wasm_v128_store(o + c, acc);
  }
#endif
  for (; c < c1; ++c) {
    float sum = 0.0f;
    for (std::int64_t j = begin; j < end; ++j) sum += p[j] * values[j * d + c];
    o[c] = sum;
  }
}

constexpr std::int64_t kKeyBlock = 64;     // keys whose rows every query head of their group reads in turn
constexpr std::int64_t kColumnBlock = 16;  // columns of v likewise

}  // namespace

void few_rows_attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
                        const AttentionDims& d, const ScoreRule& rule, float* out, OutputLayout layout,
                        float* weights) {
  // A task: one query row, and the query heads of one key/value head (or a share of them when
  // there are fewer such tasks than threads). Those heads read the same keys and values, a block
  // at a time while it is in cache, so the cache is read once, not once per query head.
  const std::int64_t kv_heads = d.heads / d.group;
  const std::int64_t shares = std::min<std::int64_t>(
      d.group, std::max<std::int64_t>(1, (pool.size() + kv_heads * d.n_q - 1) / (kv_heads * d.n_q)));
  const std::int64_t per_share = (d.group + shares - 1) / shares;
  std::vector<std::vector<float>> scratch(weights ? 0 : pool.size());  // score rows per worker
  for (auto& s : scratch) s.resize(static_cast<std::size_t>(per_share * d.n_k));
  const Mask& mask = rule.mask;
  const auto tasks = static_cast<std::size_t>(kv_heads * d.n_q * shares);
  pool.parallel_for(tasks, [&](std::size_t task, int worker) {
    const std::int64_t t = static_cast<std::int64_t>(task), share = t % shares, i = t / shares % d.n_q,
                       g = t / shares / d.n_q;
    const std::int64_t h0 = g * d.group + share * per_share, h1 = std::min(h0 + per_share, (g + 1) * d.group);
    const float* keys = k.data + g * d.kv_rows() * d.d_k;
    const float* values = v.data + g * d.kv_rows() * d.d_v;
    const KeyRange range = rule.keys(i);  // the keys row i may see: [begin, end)
    const std::int64_t end = std::clamp<std::int64_t>(range.last, -1, d.n_k - 1) + 1;
    const std::int64_t begin = std::clamp<std::int64_t>(range.first, 0, end);
    const auto row = [&](std::int64_t h) {
      return weights ? weights + (h * d.n_q + i) * d.n_k
                     : scratch[static_cast<std::size_t>(worker)].data() + (h - h0) * d.n_k;
    };
    for (std::int64_t j = begin; j < end; j += kKeyBlock)
      for (std::int64_t h = h0; h < h1; ++h)
        scores(q.data + (h * d.n_q + i) * d.d_k, keys, d.d_k, j, std::min(j + kKeyBlock, end), row(h));
    std::vector<std::int64_t> visible(static_cast<std::size_t>(h1 - h0));  // keys each row keeps
    for (std::int64_t h = h0; h < h1; ++h) {
      float* s = row(h);
      const std::int64_t off = mask.kind == Mask::Kind::none ? 0 : mask_row_offset(mask, h, i, d.n_q, d.n_k) + begin;
      ScoreRule row_rule = rule;  // the row from key `begin` on
      row_rule.offset -= begin;
      visible[static_cast<std::size_t>(h - h0)] =
          end > begin ? masked_softmax_row(s + begin, end - begin, i, row_rule,
                                           mask.kind == Mask::Kind::keep ? mask.keep + off : nullptr,
                                           mask.kind == Mask::Kind::additive ? mask.additive + off : nullptr)
                      : 0;
      if (weights) {
        std::fill(s, s + begin, 0.0f);
        std::fill(s + end, s + d.n_k, 0.0f);
      }
    }
    for (std::int64_t c = 0; c < d.d_v; c += kColumnBlock)  // zeros where no key is visible
      for (std::int64_t h = h0; h < h1; ++h)
        weighted_sum(row(h), values, d.d_v, c, std::min(c + kColumnBlock, d.d_v), begin,
                     begin + visible[static_cast<std::size_t>(h - h0)],
                     out + h * layout.head_stride + i * layout.row_stride);
  });
}

}  // namespace attnscope::kernels
