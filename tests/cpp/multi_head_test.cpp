// Multi-head attention (self and cross, with biases and masks) against the reference.
#include <algorithm>
#include <vector>

#include "attnscope/packing.hpp"
#include "kernels/packed.hpp"
#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::all_close;
using testing::random_tensor;

struct Weights {
  Tensor wq, wk, wv, wo, bq, bk, bv, bo;
  Weights(std::int64_t d_model, std::int64_t hk, std::int64_t hv, std::uint32_t seed)
      : wq(random_tensor({d_model, hk}, seed, 0.3f)),
        wk(random_tensor({d_model, hk}, seed + 1, 0.3f)),
        wv(random_tensor({d_model, hv}, seed + 2, 0.3f)),
        wo(random_tensor({hv, d_model}, seed + 3, 0.3f)),
        bq(random_tensor({hk}, seed + 4)),
        bk(random_tensor({hk}, seed + 5)),
        bv(random_tensor({hv}, seed + 6)),
        bo(random_tensor({d_model}, seed + 7)) {}
  MultiHeadParams params(bool biases) const {
    MultiHeadParams p{wq.view(), wk.view(), wv.view(), wo.view(), {}, {}, {}, {}};
    if (biases) {
      p.bq = bq.view();
      p.bk = bk.view();
      p.bv = bv.view();
      p.bo = bo.view();
    }
    return p;
  }
};

void expect_same(const MultiHeadResult& a, const MultiHeadResult& b) {
  EXPECT_TRUE(all_close(a.output, b.output, 1e-4f, 1e-4f));
  EXPECT_TRUE(all_close(a.weights, b.weights));
  EXPECT_TRUE(all_close(a.q, b.q, 1e-4f, 1e-4f));
  EXPECT_TRUE(all_close(a.k, b.k, 1e-4f, 1e-4f));
  EXPECT_TRUE(all_close(a.v, b.v, 1e-4f, 1e-4f));
}

TEST(MultiHead, SelfAttentionWithBiasesMatchesReference) {
  const Tensor x = random_tensor({37, 24}, 20);
  const Weights w(24, 24, 24, 21);
  MultiHeadOptions o;
  o.heads = 4;
  o.return_projections = true;
  for (int threads : {1, 2, 3}) {
    const MultiHeadResult r = Runtime(threads).multi_head_attention(x.view(), w.params(true), o);
    expect_same(r, reference::multi_head_attention(x.view(), w.params(true), o));
    EXPECT_EQ(r.weights.shape, (Shape{4, 37, 37}));
    EXPECT_EQ(r.q.shape, (Shape{4, 37, 6}));
  }
}

// The weights handed to a sink block by block instead of returned (the one-thread wasm bindings copy each block
// into the JS array): the same weights and output, each row handed over once, over threads and 32-row blocks.
TEST(MultiHead, WeightsThroughASinkAreTheReturnedOnes) {
  const std::int64_t n = 70, heads = 4;
  const Tensor x = random_tensor({n, 24}, 22);
  const Weights w(24, 24, 24, 23);
  MultiHeadOptions o;
  o.heads = heads;
  o.causal = true;
  const MultiHeadResult ref = reference::multi_head_attention(x.view(), w.params(true), o);
  for (int threads : {1, 2, 3}) {
    Tensor collected = Tensor::unfilled({heads, n, n});
    std::vector<int> handed(static_cast<std::size_t>(heads * n), 0);  // rows of different calls never overlap
    MultiHeadOptions sunk = o;
    sunk.weights_sink = [&](std::int64_t h, std::int64_t row, std::int64_t rows, const float* values) {
      ASSERT_TRUE(h >= 0 && h < heads && row >= 0 && rows > 0 && row + rows <= n);
      std::copy_n(values, rows * n, collected.data.begin() + (h * n + row) * n);
      for (std::int64_t r = row; r < row + rows; ++r) ++handed[static_cast<std::size_t>(h * n + r)];
    };
    const MultiHeadResult r = Runtime(threads).multi_head_attention(x.view(), w.params(true), sunk);
    EXPECT_TRUE(r.weights.empty());
    EXPECT_EQ(std::count(handed.begin(), handed.end(), 1), heads * n) << threads << " threads";
    EXPECT_TRUE(all_close(collected, ref.weights)) << threads << " threads";
    EXPECT_TRUE(all_close(r.output, ref.output, 1e-4f, 1e-4f)) << threads << " threads";
  }
}

TEST(MultiHead, CrossAttentionCausalDifferentDv) {
  const Tensor x = random_tensor({10, 12}, 30), ctx = random_tensor({15, 12}, 31);
  const Weights w(12, 6, 9, 32);  // 3 heads: d_k = 2, d_v = 3
  MultiHeadOptions o;
  o.heads = 3;
  o.causal = true;
  o.context = ctx.view();
  o.return_projections = true;
  const MultiHeadResult r = Runtime(2).multi_head_attention(x.view(), w.params(false), o);
  expect_same(r, reference::multi_head_attention(x.view(), w.params(false), o));
  EXPECT_EQ(r.weights.shape, (Shape{3, 10, 15}));
  EXPECT_EQ(r.v.shape, (Shape{3, 15, 3}));
  EXPECT_EQ(r.output.shape, (Shape{10, 12}));
}

TEST(MultiHead, PaddingMaskAndNoProjectionsByDefault) {
  const Tensor x = random_tensor({6, 8}, 40);
  const Weights w(8, 8, 8, 41);
  std::vector<std::uint8_t> keep(6 * 6, 1);
  for (int i = 0; i < 6; ++i) keep[i * 6 + 5] = 0;  // key 5 is padding
  MultiHeadOptions o;
  o.heads = 2;
  o.mask = Mask::keep_mask(keep.data(), {6, 6});
  const MultiHeadResult r = Runtime(2).multi_head_attention(x.view(), w.params(true), o);
  expect_same(r, reference::multi_head_attention(x.view(), w.params(true), o));
  EXPECT_TRUE(r.q.empty());
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 6; ++i) EXPECT_EQ(r.weights.data[(h * 6 + i) * 6 + 5], 0.0f);
}

TEST(MultiHead, OneHeadIsPlainAttentionThroughProjections) {
  // With identity projections, one head is exactly scaled dot-product attention on x.
  const Tensor x = random_tensor({5, 4}, 50);
  Tensor eye({4, 4});
  for (int i = 0; i < 4; ++i) eye.data[i * 4 + i] = 1.0f;
  MultiHeadOptions o;
  o.heads = 1;
  const MultiHeadResult r =
      Runtime(1).multi_head_attention(x.view(), {eye.view(), eye.view(), eye.view(), eye.view()}, o);
  const AttentionResult a = reference::attention(x.view(), x.view(), x.view());
  EXPECT_TRUE(all_close(r.output, a.output));
}

TEST(MultiHead, WithoutWoReturnsConcatenatedHeads) {
  const Tensor x = random_tensor({6, 8}, 60);
  const Weights w(8, 8, 12, 61);
  MultiHeadOptions o;
  o.heads = 4;
  const MultiHeadParams p{w.wq.view(), w.wk.view(), w.wv.view(), {}, {}, {}, {}, {}};
  const MultiHeadResult r = Runtime(2).multi_head_attention(x.view(), p, o);
  EXPECT_EQ(r.output.shape, (Shape{6, 12}));
  expect_same(r, reference::multi_head_attention(x.view(), p, o));
}

// A weight's rows as a one-shot call's JS array gives them: a block at a time, counted.
class VectorRows : public RowSource {
 public:
  VectorRows(const Tensor& w, std::vector<std::int64_t>& reads) : w_(w), reads_(reads) {}
  void read(std::int64_t first, std::int64_t count, float* out) const override {
    const std::int64_t n = w_.shape[1];
    for (std::int64_t r = first; r < first + count; ++r) ++reads_[static_cast<std::size_t>(r)];
    std::copy_n(w_.data.data() + first * n, count * n, out);
  }
  void reject(std::int64_t first, std::int64_t count, const float* rows) const override {
    check_finite("streamed", "w", rows, count * w_.shape[1], false, first * w_.shape[1]);
  }

 private:
  const Tensor& w_;
  std::vector<std::int64_t>& reads_;
};

// One-shot weights streamed from JS: GEMMs with few rows multiply each block of the weight's rows as it
// arrives, adding into their output; with many rows the weight is read whole first. Either way every row
// is read once, the result is the reference's, and a NaN in a later block names its index.
TEST(MultiHead, StreamedWeightsMatchReferenceBlockByBlockAndWhole) {
  const std::int64_t d = 200, heads = 5;  // 40 columns a head: whole panels; 163 rows a block, then 37
  ASSERT_LT(kernels::stream_block_rows(d), d);
  const Weights w(d, d, d, 60);
  MultiHeadOptions o;
  o.heads = heads;
  o.return_projections = true;
  for (const std::int64_t n : {1, 3, 37, 300}) {  // 1 and 3: the decoding-step kernel; 300: read whole
    const Tensor x = random_tensor({n, d}, 61 + static_cast<std::uint32_t>(n), 0.2f);
    const MultiHeadResult want = reference::multi_head_attention(x.view(), w.params(true), o);
    for (int threads : {1, 3}) {
      std::vector<std::vector<std::int64_t>> reads(4, std::vector<std::int64_t>(d));
      std::vector<std::unique_ptr<StreamedWeight>> s;
      for (const Tensor* t : {&w.wq, &w.wk, &w.wv, &w.wo})
        s.push_back(std::make_unique<StreamedWeight>(d, d, std::make_unique<VectorRows>(*t, reads[s.size()])));
      MultiHeadParams p = w.params(true);
      p.wq = s[0]->view(), p.wk = s[1]->view(), p.wv = s[2]->view(), p.wo = s[3]->view();
      EXPECT_EQ(p.wq.data, nullptr);
      expect_same(Runtime(threads).multi_head_attention(x.view(), p, o), want);
      for (const auto& r : reads) EXPECT_EQ(r, std::vector<std::int64_t>(d, 1)) << "n " << n;
    }
  }
  // W_K and W_O: with more than one thread and many rows, each is read while the GEMMs before it run (W_K beside
  // q's, W_O beside v's), so the error comes from the calling thread's work inside a parallel loop. The runtime
  // stays usable after it.
  for (const bool in_wk : {true, false}) {
    Tensor bad = in_wk ? w.wk : w.wo;
    bad.data[180 * d + 7] = std::numeric_limits<float>::infinity();  // in the second block
    std::vector<std::int64_t> reads(d);
    for (const std::int64_t n : {3, 300}) {
      for (int threads : {1, 2}) {
        const StreamedWeight s(d, d, std::make_unique<VectorRows>(bad, reads));
        MultiHeadParams p = w.params(false);
        (in_wk ? p.wk : p.wo) = s.view();
        const Runtime runtime(threads);
        const Tensor x = random_tensor({n, d}, 9, 0.2f);
        testing::expect_error([&] { runtime.multi_head_attention(x.view(), p, o); },
                              "streamed: w has a non-finite value (Infinity) at index " + std::to_string(180 * d + 7));
        expect_same(runtime.multi_head_attention(x.view(), w.params(false), o),
                    reference::multi_head_attention(x.view(), w.params(false), o));
      }
    }
  }
}

// One streamed weight given for W_Q, W_K and W_O (the C++ API allows it; JS gives each parameter its own): the first
// GEMM that reads it whole packs it once, and a projection that would have multiplied it block by block as it arrived
// multiplies those panels instead. Cross-attention, with x and the context on either side of 32 rows.
TEST(MultiHead, OneStreamedWeightForThreeParameters) {
  const std::int64_t d = 200, heads = 5;
  const Weights w(d, d, d, 70);
  for (const auto& [n, m] : {std::pair<std::int64_t, std::int64_t>{300, 3}, {3, 300}}) {
    const Tensor x = random_tensor({n, d}, 71, 0.2f), c = random_tensor({m, d}, 72, 0.2f);
    MultiHeadOptions o;
    o.heads = heads;
    o.context = c.view();
    MultiHeadParams want = w.params(true);
    want.wq = want.wk = want.wo = w.wk.view();
    const MultiHeadResult expected = reference::multi_head_attention(x.view(), want, o);
    for (int threads : {1, 2}) {
      std::vector<std::int64_t> reads(d);
      const StreamedWeight s(d, d, std::make_unique<VectorRows>(w.wk, reads));
      MultiHeadParams p = w.params(true);
      p.wq = p.wk = p.wo = s.view();
      expect_same(Runtime(threads).multi_head_attention(x.view(), p, o), expected);
      EXPECT_EQ(reads, std::vector<std::int64_t>(d, 1)) << "n " << n << ", " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace attnscope
