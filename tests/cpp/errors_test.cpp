// Wrong input is an attnscope::Error whose message names the argument and shapes.
#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::expect_error;

using testing::random_tensor;

TEST(Errors, AttentionShapes) {
  const Runtime rt(2);
  const Tensor q = random_tensor({4, 32}, 1), k64 = random_tensor({4, 64}, 2), v = random_tensor({4, 8}, 3);
  expect_error([&] { rt.attention(q.view(), k64.view(), v.view()); }, "attention: k has d_k=64 but q has d_k=32");
  const Tensor k = random_tensor({4, 32}, 4), v5 = random_tensor({5, 8}, 5);
  expect_error([&] { rt.attention(q.view(), k.view(), v5.view()); }, "attention: v has n_k=5 but k has n_k=4");
  const Tensor q3 = random_tensor({2, 4, 32}, 6);
  expect_error([&] { rt.attention(q3.view(), k.view(), v.view()); }, "k has shape [4, 32] but q has shape [2, 4, 32]");
  const Tensor k3 = random_tensor({3, 4, 32}, 7), v3 = random_tensor({2, 4, 8}, 8);
  expect_error([&] { rt.attention(q3.view(), k3.view(), v3.view()); }, "attention: k has heads=3 but q has heads=2");
  const TensorView empty(q.data.data(), {0, 32});
  expect_error([&] { rt.attention(empty, k.view(), v.view()); }, "attention: q is empty (shape [0, 32])");
  const TensorView rank1(q.data.data(), {32});
  expect_error([&] { rt.attention(rank1, k.view(), v.view()); }, "attention: q must have rank 2 or 3, got shape [32]");
  std::vector<std::uint8_t> keep(12, 1);
  AttentionOptions o;
  o.mask = Mask::keep_mask(keep.data(), {3, 4});
  expect_error([&] { rt.attention(q.view(), k.view(), v.view(), o); },
               "mask has shape [3, 4] but needs [n_q, n_k] = [4, 4]");
}

TEST(Errors, NonFiniteInputAndScale) {
  const Runtime rt(1);
  Tensor q = random_tensor({3, 4}, 1);
  const Tensor k = random_tensor({3, 4}, 2), v = random_tensor({3, 4}, 3);
  q.data[5] = NAN;
  expect_error([&] { rt.attention(q.view(), k.view(), v.view()); },
               "attention: q has a non-finite value (NaN) at index 5");
  q.data[5] = INFINITY;
  expect_error([&] { rt.self_attention(q.view()); }, "selfAttention: x has a non-finite value (Infinity)");
  AttentionOptions o;
  o.scale = NAN;
  expect_error([&] { rt.attention(k.view(), k.view(), v.view(), o); }, "attention: scale must be a finite number");
  std::vector<float> add(9, 0.0f);
  add[4] = NAN;
  o = {};
  o.mask = Mask::additive_mask(add.data(), {3, 3});
  expect_error([&] { rt.attention(k.view(), k.view(), v.view(), o); }, "attention: mask has a non-finite value (NaN)");
}

// The check scans a chunk of 4,096 values at a time and only then looks for the index:
// every kind of non-finite value, in the first, a middle and the last chunk, at both
// edges of a chunk, is found at its own index; -Infinity passes only where allowed.
TEST(Errors, NonFiniteFoundAtItsIndexInLongData) {
  const std::int64_t n = 3 * 4096 + 5;
  std::vector<float> data(static_cast<std::size_t>(n), 1.5f);
  const struct {
    float value;
    const char* text;
  } kinds[] = {{NAN, "NaN"}, {INFINITY, "Infinity"}, {-INFINITY, "-Infinity"}};
  for (const auto& kind : kinds)
    for (std::int64_t i : {std::int64_t{0}, std::int64_t{4095}, std::int64_t{4096}, std::int64_t{8200}, n - 1}) {
      data[static_cast<std::size_t>(i)] = kind.value;
      expect_error([&] { check_finite("op", "x", data.data(), n, false); },
                   std::string("op: x has a non-finite value (") + kind.text + ") at index " + std::to_string(i));
      if (kind.value == -INFINITY)
        EXPECT_NO_THROW(check_finite("op", "x", data.data(), n, true));
      else
        expect_error([&] { check_finite("op", "x", data.data(), n, true); }, std::string("(") + kind.text + ")");
      data[static_cast<std::size_t>(i)] = 1.5f;
    }
  // Largest finite values and subnormals are finite.
  data[9000] = 3.4028235e38f;
  data[9001] = -3.4028235e38f;
  data[9002] = 1e-45f;
  EXPECT_NO_THROW(check_finite("op", "x", data.data(), n, false));
}

TEST(Errors, BudgetRefusesBeforeAllocating) {
  // 50,000² weights would be 10 GB: refused from shapes alone (data is never read).
  const Runtime rt(1);
  const float x = 0.0f;
  const TensorView q(&x, {50000, 1});
  expect_error([&] { rt.attention(q, q, q); }, "above the memory budget of 1024 MiB per call");
}

TEST(Errors, MultiHeadShapes) {
  const Runtime rt(1);
  const Tensor x = random_tensor({5, 8}, 1), w = random_tensor({8, 9}, 2), wo = random_tensor({9, 8}, 3);
  MultiHeadOptions o;
  o.heads = 2;
  expect_error(
      [&] {
        rt.multi_head_attention(x.view(), {w.view(), w.view(), w.view(), wo.view()}, o);
      },
      "multiHeadAttention: heads=2 does not divide the 9 columns of wq [8, 9]");
  const Tensor w8 = random_tensor({8, 8}, 4), w7 = random_tensor({7, 8}, 5), wo8 = random_tensor({8, 8}, 6);
  expect_error(
      [&] {
        rt.multi_head_attention(x.view(), {w7.view(), w8.view(), w8.view(), wo8.view()}, o);
      },
      "multiHeadAttention: wq has shape [7, 8] but x has d_model=8");
  expect_error(
      [&] {
        rt.multi_head_attention(x.view(), {w8.view(), w8.view(), w8.view(), wo.view()}, o);
      },
      "multiHeadAttention: wo has shape [9, 8] but needs [heads·d_v, d_model] = [8, 8]");
  const Tensor ctx = random_tensor({4, 6}, 7);
  o.context = ctx.view();
  expect_error(
      [&] {
        rt.multi_head_attention(x.view(), {w8.view(), w8.view(), w8.view(), wo8.view()}, o);
      },
      "multiHeadAttention: context has d_model=6 but x has d_model=8");
  o = {};
  o.heads = 0;
  expect_error(
      [&] {
        rt.multi_head_attention(x.view(), {w8.view(), w8.view(), w8.view(), wo8.view()}, o);
      },
      "heads must be an integer from 1 to 4096, got 0");
  const Tensor bias = random_tensor({7}, 8);
  o.heads = 2;
  MultiHeadParams p{w8.view(), w8.view(), w8.view(), wo8.view(), bias.view(), {}, {}, {}};
  expect_error([&] { rt.multi_head_attention(x.view(), p, o); },
               "multiHeadAttention: bq has shape [7] but heads·d_k=8");
}

TEST(Errors, RuntimeThreads) {
  expect_error([] { Runtime rt(0); }, "Runtime: threads must be from 1 to 64, got 0");
}

}  // namespace
}  // namespace attnscope
