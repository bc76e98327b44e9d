// The packed GEMM against a plain triple loop, over awkward sizes, transposed B,
// bias, and column ranges (as the thread pool splits them).
#include "kernels/gemm.hpp"

#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::random_tensor;

// A weight packed once holds, panel by panel, the k × 8 blocks the kernel reads, zero past the last column.
TEST(Gemm, PackedWeightLaysOutPanelsOnce) {
  const std::int64_t k = 5, n = 11;
  Tensor w = random_tensor({k, n}, 4);
  kernels::prepare_weight(w);
  ASSERT_TRUE(w.packed);
  EXPECT_EQ(w.view().packed, w.packed.get());
  const float* panels = w.packed->panels();
  EXPECT_EQ(panels, w.packed->panels());  // packed once
  for (std::int64_t panel = 0; panel < 2; ++panel)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < 8; ++j) {
        const std::int64_t col = panel * 8 + j;
        EXPECT_EQ(panels[(panel * k + p) * 8 + j], col < n ? w.data[p * n + col] : 0.0f) << p << "," << col;
      }
  Tensor vector_like = random_tensor({n}, 5);
  kernels::prepare_weight(vector_like);  // only matrices are packed
  EXPECT_FALSE(vector_like.packed);
}

TEST(Gemm, MatchesPlainLoops) {
  std::vector<float> pack;
  for (const auto& [m, n, k] : {std::tuple{1, 1, 1}, {3, 5, 7}, {4, 8, 16}, {9, 17, 33}, {33, 130, 65}, {64, 8, 768}}) {
    for (bool transposed : {false, true}) {
      const Tensor a = random_tensor({m, k}, 1), b = random_tensor(transposed ? Shape{n, k} : Shape{k, n}, 2),
                   bias = random_tensor({n}, 3);
      Tensor c({m, n});
      kernels::gemm_serial({a.data.data(), k, b.data.data(), transposed ? k : n, transposed, c.data.data(), n, m, n, k,
                            bias.data.data()},
                           pack);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double want = bias.data[j];
          for (int p = 0; p < k; ++p)
            want += double(a.data[i * k + p]) * (transposed ? b.data[j * k + p] : b.data[p * n + j]);
          ASSERT_NEAR(c.data[i * n + j], want, 1e-4 * (1 + std::abs(want)))
              << m << "x" << n << "x" << k << (transposed ? " transposed" : "") << " at " << i << "," << j;
        }
    }
  }
}

TEST(Gemm, ColumnRangesComposeAndLeaveTheRestUntouched) {
  const int m = 5, n = 40, k = 12;
  const Tensor a = random_tensor({m, k}, 4), b = random_tensor({k, n}, 5);
  Tensor whole({m, n}), parts({m, n});
  std::fill(parts.data.begin(), parts.data.end(), 42.0f);
  std::vector<float> pack;
  const kernels::GemmArgs g{a.data.data(), k, b.data.data(), n, false, whole.data.data(), n, m, n, k, nullptr};
  kernels::gemm_serial(g, pack);
  kernels::GemmArgs p = g;
  p.c = parts.data.data();
  kernels::gemm_columns(p, 8, 24, pack);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      if (j >= 8 && j < 24)
        EXPECT_EQ(parts.data[i * n + j], whole.data[i * n + j]);
      else
        EXPECT_EQ(parts.data[i * n + j], 42.0f);
    }
}

}  // namespace
}  // namespace attnscope
