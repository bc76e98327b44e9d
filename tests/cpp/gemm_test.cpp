// The packed GEMM against a plain triple loop, over awkward sizes, transposed B,
// bias, and column ranges (as the thread pool splits them).
#include "kernels/gemm.hpp"

#include <cstring>
#include <random>

#include "kernels/quantized.hpp"
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
  const auto* panels = static_cast<const float*>(w.packed->panels());
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

// 16-bit weights stay 16-bit in the panels and widen exactly: bf16 is float32's top half, f16 is
// rebiased (normals, subnormals, zeros of either sign). Widened whole (unpack), by column, and eight
// at a time (kernels::widen, the GEMM's per-panel path) they give the same float32 values.
TEST(Gemm, SixteenBitWeightsStaySixteenBitAndWidenExactly) {
  const std::int64_t k = 7, n = 13;
  std::vector<std::uint16_t> bf16(k * n), f16(k * n);
  std::vector<float> bf16_values(k * n), f16_values(k * n);
  std::mt19937 rng(3);
  for (std::int64_t i = 0; i < k * n; ++i) {
    bf16[i] = static_cast<std::uint16_t>(rng());
    if ((bf16[i] & 0x7f80) == 0x7f80) bf16[i] ^= 0x4000;  // finite: weights are checked at load
    const std::uint32_t bits = std::uint32_t{bf16[i]} << 16;
    std::memcpy(&bf16_values[i], &bits, 4);
    // f16 in all its forms: normal, subnormal (exponent 0), ±0
    f16[i] = i < 3 ? std::uint16_t(i == 0 ? 0x0000 : i == 1 ? 0x8000 : 0x0001) : static_cast<std::uint16_t>(rng());
    if ((f16[i] & 0x7c00) == 0x7c00) f16[i] ^= 0x4000;
    const int exponent = (f16[i] >> 10) & 31, mantissa = f16[i] & 1023;
    const double magnitude = exponent ? std::ldexp(1.0 + mantissa / 1024.0, exponent - 15) : std::ldexp(mantissa, -24);
    f16_values[i] = static_cast<float>(f16[i] & 0x8000 ? -magnitude : magnitude);
  }
  for (auto [raw, values, precision] :
       {std::tuple{&bf16, &bf16_values, kernels::Precision::bf16}, {&f16, &f16_values, kernels::Precision::f16}}) {
    // B [k, n] from a [n, k] source read transposed, as a Linear's [out, in] weight is.
    std::vector<std::uint16_t> transposed(k * n);
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j) transposed[j * k + p] = (*raw)[p * n + j];
    const kernels::PackedWeight w(kernels::MatrixSource{transposed.data(), precision, k, n, true});
    EXPECT_EQ(w.bytes() % 2, 0);
    const Tensor b = w.unpack();
    for (std::int64_t i = 0; i < k * n; ++i) EXPECT_EQ(b.data[i], (*values)[i]) << i;
    std::vector<float> column(k), widened(k * n);
    w.column(5, column.data());
    for (std::int64_t p = 0; p < k; ++p) EXPECT_EQ(column[p], (*values)[p * n + 5]);
    kernels::widen(raw->data(), precision, k * n, widened.data());
    for (std::int64_t i = 0; i < k * n; ++i) EXPECT_EQ(widened[i], (*values)[i]) << i;
    ASSERT_NE(w.matrix(), nullptr);  // natively Eigen multiplies a float32 copy
    for (std::int64_t i = 0; i < k * n; ++i) EXPECT_EQ(w.matrix()[i], (*values)[i]);
    // Each row of x through its own row of B (blocks of one row), read from the 16-bit panels.
    std::vector<float> x(k), rows(k * n);
    for (std::int64_t p = 0; p < k; ++p) x[p] = 0.25f * float(p + 1);
    w.block_rows(x.data(), 1, rows.data());
    for (std::int64_t i = 0; i < k * n; ++i) EXPECT_EQ(rows[i], x[i / n] * (*values)[i]) << i;
  }
}

// Quantized weights (ggml's Q8_0, Q4_0, Q4_K, Q6_K blocks, random bytes with finite scales) hold, by column and whole,
// the values ggml dequantizes, in panels of the file's own size (Q4_K's 6-bit scales as bytes: 4.625 bits a value).
TEST(Gemm, QuantizedWeightsHoldTheValuesGgmlDequantizes) {
  namespace k = kernels;
  std::mt19937 rng(5);
  for (k::Precision q : {k::Precision::q8_0, k::Precision::q4_0, k::Precision::q4_k, k::Precision::q6_k}) {
    const k::FileBlock& f = k::file_block(q);
    const std::int64_t depth = 512, n = 13, row_bytes = depth / f.values * f.bytes;
    std::vector<std::uint8_t> raw(static_cast<std::size_t>(n * row_bytes));
    for (auto& b : raw) b = static_cast<std::uint8_t>(rng());
    for (std::int64_t i = 0; i < n * depth / f.values; ++i) {  // d (and dmin): finite f16
      std::uint8_t* at = raw.data() + i * f.bytes + (q == k::Precision::q6_k ? 208 : 0);
      at[1] &= 0xbb;
      if (q == k::Precision::q4_k) at[3] &= 0xbb;  // its dmin
    }
    EXPECT_EQ(k::first_bad_block(q, raw.data(), n * depth / f.values), -1);
    std::vector<float> wide(static_cast<std::size_t>(n * depth));
    for (std::int64_t j = 0; j < n; ++j)
      k::dequantize_row(q, raw.data() + j * row_bytes, depth, wide.data() + j * depth);
    const k::PackedWeight w(k::MatrixSource{raw.data(), q, depth, n, true});
    const Tensor unpacked = w.unpack();
    std::vector<float> column(static_cast<std::size_t>(depth));
    int differ = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      w.column(j, column.data());
      for (std::int64_t p = 0; p < depth; ++p)
        differ += (column[p] != wide[j * depth + p]) + (unpacked.data[p * n + j] != wide[j * depth + p]);
    }
    EXPECT_EQ(differ, 0) << f.name;
    const double bits = 8.0 * k::panel_bytes(depth, q) / (depth * k::kPanelColumns);
    EXPECT_LE(bits, 8.0 * f.bytes / f.values * (q == k::Precision::q4_k ? 4.625 / 4.5 : 1.0)) << f.name;
  }
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
