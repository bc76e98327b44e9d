// The attention kernel against the plain-loop reference, over shapes, masks and threads.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/kernels.hpp"
#include "test_util.hpp"
#include "threads/thread_pool.hpp"

namespace attnscope {
namespace {

using testing::all_close;
using testing::random_tensor;

struct Case {
  std::int64_t heads, n_q, n_k, d_k, d_v;
  bool heads_axis, causal;
  int threads;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "heads=" << c.heads << (c.heads_axis ? "" : " (no axis)") << " n_q=" << c.n_q << " n_k=" << c.n_k
      << " d_k=" << c.d_k << " d_v=" << c.d_v << (c.causal ? " causal" : "") << " threads=" << c.threads;
}

class AttentionVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionVsReference, MatchesReference) {
  const Case c = GetParam();
  const auto shape = [&](std::int64_t r, std::int64_t cols) {
    return c.heads_axis ? Shape{c.heads, r, cols} : Shape{r, cols};
  };
  const Tensor q = random_tensor(shape(c.n_q, c.d_k), 1), k = random_tensor(shape(c.n_k, c.d_k), 2),
               v = random_tensor(shape(c.n_k, c.d_v), 3);
  AttentionOptions o;
  o.causal = c.causal;
  const Runtime rt(c.threads);
  const AttentionResult fast = rt.attention(q.view(), k.view(), v.view(), o);
  const AttentionResult ref = reference::attention(q.view(), k.view(), v.view(), o);
  EXPECT_TRUE(all_close(fast.weights, ref.weights));
  EXPECT_TRUE(all_close(fast.output, ref.output));

  // The weights handed over block by block (a sink, as the one-thread wasm bindings use): every row once,
  // the same values and output as the buffer.
  AttentionOptions sunk = o;
  const std::int64_t heads = c.heads_axis ? c.heads : 1;
  Tensor collected = Tensor::unfilled(shape(c.n_q, c.n_k));
  std::vector<int> handed(static_cast<std::size_t>(heads * c.n_q), 0);  // rows of different calls never overlap
  sunk.weights_sink = [&](std::int64_t h, std::int64_t row, std::int64_t rows, const float* values) {
    ASSERT_TRUE(h >= 0 && h < heads && row >= 0 && rows > 0 && row + rows <= c.n_q);
    std::copy_n(values, rows * c.n_k, collected.data.begin() + (h * c.n_q + row) * c.n_k);
    for (std::int64_t r = row; r < row + rows; ++r) ++handed[static_cast<std::size_t>(h * c.n_q + r)];
  };
  const AttentionResult through_sink = rt.attention(q.view(), k.view(), v.view(), sunk);
  EXPECT_TRUE(through_sink.weights.empty());
  EXPECT_EQ(std::count(handed.begin(), handed.end(), 1), heads * c.n_q);
  EXPECT_TRUE(all_close(collected, ref.weights));
  EXPECT_TRUE(all_close(through_sink.output, ref.output));

  o.return_weights = false;  // the scratch path must give the same output
  const AttentionResult no_weights = rt.attention(q.view(), k.view(), v.view(), o);
  EXPECT_TRUE(no_weights.weights.empty());
  EXPECT_TRUE(all_close(no_weights.output, ref.output));
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionVsReference,
                         ::testing::Values(Case{1, 1, 1, 1, 1, false, false, 1},    // smallest
                                           Case{1, 7, 5, 3, 4, false, false, 1},    // n_q != n_k, d_k != d_v
                                           Case{1, 7, 5, 3, 4, false, true, 2},     // causal, n_q > n_k
                                           Case{1, 5, 9, 3, 4, false, true, 2},     // causal, n_q < n_k
                                           Case{3, 33, 33, 8, 8, true, false, 2},   // blocks straddle 32 rows
                                           Case{4, 70, 70, 16, 16, true, true, 3},  // causal blocks, 3 threads
                                           Case{2, 100, 40, 64, 32, true, false, 4},
                                           Case{3, 1, 300, 64, 32, true, true, 2},   // a decoding step
                                           Case{2, 4, 130, 10, 6, true, false, 1}),  // few rows, odd widths
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;  // e.g. h4_q70_k70_dk16_dv16_causal_t3
                           return "h" + std::to_string(c.heads) + (c.heads_axis ? "" : "noaxis") + "_q" +
                                  std::to_string(c.n_q) + "_k" + std::to_string(c.n_k) + "_dk" + std::to_string(c.d_k) +
                                  "_dv" + std::to_string(c.d_v) + (c.causal ? "_causal" : "") + "_t" +
                                  std::to_string(c.threads);
                         });

TEST(Attention, KeepMaskHidesKeysAndFullyHiddenRowIsZero) {
  const Tensor q = random_tensor({4, 3}, 4), k = random_tensor({5, 3}, 5), v = random_tensor({5, 2}, 6);
  std::vector<std::uint8_t> keep(4 * 5, 1);
  keep[0 * 5 + 1] = 0;                              // query 0 never sees key 1
  for (int j = 0; j < 5; ++j) keep[2 * 5 + j] = 0;  // query 2 sees nothing
  AttentionOptions o;
  o.mask = Mask::keep_mask(keep.data(), {4, 5});
  const Runtime rt(2);
  const AttentionResult r = rt.attention(q.view(), k.view(), v.view(), o);
  EXPECT_TRUE(all_close(r.weights, reference::attention(q.view(), k.view(), v.view(), o).weights));
  EXPECT_EQ(r.weights.data[0 * 5 + 1], 0.0f);
  for (int j = 0; j < 5; ++j) EXPECT_EQ(r.weights.data[2 * 5 + j], 0.0f);
  for (int c = 0; c < 2; ++c) EXPECT_EQ(r.output.data[2 * 2 + c], 0.0f);
  for (float x : r.output.data) EXPECT_FALSE(std::isnan(x));
}

TEST(Attention, AdditiveMaskPerHeadWithNegativeInfinity) {
  const Tensor q = random_tensor({2, 3, 4}, 7), k = random_tensor({2, 6, 4}, 8), v = random_tensor({2, 6, 4}, 9);
  Tensor add = random_tensor({2, 3, 6}, 10);
  add.data[0] = -INFINITY;
  for (int j = 0; j < 6; ++j) add.data[(1 * 3 + 2) * 6 + j] = -INFINITY;  // head 1, query 2: all hidden
  AttentionOptions o;
  o.mask = Mask::additive_mask(add.data.data(), add.shape);
  const AttentionResult r = Runtime(2).attention(q.view(), k.view(), v.view(), o);
  const AttentionResult ref = reference::attention(q.view(), k.view(), v.view(), o);
  EXPECT_TRUE(all_close(r.weights, ref.weights));
  EXPECT_TRUE(all_close(r.output, ref.output));
  EXPECT_EQ(r.weights.data[0], 0.0f);
  for (int j = 0; j < 6; ++j) EXPECT_EQ(r.weights.data[(1 * 3 + 2) * 6 + j], 0.0f);
}

TEST(Attention, FusedPathMatchesReferenceAcrossKeyTilesAndMasks) {
  // Without weights, keys are processed in tiles of 64 with an online softmax: 200 keys span
  // four tiles; masks hide whole tiles for some rows, and query 3 sees nothing at all.
  const Tensor q = random_tensor({2, 70, 16}, 30, 2.0f), k = random_tensor({2, 200, 16}, 31, 2.0f),
               v = random_tensor({2, 200, 8}, 32);
  std::vector<std::uint8_t> keep(70 * 200, 1);
  for (int j = 0; j < 200; ++j) keep[3 * 200 + j] = 0;
  for (int j = 0; j < 128; ++j) keep[5 * 200 + j] = 0;  // query 5: only the last tiles
  Tensor add = random_tensor({2, 70, 200}, 33);
  for (int j = 64; j < 128; ++j) add.data[(1 * 70 + 7) * 200 + j] = -INFINITY;
  const Runtime rt(2);
  for (bool causal : {false, true}) {
    for (int kind = 0; kind < 3; ++kind) {
      AttentionOptions o;
      o.causal = causal;
      if (kind == 1) o.mask = Mask::keep_mask(keep.data(), {70, 200});
      if (kind == 2) o.mask = Mask::additive_mask(add.data.data(), add.shape);
      o.return_weights = false;
      const AttentionResult fused = rt.attention(q.view(), k.view(), v.view(), o);
      EXPECT_TRUE(testing::all_close(fused.output, reference::attention(q.view(), k.view(), v.view(), o).output))
          << "causal=" << causal << " mask kind " << kind;
    }
  }
}

// A decoding step's few query rows with grouped-query heads (few_rows.cpp): the heads of a key/value
// head take its keys together, and when there are fewer (key/value head, row) pairs than threads
// the heads of one are shared between tasks. Each head against the reference on its own key/value
// head, over group sizes, rows, threads, a cache wider than its keys, a window and weights kept or not.
TEST(Attention, FewRowsWithGroupedHeadsMatchTheReferencePerHead) {
  const std::int64_t d_k = 12, d_v = 20, n_k = 150, capacity = 160;  // 150 keys > the 64-key blocks
  for (auto [heads, kv_heads] : {std::pair<std::int64_t, std::int64_t>{4, 1}, {6, 2}, {3, 3}})
    for (std::int64_t n_q : {1, 3})
      for (int threads : {1, 2, 3})
        for (bool keep_weights : {true, false}) {
          const Tensor q = random_tensor({heads, n_q, d_k}, 40), k = random_tensor({kv_heads, capacity, d_k}, 41),
                       v = random_tensor({kv_heads, capacity, d_v}, 42);
          AttentionDims dims{heads, n_q, n_k, d_k, d_v, true};
          dims.group = heads / kv_heads;
          dims.kv_capacity = capacity;
          kernels::ScoreRule rule;
          rule.scale = 0.3f;
          rule.causal = true;
          rule.offset = n_k - n_q;  // the last n_q positions
          rule.window = n_q == 3 ? 100 : 0;
          Tensor out({n_q, heads * d_v}), weights({heads, n_q, n_k});
          ThreadPool pool(threads);
          kernels::attention(pool, q.view(), k.view(), v.view(), dims, rule, out.data.data(),
                             kernels::OutputLayout::side_by_side(dims), keep_weights ? weights.data.data() : nullptr);
          for (std::int64_t h = 0; h < heads; ++h) {
            const std::int64_t g = h / dims.group;
            Tensor qh({n_q, d_k}), kh({n_k, d_k}), vh({n_k, d_v});
            std::copy_n(q.data.begin() + h * n_q * d_k, n_q * d_k, qh.data.begin());
            std::copy_n(k.data.begin() + g * capacity * d_k, n_k * d_k, kh.data.begin());
            std::copy_n(v.data.begin() + g * capacity * d_v, n_k * d_v, vh.data.begin());
            for (float& x : qh.data) x *= rule.scale * std::sqrt(float(d_k));  // the reference scales by 1/√d_k
            std::vector<std::uint8_t> keep(static_cast<std::size_t>(n_q * n_k), 0);
            for (std::int64_t i = 0; i < n_q; ++i)
              for (std::int64_t j = 0; j < n_k; ++j) {
                const std::int64_t position = rule.offset + i;
                keep[static_cast<std::size_t>(i * n_k + j)] =
                    j <= position && (rule.window == 0 || j > position - rule.window);
              }
            AttentionOptions o;
            o.mask = Mask::keep_mask(keep.data(), {n_q, n_k});
            const AttentionResult ref = reference::attention(qh.view(), kh.view(), vh.view(), o);
            Tensor got({n_q, d_v}), got_weights({n_q, n_k});
            for (std::int64_t i = 0; i < n_q; ++i) {
              std::copy_n(out.data.begin() + i * heads * d_v + h * d_v, d_v, got.data.begin() + i * d_v);
              std::copy_n(weights.data.begin() + (h * n_q + i) * n_k, n_k, got_weights.data.begin() + i * n_k);
            }
            const std::string where = "heads " + std::to_string(heads) + "/" + std::to_string(kv_heads) + " rows " +
                                      std::to_string(n_q) + " threads " + std::to_string(threads) + " head " +
                                      std::to_string(h) + (keep_weights ? " with weights" : "");
            EXPECT_TRUE(all_close(got, ref.output)) << where;
            if (keep_weights) EXPECT_TRUE(all_close(got_weights, ref.weights)) << where;
          }
        }
}

// The kernel's sink against its own buffer where a block's keys start past 0 (a sliding window) and end before
// n_k (causal): the zeros on both sides of each block's keys are written in the reused block buffer too. Both start
// as NaN, so a value neither path wrote shows.
TEST(Attention, SinkGivesTheBufferWeightsWithASlidingWindow) {
  const std::int64_t heads = 2, n = 100, width = 16;
  const Tensor q = random_tensor({heads, n, width}, 60), k = random_tensor({heads, n, width}, 61),
               v = random_tensor({heads, n, width}, 62);
  const AttentionDims dims{heads, n, n, width, width, true};
  kernels::ScoreRule rule;
  rule.scale = 0.25f;
  rule.causal = true;
  rule.window = 40;
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    const std::size_t count = static_cast<std::size_t>(heads * n * n);
    std::vector<float> buffer(count, NAN), sunk(count, NAN), out(heads * n * width), sunk_out(out.size());
    kernels::attention(pool, q.view(), k.view(), v.view(), dims, rule, out.data(), kernels::OutputLayout::stacked(dims),
                       buffer.data());
    const WeightsSink sink = [&](std::int64_t h, std::int64_t row, std::int64_t rows, const float* values) {
      std::copy_n(values, rows * n, sunk.begin() + (h * n + row) * n);
    };
    kernels::attention(pool, q.view(), k.view(), v.view(), dims, rule, sunk_out.data(),
                       kernels::OutputLayout::stacked(dims), nullptr, &sink);
    EXPECT_EQ(std::count_if(sunk.begin(), sunk.end(), [](float x) { return std::isnan(x); }), 0) << threads;
    EXPECT_EQ(buffer, sunk) << threads << " threads";
    EXPECT_EQ(out, sunk_out) << threads << " threads";
    EXPECT_EQ(sunk[0 * n + 0], 1.0f);                   // row 0 sees key 0 alone
    EXPECT_EQ(sunk[(n - 1) * n + (n - 1 - 40)], 0.0f);  // outside the last row's window
  }
}

TEST(Attention, RowsOfWeightsSumToOne) {
  const Tensor q = random_tensor({3, 50, 16}, 11, 3.0f), k = random_tensor({3, 50, 16}, 12, 3.0f),
               v = random_tensor({3, 50, 16}, 13);
  AttentionOptions o;
  o.causal = true;
  const AttentionResult r = Runtime(2).attention(q.view(), k.view(), v.view(), o);
  for (std::int64_t row = 0; row < 3 * 50; ++row) {
    double sum = 0;
    for (std::int64_t j = 0; j < 50; ++j) sum += r.weights.data[row * 50 + j];
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << row;
  }
}

TEST(Attention, StableForHugeScores) {
  // Scores near 1e4 overflow exp() unless the row maximum is subtracted first.
  Tensor q({2, 2}), k({2, 2}), v({2, 2});
  q.data = {100, 0, 0, 100};
  k.data = {100, 0, 0, 100};
  v.data = {1, 2, 3, 4};
  AttentionOptions o;
  o.scale = 1.0f;
  const AttentionResult r = Runtime(1).attention(q.view(), k.view(), v.view(), o);
  EXPECT_FLOAT_EQ(r.weights.data[0], 1.0f);
  EXPECT_FLOAT_EQ(r.weights.data[1], 0.0f);
  EXPECT_FLOAT_EQ(r.output.data[2], 3.0f);
}

TEST(SelfAttention, DefaultScaleIsOneAndMatchesReference) {
  const Tensor x = random_tensor({9, 5}, 14, 0.5f);
  const AttentionResult r = Runtime(2).self_attention(x.view());
  AttentionOptions one;
  one.scale = 1.0f;
  EXPECT_TRUE(all_close(r.weights, reference::attention(x.view(), x.view(), x.view(), one).weights));
  EXPECT_TRUE(all_close(r.output, reference::self_attention(x.view()).output));
}

TEST(SelfAttention, PermutationEquivariant) {
  const Tensor x = random_tensor({6, 4}, 15);
  const std::vector<int> perm = {3, 0, 5, 1, 4, 2};
  Tensor px({6, 4});
  for (int i = 0; i < 6; ++i)
    for (int c = 0; c < 4; ++c) px.data[i * 4 + c] = x.data[perm[i] * 4 + c];
  const Runtime rt(2);
  const AttentionResult a = rt.self_attention(x.view()), b = rt.self_attention(px.view());
  for (int i = 0; i < 6; ++i)
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(b.output.data[i * 4 + c], a.output.data[perm[i] * 4 + c], 1e-5);
}

}  // namespace
}  // namespace attnscope
