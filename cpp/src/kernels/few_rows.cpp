// Attention for a few query rows against many keys: a decoding step (one new token against
// the KV cache), or a few characters typed at the end of the text.
//
// The general path packs every head's kᵀ and v into the GEMM's panels first. That pays off
// when many query rows share them, but a decoding step has one row per head, so packing the
// whole cache costs more than the attention itself. Here each row reads k and v where they lie.
// A task is one query row and the query heads of one key/value head, taken up to three at a
// time (a chunk): they read each key and each row of v once, together.
//
// Each inner loop keeps several independent sums in registers (heads × keys in the scores, heads ×
// columns in the weighted sum): a sum that takes one multiply-add per step waits on the last, so one
// head at a time with few sums leaves the CPU idle; and few enough for V8's 16 vector registers, or
// it keeps sums on the stack (see kKeys). `npm run bench:decode` times these loops.
//
// In a real step the step's weights pass through the caches between two reads of a layer's keys and
// values, which then come from memory, where one read stream is slower than several. So the keys a
// scores loop takes together, and the blocks of v a weighted sum takes together, come from stretches of
// the range far apart, read in lockstep: 3-4 streams each (`npm run bench:decode`, "after weights",
// reads each layer's share of a step's weights between two layers).
//
// Still, the loops' own loads miss one at a time between their multiply-adds (wasm has no prefetch
// instruction, and a load that misses holds up what follows it). So a task first reads each tile of
// about 64 KB of its keys (then of its values) into cache with nothing but loads, many lines in
// flight, and the loops above take the tile from there, every chunk of the task's heads in turn.
#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/simd.hpp"

namespace attnscope::kernels {

namespace {

constexpr int kChunk = 3;                 // query heads that read a key/value head's rows together
constexpr std::int64_t kValueBlock = 32;  // rows of v of each stretch a pass over the columns takes, in cache

// The query heads of a chunk: each head's query row, its row of scores (then probabilities) and
// its output row.
struct Chunk {
  int heads = 0;
  std::array<const float*, kChunk> q{};
  std::array<float*, kChunk> s{}, o{};
};

// Plain loops: natively (where the compiler vectorizes), and in wasm for widths not a multiple of 4.
void scores_plain(const Chunk& c, const float* keys, std::int64_t d, std::int64_t begin, std::int64_t end) {
  for (std::int64_t j = begin; j < end; ++j)
    for (int h = 0; h < c.heads; ++h) {
      float sum = 0.0f;
      for (std::int64_t p = 0; p < d; ++p) sum += c.q[h][p] * keys[j * d + p];
      c.s[h][j] = sum;
    }
}

void weighted_sum_plain(const Chunk& c, const float* values, std::int64_t d, std::int64_t begin, std::int64_t end) {
  for (int h = 0; h < c.heads; ++h)
    for (std::int64_t j = begin; j < end; ++j)
      for (std::int64_t col = 0; col < d; ++col) c.o[h][col] += c.s[h][j] * values[j * d + col];
}

#ifdef __wasm_simd128__
// The lane sums of a, b, c and d, as one vector.
v128_t lane_sums(v128_t a, v128_t b, v128_t c, v128_t d) {
  const v128_t ab = wasm_f32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 2, 6), wasm_i32x4_shuffle(a, b, 1, 5, 3, 7));
  const v128_t cd = wasm_f32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 2, 6), wasm_i32x4_shuffle(c, d, 1, 5, 3, 7));
  return wasm_f32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}

// s[h][j] = q[h] · keys[j] (rows of d floats, d a multiple of 4) for the chunk's H heads and j in
// [begin, end): H·K dot products in flight, each in its own sums. The K keys of a step come from K
// stretches of the range in lockstep (key t of each), so that the keys stream in as K reads far apart: a
// decoding step finds them in memory (the step's weights have passed through the caches since), and
// one read stream from memory is slower than several (`npm run bench:decode`).
template <int H, int K>
void scores(const Chunk& c, const float* keys, std::int64_t d, std::int64_t begin, std::int64_t end) {
  const std::int64_t stretch = (end - begin) / K;  // keys in each of the K stretches
  for (std::int64_t t = 0; t < stretch; ++t) {
    const float* k[K];
    for (int x = 0; x < K; ++x) k[x] = keys + (begin + x * stretch + t) * d;
    v128_t acc[H * K];
    for (v128_t& a : acc) a = wasm_f32x4_splat(0.0f);
    for (std::int64_t p = 0; p < d; p += 4) {
      v128_t key[K];
      for (int x = 0; x < K; ++x) key[x] = wasm_v128_load(k[x] + p);
      for (int h = 0; h < H; ++h) {
        const v128_t q = wasm_v128_load(c.q[h] + p);
        for (int x = 0; x < K; ++x) acc[h * K + x] = multiply_add(q, key[x], acc[h * K + x]);
      }
    }
    constexpr int kSums = (H * K + 3) / 4 * 4;
    alignas(16) float sums[kSums];
    const v128_t zero = wasm_f32x4_splat(0.0f);
    for (int i = 0; i < kSums; i += 4)
      wasm_v128_store(sums + i, lane_sums(acc[i], i + 1 < H * K ? acc[i + 1] : zero, i + 2 < H * K ? acc[i + 2] : zero,
                                          i + 3 < H * K ? acc[i + 3] : zero));
    for (int h = 0; h < H; ++h)
      for (int x = 0; x < K; ++x) c.s[h][begin + x * stretch + t] = sums[h * K + x];
  }
  scores_plain(c, keys, d, begin + K * stretch, end);
}

// o[h] += Σ_j p[h][j] · values[j] over the rows j of S blocks of `rows` rows each, from first[0], …,
// first[S − 1] (rows of d floats, d a multiple of 16): the chunk's H heads, 4 vectors of columns at a
// time (H·4 sums), each pass over the columns reading the blocks' rows from cache. The S blocks lie far
// apart and are read in lockstep, S streams from memory (see `scores`).
template <int H, int S>
void weighted_blocks(const Chunk& c, const float* values, std::int64_t d, const std::int64_t* first,
                     std::int64_t rows) {
  for (std::int64_t col = 0; col < d; col += 16) {
    v128_t acc[H][4];
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < 4; ++t) acc[h][t] = wasm_f32x4_splat(0.0f);
    for (std::int64_t r = 0; r < rows; ++r)
#pragma clang loop unroll(disable)  // the blocks' loop kept rolled: smaller code, as fast
      for (int b = 0; b < S; ++b) {
        const std::int64_t j = first[b] + r;
        v128_t row[4];
        for (int t = 0; t < 4; ++t) row[t] = wasm_v128_load(values + j * d + col + 4 * t);
        for (int h = 0; h < H; ++h) {
          const v128_t p = wasm_v128_load32_splat(c.s[h] + j);
          for (int t = 0; t < 4; ++t) acc[h][t] = multiply_add(p, row[t], acc[h][t]);
        }
      }
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < 4; ++t) {
        float* o = c.o[h] + col + 4 * t;
        wasm_v128_store(o, wasm_f32x4_add(wasm_v128_load(o), acc[h][t]));
      }
  }
}

// Sums in flight per loop: H heads × K keys in the scores (4-9, no more than V8's 16 vector registers
// hold beside the loads); in the weighted sum H heads × 4 vectors of columns, so that each pass over the
// columns reads whole 64-byte lines of v (4-12 sums; 12 for three heads spills a little, and is still
// faster than 2 vectors: `npm run bench:decode`).
template <int H>
constexpr int kKeys = H == 3 ? 3 : 4;
// Blocks of v read in lockstep (streams from memory).
constexpr int kValueStreams = 4;

// f(std::integral_constant<int, H>()) for a chunk of H = 1, 2 or 3 heads.
template <typename F>
void with_heads(int heads, F f) {
  if (heads == 3) return f(std::integral_constant<int, 3>());
  if (heads == 2) return f(std::integral_constant<int, 2>());
  f(std::integral_constant<int, 1>());
}
#endif

// The chunk's scores s[h][begin .. end) = q[h] · keys[j].
void chunk_scores(const Chunk& c, const float* keys, std::int64_t d, std::int64_t begin, std::int64_t end) {
#ifdef __wasm_simd128__
  if (d % 4 == 0)
    return with_heads(c.heads, [&](auto h) {
      constexpr int H = decltype(h)::value;
      scores<H, kKeys<H>>(c, keys, d, begin, end);
    });
#endif
  scores_plain(c, keys, d, begin, end);
}

// The chunk's outputs o[h] += Σ_j p[h][j] · values[j] over j in [begin, end): the range in kValueStreams
// stretches read in lockstep, kValueBlock rows of each at a time; the fewer than kValueStreams rows left
// over, and widths not a multiple of 16 (none of the models'), by the plain loop.
void chunk_weighted_sum(const Chunk& c, const float* values, std::int64_t d, std::int64_t begin, std::int64_t end) {
#ifdef __wasm_simd128__
  if (d % 16 == 0)
    return with_heads(c.heads, [&](auto h) {
      constexpr int H = decltype(h)::value, S = kValueStreams;
      const std::int64_t stretch = (end - begin) / S;
      for (std::int64_t r = 0; r < stretch; r += kValueBlock) {
        std::int64_t first[S];
        for (int b = 0; b < S; ++b) first[b] = begin + b * stretch + r;
        weighted_blocks<H, S>(c, values, d, first, std::min(kValueBlock, stretch - r));
      }
      weighted_sum_plain(c, values, d, begin + S * stretch, end);
    });
#endif
  weighted_sum_plain(c, values, d, begin, end);
}

// Rows of keys or of values a task reads into cache at a time: about 64 KB (L2 holds 512 KB and more), a multiple
// of 12, which the scores' 3 or 4 stretches and the weighted sum's 4 divide.
constexpr std::int64_t kTileBytes = 64 * 1024;
std::int64_t tile_rows(std::int64_t width) {
  return std::max<std::int64_t>(12, kTileBytes / (4 * std::max<std::int64_t>(width, 1)) / 12 * 12);
}

// Reads rows [begin, end) of `rows` (each `width` floats) into cache, as fast as memory gives them: one load per
// 64-byte line, from four stretches of the range in lockstep, nothing else in the loop. A decoding step finds its keys
// and values in memory, and in wasm, which has no prefetch instruction, the scores' and the weighted sum's own loads
// miss one at a time between their multiply-adds, so they read far slower than memory could (`npm run bench:decode`,
// "after weights"). This pass keeps many lines in flight.
void read_into_cache(const float* rows, std::int64_t width, std::int64_t begin, std::int64_t end) {
#ifdef __wasm_simd128__
  const float* from = rows + begin * width;
  const std::int64_t lines = (end - begin) * width / 16, stretch = lines / 4;
  v128_t s0 = wasm_i32x4_splat(0), s1 = s0, s2 = s0, s3 = s0;
  for (std::int64_t l = 0; l < stretch; ++l) {
    s0 = wasm_v128_or(s0, wasm_v128_load(from + l * 16));
    s1 = wasm_v128_or(s1, wasm_v128_load(from + (stretch + l) * 16));
    s2 = wasm_v128_or(s2, wasm_v128_load(from + (2 * stretch + l) * 16));
    s3 = wasm_v128_or(s3, wasm_v128_load(from + (3 * stretch + l) * 16));
  }
  for (std::int64_t l = 4 * stretch; l < lines; ++l) s0 = wasm_v128_or(s0, wasm_v128_load(from + l * 16));
  [[maybe_unused]] volatile int kept =  // so that the loads stay
      wasm_i32x4_extract_lane(wasm_v128_or(wasm_v128_or(s0, s1), wasm_v128_or(s2, s3)), 0);
#else
  (void)rows, (void)width, (void)begin, (void)end;  // natively the CPU's prefetchers and prefetch instructions serve
#endif
}

// f(t0, t1) for the tiles [t0, t1) of rows [begin, end), each read into cache first.
template <typename F>
void for_each_tile(const float* rows, std::int64_t width, std::int64_t begin, std::int64_t end, F f) {
  const std::int64_t tile = tile_rows(width);
  for (std::int64_t t0 = begin; t0 < end; t0 += tile) {
    const std::int64_t t1 = std::min(end, t0 + tile);
    read_into_cache(rows, width, t0, t1);
    f(t0, t1);
  }
}

}  // namespace

void few_rows_attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
                        const AttentionDims& d, const ScoreRule& rule, float* out, OutputLayout layout,
                        float* weights) {
  // A task: one query row, and the query heads of one key/value head (or a share of them when
  // there are fewer such tasks than threads), in chunks of up to kChunk.
  const std::int64_t kv_heads = d.heads / d.group;
  const std::int64_t shares = std::min<std::int64_t>(
      d.group, std::max<std::int64_t>(1, (pool.size() + kv_heads * d.n_q - 1) / (kv_heads * d.n_q)));
  const std::int64_t per_share = (d.group + shares - 1) / shares;
  std::vector<std::vector<float>> scratch(weights ? 0 : pool.size());  // score rows per worker
  for (auto& s : scratch) s.resize(static_cast<std::size_t>(per_share * d.n_k));
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
    std::vector<Chunk> chunks;
    for (std::int64_t first = h0; first < h1; first += kChunk) {
      Chunk& c = chunks.emplace_back();
      c.heads = static_cast<int>(std::min<std::int64_t>(kChunk, h1 - first));
      for (int x = 0; x < c.heads; ++x) {
        const std::int64_t h = first + x;
        c.q[x] = q.data + (h * d.n_q + i) * d.d_k;
        c.s[x] = weights ? weights + (h * d.n_q + i) * d.n_k
                         : scratch[static_cast<std::size_t>(worker)].data() + (h - h0) * d.n_k;
        c.o[x] = out + h * layout.head_stride + i * layout.row_stride;
        std::fill(c.o[x], c.o[x] + d.d_v, 0.0f);  // zeros where no key is visible
      }
    }
    // Each tile of keys is read into cache once, then every chunk's scores take it from there.
    for_each_tile(keys, d.d_k, begin, end, [&](std::int64_t t0, std::int64_t t1) {
      for (const Chunk& c : chunks) chunk_scores(c, keys, d.d_k, t0, t1);
    });
    std::int64_t visible = 0;  // keys from `begin` on that any head of the task keeps
    for (std::int64_t h = h0; h < h1; ++h) {
      float* s = chunks[static_cast<std::size_t>((h - h0) / kChunk)].s[static_cast<std::size_t>((h - h0) % kChunk)];
      visible = std::max(visible, softmax_keys(s, begin, end, h, i, rule, d));
      if (weights) {
        std::fill(s, s + begin, 0.0f);
        std::fill(s + end, s + d.n_k, 0.0f);
      }
    }
    for_each_tile(values, d.d_v, begin, begin + visible, [&](std::int64_t t0, std::int64_t t1) {
      for (const Chunk& c : chunks) chunk_weighted_sum(c, values, d.d_v, t0, t1);
    });
  });
}

}  // namespace attnscope::kernels
