// Rollout against a direct matrix product, max-flow on graphs with known answers,
// head summaries on maps whose measures are known, alignment, change and .npy.
#include "attnscope/analysis.hpp"

#include <cmath>
#include <cstring>
#include <random>

#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::all_close;
using testing::expect_error;

// Random row-stochastic maps [layers, heads, n, n].
Tensor random_attentions(std::int64_t layers, std::int64_t heads, std::int64_t n, std::uint32_t seed) {
  Tensor t({layers, heads, n, n});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.01f, 1.0f);
  for (std::int64_t r = 0; r < layers * heads * n; ++r) {
    float* row = t.data.data() + r * n;
    float sum = 0;
    for (std::int64_t j = 0; j < n; ++j) sum += row[j] = u(rng) * u(rng);
    for (std::int64_t j = 0; j < n; ++j) row[j] /= sum;
  }
  return t;
}

Eigen::MatrixXd map(const Tensor& a, std::int64_t l, std::int64_t h) {
  const std::int64_t heads = a.shape[1], n = a.shape[2];
  return ConstMatrixMap(a.data.data() + (l * heads + h) * n * n, n, n).cast<double>();
}

TEST(Rollout, IsTheProductOfHeadAveragedLayerGraphs) {
  const Tensor a = random_attentions(4, 3, 7, 1);
  for (bool residual : {false, true}) {
    const Tensor r = attention_rollout(a.data.data(), a.shape, residual);
    ASSERT_EQ(r.shape, (Shape{4, 7, 7}));
    Eigen::MatrixXd rolled = Eigen::MatrixXd::Identity(7, 7);
    for (std::int64_t l = 0; l < 4; ++l) {
      Eigen::MatrixXd layer = (map(a, l, 0) + map(a, l, 1) + map(a, l, 2)) / 3.0;
      if (residual) layer = 0.5 * layer + 0.5 * Eigen::MatrixXd::Identity(7, 7);
      rolled = layer * rolled;
      const Eigen::MatrixXd got = r.head(l).cast<double>();
      EXPECT_LT((got - rolled).cwiseAbs().maxCoeff(), 1e-5) << "layer " << l << " residual " << residual;
      // Every row of a rollout is a distribution over the input tokens.
      EXPECT_LT((got.rowwise().sum().array() - 1.0).abs().maxCoeff(), 1e-5);
    }
  }
}

TEST(MaxFlow, KnownGraphs) {
  // Cormen et al., Introduction to Algorithms, figure 26.1: the maximum flow is 23.
  const std::vector<FlowEdge> clrs = {{0, 1, 16}, {0, 2, 13}, {2, 1, 4},  {1, 3, 12}, {3, 2, 9},
                                      {2, 4, 14}, {4, 3, 7},  {3, 5, 20}, {4, 5, 4}};
  EXPECT_NEAR(max_flow(6, clrs, 0, 5), 23.0, 1e-9);
  // 0→1→3 carries 2, 0→1→2→3 the 1 left on 0→1, 0→2→3 the other 4: the source's 7 all arrive.
  EXPECT_NEAR(max_flow(4, {{0, 1, 3}, {0, 2, 4}, {1, 3, 2}, {2, 3, 5}, {1, 2, 1}}, 0, 3), 7.0, 1e-9);
  // The flow that needs a residual (backward) edge: a greedy path through the middle must be undone.
  EXPECT_NEAR(max_flow(4, {{0, 1, 1}, {0, 2, 1}, {1, 2, 1}, {1, 3, 1}, {2, 3, 1}}, 0, 3), 2.0, 1e-9);
  EXPECT_EQ(max_flow(3, {{0, 1, 5}}, 0, 2), 0.0);  // no path
  expect_error([] { max_flow(3, {{0, 1, -1}}, 0, 2); }, "maxFlow: an edge's capacity must be finite and ≥ 0");
  expect_error([] { max_flow(3, {{0, 7, 1}}, 0, 2); }, "maxFlow: edge end 7 is not a node in [0, 3)");
  expect_error([] { max_flow(3, {}, 1, 1); }, "maxFlow: the source and the sink are the same node");
}

TEST(AttentionFlow, OneLayerIsTheAveragedMapAndTwoLayersSumBottlenecks) {
  const Tensor one = random_attentions(1, 2, 5, 2);
  const Tensor f1 = attention_flow(one.data.data(), one.shape, false, {0, 1, 2, 3, 4});
  const Eigen::MatrixXd avg = (map(one, 0, 0) + map(one, 0, 1)) / 2.0;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_NEAR(f1.data[i * 5 + j], avg(i, j), 1e-6);

  // Two layers: every path i → k → j is edge-disjoint from the others, so the flow is Σ_k min(Â₂[i,k], Â₁[k,j]).
  const Tensor two = random_attentions(2, 1, 6, 3);
  for (bool residual : {false, true}) {
    const Tensor f = attention_flow(two.data.data(), two.shape, residual, {0, 3, 5});
    Eigen::MatrixXd a1 = map(two, 0, 0), a2 = map(two, 1, 0);
    if (residual) {
      a1 = 0.5 * a1 + 0.5 * Eigen::MatrixXd::Identity(6, 6);
      a2 = 0.5 * a2 + 0.5 * Eigen::MatrixXd::Identity(6, 6);
    }
    const int rows[] = {0, 3, 5};
    for (int r = 0; r < 3; ++r)
      for (int j = 0; j < 6; ++j) {
        double want = 0;
        for (int k = 0; k < 6; ++k) want += std::min(a2(rows[r], k), a1(k, j));
        EXPECT_NEAR(f.data[r * 6 + j], want, 1e-5) << "row " << rows[r] << " input " << j;
      }
  }
  expect_error([&] { attention_flow(two.data.data(), two.shape, true, {6}); },
               "attentionFlow: row 6 is not a token in [0, 6)");
  expect_error(
      [&] {
        attention_flow(two.data.data(), {2, 1, 6, 5}, true, {0});
      },
      "attentionFlow: attentions must be [layers, heads, n, n], got [2, 1, 6, 5]");
}

// One layer, one head per pattern: identity, previous token, uniform.
TEST(HeadSummaries, MeasureKnownPatterns) {
  const std::int64_t n = 5;
  Tensor a({1, 3, n, n});
  for (std::int64_t i = 0; i < n; ++i) {
    a.data[(0 * n + i) * n + i] = 1;                                              // head 0: itself
    a.data[(1 * n + i) * n + std::max<std::int64_t>(i - 1, 0)] = 1;               // head 1: the previous token
    for (std::int64_t j = 0; j < n; ++j) a.data[(2 * n + i) * n + j] = 1.0f / n;  // head 2: everywhere
  }
  const std::vector<std::uint8_t> special = {0, 0, 0, 0, 1}, punctuation = {0, 0, 0, 1, 0};
  const Tensor s = head_summaries(a.data.data(), a.shape, special, punctuation);
  ASSERT_EQ(s.shape, (Shape{1, 3, kHeadMeasures}));
  const auto at = [&](int h, int m) { return s.data[h * kHeadMeasures + m]; };
  EXPECT_NEAR(at(0, kEntropy), 0, 1e-6);
  EXPECT_NEAR(at(0, kSelf), 1, 1e-6);
  EXPECT_NEAR(at(0, kDistance), 0, 1e-6);
  EXPECT_NEAR(at(0, kSpecial), 2.0 / n, 1e-6);  // rows 0 (the first token) and 4 ([SEP]) look at themselves
  EXPECT_NEAR(at(1, kPrevious), 1, 1e-6);
  EXPECT_NEAR(at(1, kDistance), (n - 1.0) / n, 1e-6);
  EXPECT_NEAR(at(1, kPunctuation), 1.0 / n, 1e-6);  // row 4 looks at token 3
  EXPECT_NEAR(at(2, kEntropy), std::log(double(n)), 1e-5);
  EXPECT_NEAR(at(2, kDistance), 40.0 / 25.0, 1e-5);  // Σ_i Σ_j |i − j| = 40 over 5 × 5 cells
  EXPECT_NEAR(at(2, kSpecial), 2.0 / n, 1e-6);
  expect_error(
      [&] {
        head_summaries(a.data.data(), a.shape, {0, 1}, punctuation);
      },
      "headSummaries: special has 2 entries for 5 tokens");
}

TEST(HeadSummaries, PunctuationTokensIgnoreWordPieceMarkers) {
  const std::vector<std::string> tokens = {"[CLS]", ".", "\xE2\x96\x81,", "\xC4\xA0!", "##s", "\xE2\x80\x94",
                                           "cat",   "$", "\xE2\x96\x81",  "a."};
  EXPECT_EQ(punctuation_tokens(tokens), (std::vector<std::uint8_t>{0, 1, 1, 1, 0, 1, 0, 1, 0, 0}));
}

TEST(Compare, AlignsTokensAcrossMarkersAndCase) {
  const auto pairs = align_tokens({"[CLS]", "the", "cat", "sat", "[SEP]"}, {"[CLS]", "the", "dog", "sat", "[SEP]"});
  EXPECT_EQ(pairs, (std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 0}, {1, 1}, {3, 3}, {4, 4}}));
  const auto across = align_tokens({"\xE2\x96\x81The",
                                    "\xE2\x96\x81"
                                    "cat",
                                    "s"},
                                   {"the",
                                    "\xC4\xA0"
                                    "cat",
                                    "##s"});
  EXPECT_EQ(across.size(), 3u);
  EXPECT_TRUE(align_tokens({"a"}, {"b"}).empty());
}

TEST(Compare, ChangeIsZeroForTheSameMapsAndOneForDisjointOnes) {
  const Tensor a = random_attentions(2, 2, 4, 5);
  const std::vector<std::pair<std::int64_t, std::int64_t>> same = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
  const Tensor zero = attention_change(a.data.data(), a.shape, a.data.data(), a.shape, same);
  for (float x : zero.data) EXPECT_NEAR(x, 0, 1e-7);
  Tensor first({1, 1, 2, 2}), second({1, 1, 2, 2});
  first.data = {1, 0, 1, 0};
  second.data = {0, 1, 0, 1};
  const Tensor one =
      attention_change(first.data.data(), first.shape, second.data.data(), second.shape, {{0, 0}, {1, 1}});
  EXPECT_NEAR(one.data[0], 1, 1e-7);
  expect_error(
      [&] {
        attention_change(a.data.data(), a.shape, first.data.data(), first.shape, {{0, 0}});
      },
      "attentionChange: the runs have [2, 2] and [1, 1] layers × heads");
}

TEST(Compare, RowCosines) {
  const float a[] = {1, 0, 2, 2}, b[] = {0, 3, 1, 1};
  const Tensor c = row_cosines(a, b, 2, 2);
  EXPECT_NEAR(c.data[0], 0, 1e-7);
  EXPECT_NEAR(c.data[1], 1, 1e-7);
}

TEST(Npy, WritesVersion1LittleEndianFloat32) {
  const float data[] = {1.5f, -2, 3, 4, 5, 6};
  const std::string npy = to_npy(data, {2, 3});
  ASSERT_EQ(npy.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header = static_cast<unsigned char>(npy[8]) | static_cast<unsigned char>(npy[9]) << 8;
  EXPECT_EQ((10 + header) % 64, 0u);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(npy.compare(10, dict.size(), dict), 0);
  EXPECT_EQ(npy[10 + header - 1], '\n');
  ASSERT_EQ(npy.size(), 10 + header + 6 * sizeof(float));
  float back[6];
  std::memcpy(back, npy.data() + 10 + header, sizeof back);
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[5], 6.0f);
  EXPECT_NE(to_npy(data, {6}).find("'shape': (6,)"), std::string::npos);
}

}  // namespace
}  // namespace attnscope
