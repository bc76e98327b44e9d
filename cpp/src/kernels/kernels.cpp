#include "kernels/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "kernels/gemm.hpp"
#include "kernels/scores.hpp"
#include "kernels/vexp.hpp"

namespace attnscope::kernels {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr std::int64_t kRowBlock = 32;  // query rows per task
constexpr std::int64_t kGemmRowBlock = 16;
// Column blocks per thread when a GEMM splits its columns. Many small tasks balance the
// threads when one starts late (waking a worker is slow in wasm); natively fewer,
// since Eigen's GEMM packs all of A again for every task.
#ifdef __wasm_simd128__
constexpr std::int64_t kTasksPerThread = 16;
#else
constexpr std::int64_t kTasksPerThread = 4;
#endif
// A decoding step's GEMMs (fewer than kFewRows rows) read their panels in four streams far apart
// (gemm.cpp, narrow), which needs long column blocks: two per thread.
constexpr std::int64_t kFewRowTasksPerThread = 2;
}  // namespace

namespace {

// Soft-capping, before the mask: s = cap · tanh(s · scale / cap). Returns the scale left to
// apply (1 once capped).
float soft_cap(float* s, std::int64_t n, const ScoreRule& rule) {
  if (rule.softcap <= 0.0f) return rule.scale;
  const float inv = rule.scale / rule.softcap;
  for (std::int64_t j = 0; j < n; ++j) s[j] = rule.softcap * std::tanh(s[j] * inv);
  return 1.0f;
}

// The keys a block of query rows [r0, r0 + rows) needs, [begin, end): none past the last
// row's causal limit, none before the first row's window. `begin` is a multiple of 8, where
// PackedKV's panels start.
std::pair<std::int64_t, std::int64_t> block_keys(const ScoreRule& rule, const AttentionDims& d, std::int64_t r0,
                                                 std::int64_t rows) {
  const KeyRange first = rule.keys(r0), last = rule.keys(r0 + rows - 1);
  const std::int64_t end = std::clamp<std::int64_t>(last.last, -1, d.n_k - 1) + 1;
  const std::int64_t begin = std::clamp<std::int64_t>(first.first, 0, end) / kPanelColumns * kPanelColumns;
  return {begin, std::max(begin, end)};
}

}  // namespace

std::int64_t masked_softmax_row(float* s, std::int64_t n_k, std::int64_t i, const ScoreRule& rule,
                                const std::uint8_t* keep_row, const float* additive_row) {
  const KeyRange range = rule.keys(i);
  const std::int64_t visible = std::clamp<std::int64_t>(range.last, -1, n_k - 1) + 1;
  const float scale = soft_cap(s, visible, rule);
  // With no mask and no window every key up to `visible` is seen: the row's largest score is found without
  // writing the row, and the exp scales each score as it reads it (one pass over the row fewer; the same
  // values, since scaling by a positive factor keeps the largest value largest).
  const bool plain = !keep_row && !additive_row && range.first <= 0 && scale > 0.0f;
  const float max =
      plain ? max_of(s, visible) * scale : mask_scores(s, visible, 0, range, scale, keep_row, additive_row);
  if (max == kNegInf) {  // every key hidden: zeros, never NaN
    std::fill(s, s + n_k, 0.0f);
    return 0;
  }
  const float inv = 1.0f / (plain ? exp_shifted<true>(s, visible, max, scale) : exp_shifted(s, visible, max));
  for (std::int64_t j = 0; j < visible; ++j) s[j] *= inv;
  std::fill(s + visible, s + n_k, 0.0f);
  return visible;
}

std::int64_t softmax_keys(float* s, std::int64_t begin, std::int64_t end, std::int64_t h, std::int64_t i,
                          const ScoreRule& rule, const AttentionDims& d) {
  if (end <= begin) return 0;
  const Mask& mask = rule.mask;
  const std::int64_t off = mask.kind == Mask::Kind::none ? 0 : mask_row_offset(mask, h, i, d.n_q, d.n_k) + begin;
  ScoreRule row_rule = rule;  // the row from key `begin` on
  row_rule.offset -= begin;
  return masked_softmax_row(s + begin, end - begin, i, row_rule,
                            mask.kind == Mask::Kind::keep ? mask.keep + off : nullptr,
                            mask.kind == Mask::Kind::additive ? mask.additive + off : nullptr);
}

namespace {

constexpr std::int64_t kKeyTile = 512;  // keys per tile of the fused path

// Every head's kᵀ and v in the GEMM kernel's panels, packed once per call: row blocks
// of the same head would otherwise each pack them again (at n = 512, 16 times).
// Empty natively, where the GEMM reads them as they are.
class PackedKV {
 public:
  PackedKV(ThreadPool& pool, const TensorView& k, const TensorView& v, const AttentionDims& d)
      : k_size_(packed_size(d.d_k, d.n_k)), v_size_(packed_size(d.n_k, d.d_v)) {
    if (!kPacksB) return;
    k_.resize(static_cast<std::size_t>(d.heads / d.group * k_size_));
    v_.resize(static_cast<std::size_t>(d.heads / d.group * v_size_));
    pool.parallel_for(static_cast<std::size_t>(d.heads / d.group), [&](std::size_t task, int) {
      const std::int64_t h = static_cast<std::int64_t>(task);
      pack_b(GemmArgs().rhs(k.data + h * d.kv_rows() * d.d_k, d.d_k, /*transposed=*/true).shape(0, d.n_k, d.d_k),
             k_.data() + h * k_size_);
      pack_b(GemmArgs().rhs(v.data + h * d.kv_rows() * d.d_v, d.d_v).shape(0, d.d_v, d.n_k), v_.data() + h * v_size_);
    });
  }
  // Key/value head h's kᵀ [d_k, n_k] from key `key0` on (a multiple of 8), or null natively.
  const float* keys(std::int64_t h, std::int64_t key0, std::int64_t d_k) const {
    return k_.empty() ? nullptr : k_.data() + h * k_size_ + packed_size(d_k, key0);
  }
  // Key/value head h's v [n_k, d_v] from row `key0` on, or null natively; its panels hold n_k rows each.
  const float* values(std::int64_t h, std::int64_t key0) const {
    return v_.empty() ? nullptr : v_.data() + h * v_size_ + key0 * kPanelColumns;
  }

 private:
  std::int64_t k_size_, v_size_;  // floats per head
  std::vector<float> k_, v_;
};

// C of `g` on one thread, its b from PackedKV: panels in wasm, read as it is natively, so the
// GEMM needs no scratch panel (the empty vector never allocates).
void gemm_packed_kv(const GemmArgs& g) {
  std::vector<float> no_scratch;
  gemm_serial(g, no_scratch);
}

// The fused path, when no weights are wanted: keys in tiles of kKeyTile, a running
// max m and sum l per query (online softmax), the output accumulated and rescaled
// as m grows. Memory per thread: a [32, 512] score tile (64 KB) and a [32, d_v] product;
// nothing grows with n². Each tile rescales and adds into the output once, so long tiles
// pay that less often, and their p·v products run deeper. Same arguments as attention().
void fused_attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
                     const AttentionDims& d, const ScoreRule& rule, float* out, OutputLayout layout) {
  const std::int64_t blocks = (d.n_q + kRowBlock - 1) / kRowBlock;
  struct Scratch {
    std::vector<float> scores, product, m, l;
  };
  std::vector<Scratch> scratch(pool.size());
  const PackedKV packed(pool, k, v, d);
  for (auto& w : scratch) {
    w.scores.resize(static_cast<std::size_t>(kRowBlock * kKeyTile));
    w.product.resize(static_cast<std::size_t>(kRowBlock * d.d_v));
    w.m.resize(kRowBlock);
    w.l.resize(kRowBlock);
  }
  const Mask& mask = rule.mask;
  pool.parallel_for(static_cast<std::size_t>(d.heads * blocks), [&](std::size_t task, int worker) {
    Scratch& w = scratch[worker];
    const std::int64_t h = static_cast<std::int64_t>(task) / blocks, g = h / d.group;
    const std::int64_t r0 = (static_cast<std::int64_t>(task) % blocks) * kRowBlock;
    const std::int64_t rows = std::min(kRowBlock, d.n_q - r0);
    const auto [key_begin, key_end] = block_keys(rule, d, r0, rows);
    float* o = out + h * layout.head_stride + r0 * layout.row_stride;  // [rows, d_v], accumulated in place
    const std::int64_t ldo = layout.row_stride;
    for (std::int64_t r = 0; r < rows; ++r) std::fill(o + r * ldo, o + r * ldo + d.d_v, 0.0f);
    std::fill(w.m.begin(), w.m.end(), kNegInf);
    std::fill(w.l.begin(), w.l.end(), 0.0f);
    for (std::int64_t k0 = key_begin; k0 < key_end; k0 += kKeyTile) {
      const std::int64_t tile = std::min(kKeyTile, key_end - k0);
      // scores [rows, tile] = q rows · k[k0 .. k0+tile]ᵀ
      gemm_packed_kv({q.data + (h * d.n_q + r0) * d.d_k, d.d_k, k.data + (g * d.kv_rows() + k0) * d.d_k, d.d_k, true,
                      w.scores.data(), kKeyTile, rows, tile, d.d_k, nullptr, packed.keys(g, k0, d.d_k)});
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t i = r0 + r;
        float* s = w.scores.data() + r * kKeyTile;
        const std::int64_t off = mask.kind == Mask::Kind::none ? 0 : mask_row_offset(mask, h, i, d.n_q, d.n_k) + k0;
        const float scale = soft_cap(s, tile, rule);
        const float tile_max =
            mask_scores(s, tile, k0, rule.keys(i), scale, mask.kind == Mask::Kind::keep ? mask.keep + off : nullptr,
                        mask.kind == Mask::Kind::additive ? mask.additive + off : nullptr);
        if (tile_max == kNegInf) {  // nothing visible in this tile
          std::fill(s, s + tile, 0.0f);
          continue;
        }
        const float m_new = std::max(w.m[r], tile_max);
        const float correction = w.m[r] == kNegInf ? 0.0f : std::exp(w.m[r] - m_new);
        w.l[r] = w.l[r] * correction + exp_shifted(s, tile, m_new);
        w.m[r] = m_new;
        if (correction != 1.0f)
          for (std::int64_t c = 0; c < d.d_v; ++c) o[r * ldo + c] *= correction;
      }
      // product [rows, d_v] = probabilities [rows, tile] · v[k0 .. k0+tile]; o += product
      gemm_packed_kv({w.scores.data(), kKeyTile, v.data + (g * d.kv_rows() + k0) * d.d_v, d.d_v, false,
                      w.product.data(), d.d_v, rows, d.d_v, tile, nullptr, packed.values(g, k0), d.n_k});
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < d.d_v; ++c) o[r * ldo + c] += w.product[r * d.d_v + c];
    }
    for (std::int64_t r = 0; r < rows; ++r) {  // a row that saw no key stays all zeros
      const float inv = w.l[r] > 0.0f ? 1.0f / w.l[r] : 0.0f;
      for (std::int64_t c = 0; c < d.d_v; ++c) o[r * ldo + c] *= inv;
    }
  });
}

}  // namespace

void attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v, const AttentionDims& d,
               const ScoreRule& rule, float* out, OutputLayout layout, float* weights, const WeightsSink* sink) {
  if (d.n_q <= kFewRows && sink) {  // a few rows: the whole of them, then handed over head by head
    TensorData all(static_cast<std::size_t>(d.heads * d.n_q * d.n_k));
    few_rows_attention(pool, q, k, v, d, rule, out, layout, all.data());
    for (std::int64_t h = 0; h < d.heads; ++h) (*sink)(h, 0, d.n_q, all.data() + h * d.n_q * d.n_k);
    return;
  }
  if (d.n_q <= kFewRows) return few_rows_attention(pool, q, k, v, d, rule, out, layout, weights);
  if (!weights && !sink) return fused_attention(pool, q, k, v, d, rule, out, layout);
  const std::int64_t blocks = (d.n_q + kRowBlock - 1) / kRowBlock;
  const PackedKV packed(pool, k, v, d);
  // With a sink, each worker's block of rows is written here and handed over while in cache.
  std::vector<TensorData> own(sink ? pool.size() : 0);
  for (TensorData& block : own) block.resize(static_cast<std::size_t>(kRowBlock * d.n_k));

  pool.parallel_for(static_cast<std::size_t>(d.heads * blocks), [&](std::size_t task, int worker) {
    const std::int64_t h = static_cast<std::int64_t>(task) / blocks, g = h / d.group;
    const std::int64_t r0 = (static_cast<std::int64_t>(task) % blocks) * kRowBlock;
    const std::int64_t rows = std::min(kRowBlock, d.n_q - r0);
    // No row of this block sees a key outside [begin, end).
    const auto [begin, end] = block_keys(rule, d, r0, rows);
    float* s_data = sink ? own[static_cast<std::size_t>(worker)].data() : weights + (h * d.n_q + r0) * d.n_k;
    MatrixMap s(s_data, rows, d.n_k);  // scores, then probabilities: [rows, n_k]

    if (end > begin)  // scores [rows, begin .. end) = q[h][r0 .. r0+rows] · k[g][begin .. end)ᵀ
      gemm_packed_kv({q.data + (h * d.n_q + r0) * d.d_k, d.d_k, k.data + (g * d.kv_rows() + begin) * d.d_k, d.d_k, true,
                      s_data + begin, d.n_k, rows, end - begin, d.d_k, nullptr, packed.keys(g, begin, d.d_k)});
    for (std::int64_t r = 0; r < rows; ++r) softmax_keys(s.row(r).data(), begin, end, h, r0 + r, rule, d);
    if (begin > 0) s.leftCols(begin).setZero();
    if (end < d.n_k) s.rightCols(d.n_k - end).setZero();
    float* o = out + h * layout.head_stride + r0 * layout.row_stride;
    if (end == begin) {  // no key visible to any row: zeros
      for (std::int64_t r = 0; r < rows; ++r)
        std::fill(o + r * layout.row_stride, o + r * layout.row_stride + d.d_v, 0.0f);
    } else {  // out [rows, d_v] = probabilities [rows, begin .. end) · v[g][begin .. end)
      gemm_packed_kv({s_data + begin, d.n_k, v.data + (g * d.kv_rows() + begin) * d.d_v, d.d_v, false, o,
                      layout.row_stride, rows, d.d_v, end - begin, nullptr, packed.values(g, begin), d.n_k});
    }
    if (sink) (*sink)(h, r0, rows, s_data);
  });
}

namespace {

// Every GEMM of `gemms` in one parallel loop over blocks of their columns (a block never
// spans two of them); each task packs its own panels of b once for all rows. `first`, when
// given, runs on the calling thread before it joins the loop (ThreadPool::parallel_for).
void gemms_by_columns(ThreadPool& pool, const std::vector<GemmArgs>& gemms, const std::function<void()>& first = {}) {
  std::int64_t panels = 0;
  bool few_rows = true;
  for (const GemmArgs& g : gemms) {
    panels += (g.n + kPanelColumns - 1) / kPanelColumns;
    few_rows = few_rows && g.m < kFewRows;
  }
  const std::int64_t task_count = (few_rows ? kFewRowTasksPerThread : kTasksPerThread) * pool.size();
  const std::int64_t per_task = std::max<std::int64_t>(1, panels / task_count) * kPanelColumns;
  std::vector<std::pair<std::size_t, std::int64_t>> tasks;  // (which GEMM, first column)
  for (std::size_t i = 0; i < gemms.size(); ++i)
    for (std::int64_t col = 0; col < gemms[i].n; col += per_task) tasks.emplace_back(i, col);
  std::vector<std::vector<float>> packs(pool.size());
  pool.parallel_for(
      tasks.size(),
      [&](std::size_t task, int worker) {
        const auto [i, col] = tasks[task];
        gemm_columns(gemms[i], col, std::min(gemms[i].n, col + per_task), packs[worker]);
      },
      first);
}

}  // namespace

namespace {

// A GEMM by a streamed weight (a one-shot call's weight, read from JS) with at most this many rows of A
// multiplies each block of the weight's rows as it arrives, adding into C. Its panels never reach memory,
// but C is read and written again per block and each block's GEMM is short, so past a few dozen rows reading
// the weight whole into panels first is faster (`npm run bench:oneshot` compares them).
constexpr std::int64_t kStreamRows = 32;

bool streams(const PackedWeight* w, std::int64_t rows) { return w && w->source() && rows <= kStreamRows; }

// Where columns [first, first + count) of a streamed weight's product go (first a multiple of 8).
struct ColumnOutput {
  std::int64_t first, count;
  float* c;
  std::int64_t ldc;
  const float* bias;
};

// a · w into `outputs`, for a weight read from its source a block of rows at a time (for_each_block): every
// task packs its own panels of the block (checking them) and multiplies them into C while they are in cache.
// The weight is read once and never held whole.
void streamed_gemm(ThreadPool& pool, ConstMatrixMap a, const PackedWeight& w,
                   const std::vector<ColumnOutput>& outputs) {
  const std::int64_t k = w.k(), n = w.n();
  std::vector<float> packed(static_cast<std::size_t>(packed_size(std::min(k, stream_block_rows(n)), n)));
  std::vector<std::vector<float>> scratch(pool.size());
  for_each_block(
      *w.source(), k, n, &pool, kTasksPerThread * pool.size(),
      [&](const float* rows, std::int64_t r, std::int64_t count, std::int64_t c0, std::int64_t c1, int worker) {
        const bool finite = pack_rows_into(rows, n, count, c0, c1, packed.data(), count, 0);
        for (const ColumnOutput& o : outputs) {
          const std::int64_t begin = std::max(c0, o.first), end = std::min(c1, o.first + o.count);
          if (begin >= end) continue;
          GemmArgs g = GemmArgs()
                           .lhs(a.data() + r, a.cols())
                           .rhs(rows + o.first, n)  // natively Eigen reads the rows as they are
                           .out(o.c, o.ldc)
                           .shape(a.rows(), o.count, count)
                           .add(r == 0 ? o.bias : nullptr);
          g.accumulate = r > 0;
          if (kPacksB) g.packed = packed.data() + packed_size(count, o.first);
          gemm_columns(g, begin - o.first, end - o.first, scratch[static_cast<std::size_t>(worker)]);
        }
        return finite;
      });
}

// C of `g` across the threads, by blocks of columns, or of rows when columns are few.
void parallel_gemm(ThreadPool& pool, GemmArgs g, const PackedWeight* packed) {
#ifdef __wasm_simd128__
  if (packed) g.packed = packed->panels(), g.streamed = true, g.precision = packed->precision();
#else
  if (packed && packed->matrix()) g.b = packed->matrix();  // natively Eigen's GEMM does its own packing
#endif
  const std::int64_t m = g.m, n = g.n;
  const std::int64_t panels = (n + kPanelColumns - 1) / kPanelColumns, threads = pool.size();
  if (panels >= 2 * threads || m < 2 * kGemmRowBlock) {
    gemms_by_columns(pool, {g});
  } else {
    // Few columns, many rows: split the rows.
    std::vector<std::vector<float>> packs(pool.size());
    const std::int64_t block = std::max(kGemmRowBlock, (m + threads - 1) / threads);
    pool.parallel_for(static_cast<std::size_t>((m + block - 1) / block), [&](std::size_t task, int worker) {
      const std::int64_t r0 = static_cast<std::int64_t>(task) * block;
      GemmArgs rows = g;
      rows.a += r0 * g.lda;
      rows.c += r0 * g.ldc;
      rows.m = std::min(block, m - r0);
      gemm_serial(rows, packs[worker]);
    });
  }
}

}  // namespace

void gemm(ThreadPool& pool, ConstMatrixMap a, ConstMatrixMap b, const float* bias, MatrixMap c,
          const PackedWeight* packed) {
  const std::int64_t m = a.rows(), n = b.cols(), k = a.cols();
  if (streams(packed, m)) return streamed_gemm(pool, a, *packed, {{0, n, c.data(), n, bias}});
  if (packed && packed->source()) packed->read(&pool);
  parallel_gemm(pool, GemmArgs().lhs(a.data(), k).rhs(b.data(), n).out(c.data(), n).shape(m, n, k).add(bias), packed);
}

namespace {

// A streamed weight still to be read from JS whole, before a GEMM with `rows` rows multiplies it from panels
// (with fewer rows gemm() multiplies it block by block as it arrives instead).
bool read_whole_first(const PackedWeight* w, std::int64_t rows) { return w && w->source() && !streams(w, rows); }
bool unread(const PackedWeight* w) { return w && w->source(); }

// The GEMMs that write projection p's heads into `per_head` (its weight read by now). A packed weight whose heads do
// not start on whole panels (d not a multiple of 8) and that has no float32 copy to read instead (16-bit, in wasm)
// is multiplied whole into a buffer added to `whole`, split by head afterwards.
void add_head_gemms(const HeadProjection& p, std::vector<GemmArgs>& per_head,
                    std::vector<std::pair<const HeadProjection*, std::vector<float>>>& whole) {
  const std::int64_t m = p.a.rows(), k = p.a.cols(), d = p.w.cols() / p.heads;
  // Natively a streamed weight is read whole (it has no data of its own).
  const float* w = p.w.data() ? p.w.data() : p.packed && !kPacksB ? p.packed->matrix() : nullptr;
#ifdef __wasm_simd128__
  // One row (a decoding step): the heads' blocks [H, 1, d] are the row's columns in order, so one GEMM over every
  // column writes them. It reads the weight in long streams (gemm.cpp, narrow); a GEMM per head reads d columns,
  // 64 for most models, and its streams end before the CPU's prefetchers have caught up with them.
  if (m == 1 && p.packed) {
    GemmArgs g =
        GemmArgs().lhs(p.a.data(), k).rhs(w, p.w.cols()).out(p.out, p.w.cols()).shape(1, p.w.cols(), k).add(p.bias);
    g.packed = p.packed->panels(), g.streamed = true, g.precision = p.packed->precision();
    per_head.push_back(g);
    return;
  }
#endif
  if (!w && d % kPanelColumns) {
    whole.emplace_back(&p, std::vector<float>(static_cast<std::size_t>(m * p.w.cols())));
    GemmArgs g = GemmArgs()
                     .lhs(p.a.data(), k)
                     .rhs(nullptr, p.w.cols())
                     .out(whole.back().second.data(), p.w.cols())
                     .shape(m, p.w.cols(), k)
                     .add(p.bias);
    g.packed = p.packed->panels(), g.streamed = true, g.precision = p.packed->precision();
    per_head.push_back(g);
    return;
  }
  for (std::int64_t h = 0; h < p.heads; ++h) {
    // a [m, k] · columns h·d … (h+1)·d − 1 of w → out[h] [m, d]
    GemmArgs g =
        GemmArgs().lhs(p.a.data(), k).rhs(w ? w + h * d : nullptr, p.w.cols()).out(p.out + h * m * d, d).shape(m, d, k);
    if (p.bias) g.bias = p.bias + h * d;
#ifdef __wasm_simd128__
    // Head h's columns start on a panel of the packed weight when d is a whole number of panels.
    if (p.packed && d % kPanelColumns == 0)
      g.packed = p.packed->panels_from(h * d), g.streamed = true, g.precision = p.packed->precision();
#endif
    per_head.push_back(g);
  }
}

}  // namespace

void project_heads(ThreadPool& pool, const std::vector<HeadProjection>& projections, const PackedWeight* next,
                   std::int64_t next_rows) {
  // One GEMM per (projection, head): head h multiplies columns h·d … of w into its own [m, d] block.
  std::vector<std::pair<const HeadProjection*, std::vector<float>>> whole;
  std::vector<const HeadProjection*> by_columns;  // multiplied from panels, in this order
  std::vector<const HeadProjection*> streamed;    // a streamed weight's heads, each a whole number of panels
  for (const HeadProjection& p : projections)
    (streams(p.packed, p.a.rows()) && (p.w.cols() / p.heads) % kPanelColumns == 0 ? streamed : by_columns)
        .push_back(&p);
  const bool reads =
      std::any_of(by_columns.begin(), by_columns.end(), [](const HeadProjection* p) { return unread(p->packed); });
  if (pool.size() > 1 && reads) {
    // A one-shot call's weights come from JS, which only the calling thread can read, while the workers would
    // wait. So each projection's GEMMs run in a loop of their own, and while the workers start on them the
    // calling thread reads the next weight (packing it alone), then joins them.
    for (std::size_t i = 0; i < by_columns.size(); ++i) {
      const HeadProjection& p = *by_columns[i];
      if (unread(p.packed)) p.packed->read(&pool);  // not read ahead: the first one
      std::vector<GemmArgs> per_head;
      add_head_gemms(p, per_head, whole);
      const bool last = i + 1 == by_columns.size();
      const PackedWeight* ahead = last ? next : by_columns[i + 1]->packed;
      const bool read_ahead = last ? read_whole_first(next, next_rows) : unread(ahead);
      gemms_by_columns(pool, per_head, read_ahead ? std::function<void()>([ahead] { ahead->read(nullptr); }) : nullptr);
    }
  } else {
    std::vector<GemmArgs> per_head;
    for (const HeadProjection* p : by_columns) {
      if (unread(p->packed)) p->packed->read(&pool);
      add_head_gemms(*p, per_head, whole);
    }
    gemms_by_columns(pool, per_head);
  }
  for (const HeadProjection* p : streamed) {
    if (!p->packed->source()) {  // read whole since: the same weight as another projection's, or as `next`
      std::vector<GemmArgs> per_head;
      add_head_gemms(*p, per_head, whole);
      gemms_by_columns(pool, per_head);
      continue;
    }
    const std::int64_t m = p->a.rows(), d = p->w.cols() / p->heads;
    std::vector<ColumnOutput> heads;
    for (std::int64_t h = 0; h < p->heads; ++h)
      heads.push_back({h * d, d, p->out + h * m * d, d, p->bias ? p->bias + h * d : nullptr});
    streamed_gemm(pool, p->a, *p->packed, heads);
  }
  for (const auto& [p, c] : whole) {  // [m, H·d] → [H, m, d]
    const std::int64_t m = p->a.rows(), width = p->w.cols(), d = width / p->heads;
    for (std::int64_t h = 0; h < p->heads; ++h)
      for (std::int64_t i = 0; i < m; ++i) std::copy_n(c.data() + i * width + h * d, d, p->out + (h * m + i) * d);
  }
}

}  // namespace attnscope::kernels
