// Multi-head attention (self and cross, with biases and masks) against the reference.
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

}  // namespace
}  // namespace attnscope
