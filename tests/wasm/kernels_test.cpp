// The SIMD128 kernels against plain code, run in wasm (node build/wasm/kernels_test.js, and its relaxed-SIMD twin
// kernels_test_relaxed.js): native builds take the std:: path (and Eigen's GEMM), so only here is the four-lane code
// tested directly. Element-wise exp, GELU (exact, tanh and quick) and SiLU against libm, score masking, the softmax of
// a row without a mask against the same row masked by ones, the GEMM on float32, 16-bit and quantized weight panels,
// the top-k probabilities of a row of logits against the softmax of the whole row, the few-row attention of a decoding
// step against the float64 reference, the screened greedy argmax against the whole product's, and a packed weight's
// blocks of rows (heads through W_O) against a float64 loop. Prints the largest errors; exits 1 if one is over its
// bound.
#include "kernels/kernels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "attnscope/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/quantized.hpp"
#include "kernels/scores.hpp"
#include "kernels/screened_argmax.hpp"
#include "kernels/vexp.hpp"
#include "models/sampling.hpp"

namespace {

int failures = 0;

void expect_below(const char* what, double error, double bound) {
  std::printf("%-44s %.3g (bound %.3g)\n", what, error, bound);
  if (!(error <= bound)) ++failures;
}

// A dense grid over [lo, hi] plus the edges, in a length that leaves a scalar tail.
std::vector<float> grid(float lo, float hi, int count) {
  std::vector<float> x(static_cast<std::size_t>(count) + 3);
  for (int i = 0; i < count; ++i) x[i] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(count - 1);
  x[count] = lo, x[count + 1] = hi, x[count + 2] = 0.0f;
  return x;
}

// mask_scores (four lanes) against mask_scores_plain, bit for bit: every combination of masks, over lengths with and
// without a scalar tail, causal limits and window starts before, inside and past the row; additive masks holding -inf.
// Returns the number of rows whose values or maximum differ in any bit.
int mask_scores_mismatches() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::bernoulli_distribution coin(0.3);
  int mismatches = 0;
  for (std::int64_t count : {1, 3, 4, 5, 8, 13, 64, 127}) {
    std::vector<float> scores(count), additive(count);
    std::vector<std::uint8_t> keep(count);
    for (int trial = 0; trial < 40; ++trial) {
      for (std::int64_t j = 0; j < count; ++j) {
        scores[j] = normal(rng);
        additive[j] = coin(rng) ? -std::numeric_limits<float>::infinity() : normal(rng);
        keep[j] = trial % 5 == 0 ? 0 : !coin(rng);  // every fifth row hides every key
      }
      const bool causal = trial % 2 == 1, windowed = trial % 6 >= 3;
      const std::int64_t key0 = trial % 3 * 32, i = key0 + trial % 7 * 21 - 40;
      attnscope::kernels::KeyRange range;
      if (causal) range.last = i;
      if (windowed) range.first = i - trial % 5 * 9;  // windows starting before, inside and past the row
      const bool with_keep = trial % 4 >= 2, with_additive = trial % 8 >= 4;
      std::vector<float> lanes = scores, plain = scores;
      const std::uint8_t* k = with_keep ? keep.data() : nullptr;
      const float* a = with_additive ? additive.data() : nullptr;
      const float m1 = attnscope::kernels::mask_scores(lanes.data(), count, key0, range, 0.125f, k, a);
      const float m2 = attnscope::kernels::mask_scores_plain(plain.data(), count, key0, range, 0.125f, k, a);
      if (std::memcmp(&m1, &m2, sizeof m1) != 0 || std::memcmp(lanes.data(), plain.data(), count * sizeof(float)) != 0)
        ++mismatches;
    }
  }
  return mismatches;
}

// masked_softmax_row without a mask (the largest score found without writing the row, each score scaled as the exp
// reads it) against the same row through the masking pass (a keep row of ones): bit for bit, over lengths with and
// without a scalar tail, causal limits, soft-capping, and the scales attention uses. Returns the rows that differ.
int plain_softmax_mismatches() {
  namespace k = attnscope::kernels;
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  int mismatches = 0;
  for (std::int64_t n : {1, 3, 4, 7, 8, 9, 64, 1001})
    for (float scale : {0.125f, 1.0f, 0.37f, 1e-3f})
      for (int trial = 0; trial < 6; ++trial) {
        std::vector<float> plain(static_cast<std::size_t>(n)), masked;
        for (float& v : plain) v = normal(rng) * (trial == 5 ? 1e4f : 1.0f);
        masked = plain;
        const std::vector<std::uint8_t> ones(static_cast<std::size_t>(n), 1);
        k::ScoreRule rule;
        rule.scale = scale;
        rule.causal = trial % 2 == 1;  // row i = n / 2 sees keys up to n / 2
        rule.softcap = trial == 4 ? 30.0f : 0.0f;
        const std::int64_t i = n / 2;
        const std::int64_t a = k::masked_softmax_row(plain.data(), n, i, rule, nullptr, nullptr);
        const std::int64_t b = k::masked_softmax_row(masked.data(), n, i, rule, ones.data(), nullptr);
        if (a != b || std::memcmp(plain.data(), masked.data(), plain.size() * sizeof(float)) != 0) ++mismatches;
      }
  return mismatches;
}

// The GEMM from the packed weight `w` (B [depth, n], its panels in `precision`) against a float64 loop over `wide`
// (the same weight as [n, depth] float32) for every row count the GEMM takes apart (1-3 rows, 4, 5, 9, 35), with and
// without bias, its columns in two blocks as two tasks would: the largest error relative to the sum of the terms'
// magnitudes.
double packed_gemm_error(const attnscope::kernels::PackedWeight& w, attnscope::kernels::Precision precision,
                         const std::vector<float>& wide, std::mt19937& rng) {
  namespace k = attnscope::kernels;
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const std::int64_t depth = w.k(), n = w.n();
  double worst = 0;
  std::vector<float> pack;
  for (std::int64_t m : {1, 2, 3, 4, 5, 9, 35})
    for (bool with_bias : {false, true}) {
      std::vector<float> a(static_cast<std::size_t>(m * depth)), bias(static_cast<std::size_t>(n)),
          c(static_cast<std::size_t>(m * n));
      for (float& v : a) v = uniform(rng);
      for (float& v : bias) v = uniform(rng);
      k::GemmArgs g{a.data(), depth, nullptr, n, false, c.data(), n, m, n, depth, with_bias ? bias.data() : nullptr};
      g.packed = w.panels();
      g.precision = precision;
      const std::int64_t split = n > 24 ? 24 : n;
      k::gemm_columns(g, 0, split, pack);
      k::gemm_columns(g, split, n, pack);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double exact = with_bias ? bias[j] : 0.0, magnitude = std::abs(exact);
          for (std::int64_t p = 0; p < depth; ++p) {
            const double term = double(a[i * depth + p]) * wide[j * depth + p];
            exact += term, magnitude += std::abs(term);
          }
          worst = std::max(worst, std::abs(c[i * n + j] - exact) / magnitude);
        }
    }
  return worst;
}

// The GEMM from 16-bit (bf16, f16) weight panels against a float64 loop over the same weights
// widened exactly, for every row count: 1-3 rows widen in registers (a decoding step), 4 and more
// a panel at a time into scratch. Whole and partial panels, with and without bias; panel counts
// that the decoding step's streams (four panels at once for one row, two for two) divide and do
// not, a partial last panel inside a stream and after them, and column ranges that start past
// 0 (a thread's block); and, at depth 2048, 35 rows, which the GEMM takes in three chunks of k. Returns the largest
// error relative to the sum of the terms' magnitudes (float32 rounding gives about 1e-7).
double sixteen_bit_gemm_error() {
  namespace k = attnscope::kernels;
  std::mt19937 rng(11);
  double worst = 0;
  // f32: float32 panels of bf16 values (a float32 checkpoint's decoding step takes the same kernel)
  for (k::Precision precision : {k::Precision::bf16, k::Precision::f16, k::Precision::f32})
    for (auto [depth, n] : {std::pair<std::int64_t, std::int64_t>{1, 8},
                            {37, 13},
                            {64, 24},
                            {200, 33},
                            {19, 29},
                            {41, 75},
                            {9, 128},
                            {2048, 16}}) {
      const k::Precision bits = precision == k::Precision::f16 ? k::Precision::f16 : k::Precision::bf16;
      std::vector<std::uint16_t> raw(static_cast<std::size_t>(n * depth));  // [n, depth]: a Linear's [out, in]
      for (auto& h : raw) {
        h = static_cast<std::uint16_t>(rng());
        if (bits == k::Precision::bf16) h = (h & 0x807f) | (0x3c00 + (h & 0x0380));  // |w| in [2^-8, 2)
        if (bits == k::Precision::f16) h = (h & 0x83ff) | (0x2000 + (h & 0x1c00));   // |w| in [2^-7, 2)
      }
      std::vector<float> wide(raw.size());
      k::widen(raw.data(), bits, static_cast<std::int64_t>(raw.size()), wide.data());
      const void* source = precision == k::Precision::f32 ? static_cast<const void*>(wide.data()) : raw.data();
      const k::PackedWeight w(k::MatrixSource{source, precision, depth, n, true});
      worst = std::max(worst, packed_gemm_error(w, precision, wide, rng));
    }
  return worst;
}

// The GEMM from quantized panels (Q8_0, Q4_0, Q4_K, Q6_K blocks, random bytes with finite scales) against a float64
// loop over the values ggml dequantizes (dequantize_row), for every row count: 1-3 rows decode the codes in registers
// (a decoding step), 4 and more dequantize a panel's chunk of k into scratch (depth 2048 in three chunks, each whole
// groups). Also each column (an embedding's row), the whole matrix unpacked, and blocks of rows (heads through W_O),
// which must give the dequantized values exactly. Returns the largest error relative to the sum of the terms'
// magnitudes; `inexact` counts values read otherwise than dequantize_row gives them.
double quantized_gemm_error(int& inexact) {
  namespace k = attnscope::kernels;
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  double worst = 0;
  for (k::Precision q : {k::Precision::q8_0, k::Precision::q4_0, k::Precision::q4_k, k::Precision::q6_k}) {
    const k::FileBlock& f = k::file_block(q);
    for (auto [depth, n] : {std::pair<std::int64_t, std::int64_t>{256, 8}, {512, 13}, {256, 75}, {2048, 33}}) {
      const std::int64_t row_bytes = depth / f.values * f.bytes;
      std::vector<std::uint8_t> raw(static_cast<std::size_t>(n * row_bytes));  // [n, depth]: a Linear's [out, in]
      for (auto& b : raw) b = static_cast<std::uint8_t>(rng());
      for (std::int64_t i = 0; i < n * depth / f.values; ++i) {  // d (and dmin) finite: f16 in [2^-9, 2^-1)
        std::uint8_t* block = raw.data() + i * f.bytes + (q == k::Precision::q6_k ? 208 : 0);
        for (int h = 0; h < (q == k::Precision::q4_k ? 2 : 1); ++h) {
          const auto d = static_cast<std::uint16_t>(((6 + rng() % 8) << 10) | (rng() & 0x3ff) | (rng() & 0x8000));
          block[2 * h] = static_cast<std::uint8_t>(d & 0xff), block[2 * h + 1] = static_cast<std::uint8_t>(d >> 8);
        }
      }
      std::vector<float> wide(static_cast<std::size_t>(n * depth));
      for (std::int64_t j = 0; j < n; ++j)
        k::dequantize_row(q, raw.data() + j * row_bytes, depth, wide.data() + j * depth);
      const k::PackedWeight w(k::MatrixSource{raw.data(), q, depth, n, true});
      std::vector<float> column(static_cast<std::size_t>(depth));
      const attnscope::Tensor unpacked = w.unpack();
      for (std::int64_t j = 0; j < n; ++j) {
        w.column(j, column.data());
        for (std::int64_t p = 0; p < depth; ++p)
          inexact += (column[p] != wide[j * depth + p]) + (unpacked.data[p * n + j] != wide[j * depth + p]);
      }
      std::vector<float> x(static_cast<std::size_t>(depth)), through(static_cast<std::size_t>(depth / 64 * n));
      for (float& v : x) v = uniform(rng);
      w.block_rows(x.data(), 64, through.data());
      for (std::int64_t b = 0; b < depth / 64; ++b)
        for (std::int64_t j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (std::int64_t p = b * 64; p < (b + 1) * 64; ++p) {
            const double term = double(x[p]) * wide[j * depth + p];
            exact += term, magnitude += std::abs(term);
          }
          worst = std::max(worst, std::abs(through[b * n + j] - exact) / magnitude);
        }
      worst = std::max(worst, packed_gemm_error(w, q, wide, rng));
    }
  }
  return worst;
}

// A decoding step's one row against quantized panels, as the integer kernel reads it (each group of A as integers on
// its own power of two), on rows whose groups float32 handles and 16-bit integers would not: values spanning 2^-40
// to 1 within a group, every value near 1e30 or 1e-30, and every other group zero. Returns the largest error relative
// to the sum of the terms' magnitudes; `finite` counts finite outputs of rows with a NaN or an infinity in one group.
double quantized_row_error(int& finite) {
  namespace k = attnscope::kernels;
  std::mt19937 rng(14);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::uniform_int_distribution<int> octave(0, 40);
  const std::int64_t depth = 512, n = 40;
  double worst = 0;
  std::vector<float> pack;
  for (k::Precision q : {k::Precision::q8_0, k::Precision::q4_0, k::Precision::q4_k, k::Precision::q6_k}) {
    const k::FileBlock& f = k::file_block(q);
    const std::int64_t row_bytes = depth / f.values * f.bytes;
    std::vector<std::uint8_t> raw(static_cast<std::size_t>(n * row_bytes));
    for (auto& b : raw) b = static_cast<std::uint8_t>(rng());
    for (std::int64_t i = 0; i < n * depth / f.values; ++i) {  // d (and dmin): f16 in [2^-9, 2^-1)
      std::uint8_t* block = raw.data() + i * f.bytes + (q == k::Precision::q6_k ? 208 : 0);
      for (int h = 0; h < (q == k::Precision::q4_k ? 2 : 1); ++h) block[2 * h + 1] = static_cast<std::uint8_t>(0x18);
    }
    std::vector<float> wide(static_cast<std::size_t>(n * depth));
    for (std::int64_t j = 0; j < n; ++j)
      k::dequantize_row(q, raw.data() + j * row_bytes, depth, wide.data() + j * depth);
    const k::PackedWeight w(k::MatrixSource{raw.data(), q, depth, n, true});
    std::vector<float> a(static_cast<std::size_t>(depth)), c(static_cast<std::size_t>(n));
    const auto product = [&] {
      k::GemmArgs g{a.data(), depth, nullptr, n, false, c.data(), n, 1, n, depth, nullptr};
      g.packed = w.panels(), g.precision = q;
      k::gemm_columns(g, 0, n, pack);
    };
    for (int pattern = 0; pattern < 4; ++pattern) {
      for (std::int64_t p = 0; p < depth; ++p) {
        const float u = uniform(rng);
        a[p] = pattern == 0   ? std::ldexp(u, -octave(rng))
               : pattern == 1 ? u * 1e30f
               : pattern == 2 ? u * 1e-30f
                              : (p / 16 % 2 ? 0.0f : u);
      }
      product();
      for (std::int64_t j = 0; j < n; ++j) {
        double exact = 0, magnitude = 0;
        for (std::int64_t p = 0; p < depth; ++p) {
          const double term = double(a[p]) * wide[j * depth + p];
          exact += term, magnitude += std::abs(term);
        }
        worst = std::max(worst, magnitude == 0 ? std::abs(c[j]) : std::abs(c[j] - exact) / magnitude);
      }
    }
    for (float bad : {NAN, INFINITY}) {
      for (float& v : a) v = uniform(rng);
      a[depth / 2 + 3] = bad;
      product();
      for (float v : c) finite += std::isfinite(v);
    }
  }
  return worst;
}

// The float32 GEMM against a float64 loop: B read as it is (packed here a panel at a time, [k, n] or [n, k]) and
// packed ahead (pack_b, as attention packs its keys and values), at depths the GEMM takes whole, in two chunks of k
// (769) and in three (2048), and row counts it takes in one pass, in two (250 rows at depth 768 or 2048: 640 KB of A
// per pass at most) and with 1-3 rows left. With and without bias, and adding into C (`accumulate`), where only the
// first chunk may add the bias and every chunk must add into what C held. Column ranges split as two tasks would.
// Returns the largest error relative to the sum of the terms' magnitudes.
double float32_gemm_error() {
  namespace k = attnscope::kernels;
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  double worst = 0;
  for (auto [depth, n] : {std::pair<std::int64_t, std::int64_t>{5, 13}, {768, 24}, {769, 17}, {2048, 16}})
    for (std::int64_t m : {1, 3, 5, 35, 250})
      for (int variant = 0; variant < 4; ++variant) {
        const bool transposed = variant & 1, packed = variant & 2, with_bias = m % 2 == 1, accumulate = m % 5 == 0;
        std::vector<float> a(static_cast<std::size_t>(m * depth)), b(static_cast<std::size_t>(depth * n)),
            bias(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(m * n)), panels;
        for (float& v : a) v = uniform(rng);
        for (float& v : b) v = uniform(rng);
        for (float& v : bias) v = uniform(rng);
        for (float& v : c) v = uniform(rng);
        const std::vector<float> before = c;
        k::GemmArgs g = k::GemmArgs()
                            .lhs(a.data(), depth)
                            .rhs(b.data(), transposed ? depth : n, transposed)
                            .out(c.data(), n)
                            .shape(m, n, depth)
                            .add(with_bias ? bias.data() : nullptr);
        g.accumulate = accumulate;
        if (packed) {
          panels.resize(static_cast<std::size_t>(k::packed_size(depth, n)));
          k::pack_b(g, panels.data());
          g.packed = panels.data();
        }
        std::vector<float> pack;
        k::gemm_columns(g, 0, 8, pack);
        k::gemm_columns(g, 8, n, pack);
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            double exact = (with_bias ? bias[j] : 0.0) + (accumulate ? before[i * n + j] : 0.0);
            double magnitude = std::abs(exact);
            for (std::int64_t p = 0; p < depth; ++p) {
              const double term = double(a[i * depth + p]) * (transposed ? b[j * depth + p] : b[p * n + j]);
              exact += term, magnitude += std::abs(term);
            }
            worst = std::max(worst, std::abs(c[i * n + j] - exact) / magnitude);
          }
      }
  return worst;
}

// kernels::ScreenedArgmax against the argmax of the whole float32 product (kernels::gemm, then the first largest):
// heads of 1 to 5,003 columns (partial last panels), depths 1 to 2,049 (past 516, x's 16-bit levels narrow so that
// no integer sum leaves int32), weights from 1e-3 to 1e3, with and without bias, a few ids excluded or none. Each head
// holds near-ties the 8-bit screen cannot see: a column copied (an exact tie, which the first must win), and columns
// one float32 ulp apart in one value (equal in 8 bits). Returns the trials where the screen chose another token;
// `undecided` counts its −1s, which only an overflowing x, excluding every column, or a flat head (each checked here)
// may give.
int screened_argmax_mismatches(int& undecided) {
  namespace k = attnscope::kernels;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  attnscope::ThreadPool pool(1);
  int mismatches = 0;
  undecided = 0;
  for (const auto& [depth, n] :
       {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 9}, {37, 64}, {64, 1001}, {512, 5003}, {2049, 300}})
    for (float scale : {1e-3f, 1.0f, 1e3f}) {
      std::vector<float> w(static_cast<std::size_t>(depth * n));  // [depth, n], row-major
      for (float& v : w) v = normal(rng) * scale / std::sqrt(float(depth));
      const std::int64_t width = n;
      const auto at = [&](std::int64_t p, std::int64_t j) -> float& { return w[p * width + j]; };
      for (std::int64_t j = 0; j + 4 < n; j += 7) {
        for (std::int64_t p = 0; p < depth; ++p) at(p, j + 3) = at(p, j);  // an exact tie, the first must win
        for (std::int64_t p = 0; p < depth; ++p) at(p, j + 4) = at(p, j);
        at(depth / 2, j + 4) = std::nextafter(at(depth / 2, j), 2.0f * at(depth / 2, j));  // one ulp more
      }
      const k::PackedWeight head(k::MatrixSource{w.data(), k::Precision::f32, depth, n, false});
      std::vector<float> bias(static_cast<std::size_t>(n));
      for (float& v : bias) v = normal(rng) * (scale == 1.0f ? 1e-3f : 1.0f);
      const k::ScreenedArgmax biased(pool, head, bias.data()), plain(pool, head, nullptr);
      for (int trial = 0; trial < 40; ++trial) {
        std::vector<float> x(static_cast<std::size_t>(depth)), logits(static_cast<std::size_t>(n));
        for (float& v : x) v = normal(rng);
        const float* b = trial % 2 ? bias.data() : nullptr;
        const k::ScreenedArgmax& screen = trial % 2 ? biased : plain;
        std::vector<std::int32_t> excluded;
        for (int e = 0; e < trial % 4 && e < n - 1; ++e) excluded.push_back(static_cast<std::int32_t>(rng() % n));
        k::gemm(pool, attnscope::ConstMatrixMap(x.data(), 1, depth), attnscope::ConstMatrixMap(w.data(), depth, n), b,
                attnscope::MatrixMap(logits.data(), 1, n), &head);
        for (std::int32_t id : excluded) logits[id] = -INFINITY;
        const std::int64_t expected = std::max_element(logits.begin(), logits.end()) - logits.begin();
        const std::int64_t got = screen.argmax(pool, x.data(), excluded);
        undecided += got < 0;
        mismatches += got >= 0 && got != expected;
      }
    }
  // An x whose logits overflow, and every column excluded: the screen says it cannot tell.
  std::vector<float> w(64 * 16, 1.0f), x(64, 1e37f);
  const k::PackedWeight head(k::MatrixSource{w.data(), k::Precision::f32, 64, 16, false});
  const k::ScreenedArgmax screen(pool, head, nullptr);
  std::vector<std::int32_t> all(16);
  for (std::int32_t j = 0; j < 16; ++j) all[j] = j;
  const bool overflow = screen.argmax(pool, x.data()) == -1;
  x.assign(64, 1.0f);
  const bool none_left = screen.argmax(pool, x.data(), all) == -1;
  const bool fine = screen.argmax(pool, x.data(), {0, 1}) == 2;  // a tie across all 16: the first kept
  // 8 bits rank two columns the other way round. Row 0 holds 127 in both, so that each column's step is 1, and x
  // leaves it out (x_0 = 0, the other x_i = 1). Column 3 holds 0.51 in rows 1-63 (rounded up to 1: 63 in the screen,
  // 32.13 in float32); column 5 holds 0.99 in rows 1-31 and 0.49 in rows 32-63 (1 and 0: 31 in the screen, 46.37).
  std::vector<float> reversed(64 * 16, 0.0f);
  for (int p = 1; p < 64; ++p) reversed[p * 16 + 3] = 0.51f, reversed[p * 16 + 5] = p < 32 ? 0.99f : 0.49f;
  reversed[3] = reversed[5] = 127.0f;
  std::vector<float> ones_after_first(64, 1.0f);
  ones_after_first[0] = 0.0f;
  const k::PackedWeight flipped(k::MatrixSource{reversed.data(), k::Precision::f32, 64, 16, false});
  const bool ranked = k::ScreenedArgmax(pool, flipped, nullptr).argmax(pool, ones_after_first.data()) == 5;
  // A flat head, every logit equal: every column stays a candidate, and the screen leaves it to the product.
  std::vector<float> flat_w(32 * 4096, 0.5f);
  const k::PackedWeight flat(k::MatrixSource{flat_w.data(), k::Precision::f32, 32, 4096, false});
  const bool declined = k::ScreenedArgmax(pool, flat, nullptr).argmax(pool, x.data()) == -1;
  // A column whose float32 sum overflows where its 8-bit one does not: x = (M, M), M = FLT_MAX / 4; column 0 holds
  // 4 + 2^-6 (8 bits: 127 steps of 4.0157 / 127) and −4 (−127 steps), so its float32 logit is +∞ (the argmax) and its
  // 8-bit one 0, far below column 1's M. The bound assumes no overflow, so the screen must decline rather than
  // answer 1.
  const float big = std::numeric_limits<float>::max() / 4;
  std::vector<float> near_max = {4.0f + 0x1p-6f, 1.0f, -4.0f, 0.0f};  // [2, 2]
  const k::PackedWeight overflowing(k::MatrixSource{near_max.data(), k::Precision::f32, 2, 2, false});
  const std::vector<float> huge = {big, big};
  const bool careful = k::ScreenedArgmax(pool, overflowing, nullptr).argmax(pool, huge.data()) == -1;
  // x's rounding alone decides: column 0 = 127·e_0 and column 1 = 127·(e_1 + e_2) are exact in 8 bits, and x =
  // (1000.51, 500.4, 500.4, 32767) / 32767 rounds to levels (1001, 500, 500, 32767). In float32 column 1 is larger
  // (3.87895 against 3.87783), in the screen column 0 (3.87973 against 3.87585): only the ‖x − x̂‖·‖w_j‖ term keeps
  // column 1.
  std::vector<float> exact_w(4 * 2, 0.0f);
  exact_w[0 * 2 + 0] = exact_w[1 * 2 + 1] = exact_w[2 * 2 + 1] = 127.0f;
  const std::vector<float> between = {1000.51f / 32767, 500.4f / 32767, 500.4f / 32767, 1.0f};
  const k::PackedWeight exact_head(k::MatrixSource{exact_w.data(), k::Precision::f32, 4, 2, false});
  const bool rounded_x = k::ScreenedArgmax(pool, exact_head, nullptr).argmax(pool, between.data()) == 1;
  // Past depth 516 x's levels narrow so that no sum leaves int32: at 2,049 deep, columns of 1 and 0.5 (both 127
  // levels) against ones would sum to 127·32767·2,049, which wraps to a negative int32 and ranks column 1 first.
  std::vector<float> deep_w(2049 * 2);
  for (std::size_t i = 0; i < deep_w.size(); ++i) deep_w[i] = i % 2 ? 0.5f : 1.0f;
  const std::vector<float> deep_x(2049, 1.0f);
  const k::PackedWeight deep(k::MatrixSource{deep_w.data(), k::Precision::f32, 2049, 2, false});
  const bool narrowed = k::ScreenedArgmax(pool, deep, nullptr).argmax(pool, deep_x.data()) == 0;
  // An x so small that its 16-bit step underflows to 0: every level 0, the bound all of ‖x‖·‖w_j‖, and the screen
  // still answers (16 columns, each a candidate, multiplied again): column 5, the largest where x_0 is.
  std::vector<float> tiny_w(8 * 16, 1.0f), tiny_x(8, 0.0f);
  tiny_w[5] = 2.0f;
  tiny_x[0] = 1e-45f;
  const k::PackedWeight tiny_head(k::MatrixSource{tiny_w.data(), k::Precision::f32, 8, 16, false});
  const bool tiny = k::ScreenedArgmax(pool, tiny_head, nullptr).argmax(pool, tiny_x.data()) == 5;
  mismatches += !overflow + !none_left + !fine + !ranked + !declined + !careful + !rounded_x + !narrowed + !tiny;
  return mismatches;
}

// sampling::top_k_probabilities (max and Σ exp four lanes at a time, selection while scanning or a
// partial sort) against softmax (float64 exp) then top_k: rows of a 49,155-token vocabulary (a scalar
// tail), with ties at the top, -inf logits, and a row of only -inf, for k from 1 to past the scan's 64.
// Returns the largest relative error of a probability; `ids_differ` counts rows choosing other tokens.
double top_k_error(int& ids_differ) {
  namespace sampling = attnscope::sampling;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const std::int64_t vocab = 49155;
  double worst = 0;
  ids_differ = 0;
  for (int row = 0; row < 12; ++row) {
    std::vector<float> logits(vocab);
    for (float& l : logits) l = row == 11 ? -INFINITY : normal(rng);
    if (row % 3 == 1) logits[100] = logits[70] = logits[40000] = 30.0f;  // a tie at the top
    if (row % 3 == 2)
      for (std::int64_t i = 0; i < vocab; i += 3) logits[i] = -INFINITY;
    for (const std::int64_t k : {1, 5, 64, 65, 300}) {
      std::vector<float> p = logits, want(k), got(k);
      std::vector<std::int32_t> want_ids(k), got_ids(k);
      sampling::softmax(p.data(), vocab);
      sampling::top_k(p.data(), vocab, k, want_ids.data(), want.data());
      sampling::top_k_probabilities(logits.data(), vocab, k, got_ids.data(), got.data());
      // Distinct logits may round to one probability, which top_k orders by id: compare the sets of
      // logits chosen, and each probability.
      for (std::int64_t i = 0; i < k; ++i) {
        if (logits[want_ids[i]] != logits[got_ids[i]]) ++ids_differ;
        worst = std::max(worst, std::abs(double(got[i]) - want[i]) / std::max(double(want[i]), 1e-30));
      }
      if (row % 3 == 1 && k >= 3 && !(got_ids[0] == 70 && got_ids[1] == 100 && got_ids[2] == 40000)) ++ids_differ;
    }
  }
  return worst;
}

// sampling::log_sum_exp (four lanes at a time in wasm) against log Σ exp in float64 over the ids kept: a
// 51,865-token vocabulary (Whisper's), the whole and the ids below 50,257 (its text tokens), with no ids excluded, a
// stretch of them, ids past the end or negative (which change nothing) and repeats, -inf logits, and a row whose
// every kept logit is -inf (then -inf). Returns the largest absolute error (a probability exp(l − lse)'s relative
// error), or +inf where -inf is not returned exactly where it should be.
double log_sum_exp_error() {
  namespace sampling = attnscope::sampling;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 5.0f);
  const std::int64_t vocab = 51865;
  double worst = 0;
  for (int row = 0; row < 6; ++row) {
    std::vector<float> logits(vocab);
    for (float& l : logits) l = normal(rng);
    if (row == 2)
      for (std::int64_t i = 0; i < vocab; i += 7) logits[i] = -INFINITY;
    if (row == 5) std::fill(logits.begin(), logits.begin() + 50257, -INFINITY);
    std::vector<std::int32_t> excluded;
    if (row >= 1) {
      for (std::int32_t i = 50258; i < vocab; ++i) excluded.push_back(i);  // the timestamps and specials
      excluded.insert(excluded.end(), {220, 220, 50256, -3, std::int32_t(vocab) + 9});
    }
    if (row == 4) std::iota(excluded.begin(), excluded.end(), 0), excluded.push_back(vocab - 1);
    for (const std::int64_t end : {vocab, std::int64_t(50257)}) {
      std::vector<bool> out(static_cast<std::size_t>(end));
      for (std::int32_t id : excluded)
        if (id >= 0 && id < end) out[id] = true;
      double max = -INFINITY, sum = 0;
      for (std::int64_t i = 0; i < end; ++i)
        if (!out[i]) max = std::max(max, double(logits[i]));
      for (std::int64_t i = 0; i < end && max > -INFINITY; ++i)
        if (!out[i]) sum += std::exp(double(logits[i]) - max);
      const double want = max == -INFINITY ? max : max + std::log(sum);
      const double got = sampling::log_sum_exp(logits.data(), end, excluded);
      if (std::isinf(want) || std::isinf(got)) {
        if (got != want) return INFINITY;
        continue;
      }
      worst = std::max(worst, std::abs(got - want));
    }
  }
  return worst;
}

// kernels::attention with at most kFewRows query rows (few_rows.cpp: heads in chunks of up to three,
// several keys or columns at a time, keys and rows of v from stretches read in lockstep, tiles of about
// 64 KB read into cache first) against reference::attention, head by head: group sizes that leave chunks
// of 1, 2 and 3 heads, widths that are and are not multiples of 4, key counts below, across and past the
// blocks (and stretches that leave keys over) and over several tiles at every width, a cache wider than
// its keys, causal rows with and without a window, keep masks (with a heads axis, and a row hiding every
// key) and additive ones (holding -inf), weights kept or not. Returns the largest error relative to
// max(1, |reference|).
double few_rows_error() {
  using namespace attnscope;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::bernoulli_distribution coin(0.2);
  ThreadPool pool(1);
  double worst = 0;
  int trial = 0;
  for (auto [heads, kv_heads] :
       {std::pair<std::int64_t, std::int64_t>{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {7, 1}, {6, 2}, {9, 3}, {4, 4}})
    for (auto [d_k, d_v] : {std::pair<std::int64_t, std::int64_t>{64, 64}, {12, 20}, {7, 5}, {16, 36}})
      for (std::int64_t n_q : {1, 3})
        for (std::int64_t n_k : {3, 70, 300, 2500}) {
          ++trial;
          const std::int64_t capacity = n_k + 9, window = trial % 3 == 0 ? n_k / 2 + 1 : 0;
          const int masking = trial % 4;  // none, keep [n_q, n_k], keep [heads, n_q, n_k], additive
          const bool keep_weights = trial % 5 < 3;
          std::vector<float> q(heads * n_q * d_k), k(kv_heads * capacity * d_k), v(kv_heads * capacity * d_v);
          for (std::vector<float>* x : {&q, &k, &v})
            for (float& e : *x) e = normal(rng);
          const std::int64_t mask_heads = masking == 2 ? heads : 1;
          std::vector<std::uint8_t> keep(mask_heads * n_q * n_k);
          std::vector<float> additive(n_q * n_k);
          for (auto& b : keep) b = !coin(rng);
          for (auto& a : additive) a = coin(rng) ? -INFINITY : normal(rng);
          if (masking == 1) std::fill_n(keep.begin(), n_k, 0);  // row 0 hides every key
          AttentionDims dims{heads, n_q, n_k, d_k, d_v, true};
          dims.group = heads / kv_heads;
          dims.kv_capacity = capacity;
          kernels::ScoreRule rule;
          rule.scale = 0.3f;
          rule.causal = true;
          rule.offset = n_k - n_q;  // the last n_q positions
          rule.window = window;
          if (masking == 1) rule.mask = Mask::keep_mask(keep.data(), {n_q, n_k});
          if (masking == 2) rule.mask = Mask::keep_mask(keep.data(), {heads, n_q, n_k});
          if (masking == 3) rule.mask = Mask::additive_mask(additive.data(), {n_q, n_k});
          std::vector<float> out(n_q * heads * d_v), weights(heads * n_q * n_k, NAN);
          kernels::attention(pool, TensorView(q.data(), {heads, n_q, d_k}),
                             TensorView(k.data(), {kv_heads, capacity, d_k}),
                             TensorView(v.data(), {kv_heads, capacity, d_v}), dims, rule, out.data(),
                             kernels::OutputLayout::side_by_side(dims), keep_weights ? weights.data() : nullptr);
          for (std::int64_t h = 0; h < heads; ++h) {
            const std::int64_t g = h / dims.group;
            // The same head alone, every hidden key (causal, window, keep) as -inf in one additive mask.
            std::vector<float> mask(n_q * n_k);
            for (std::int64_t i = 0; i < n_q; ++i)
              for (std::int64_t j = 0; j < n_k; ++j) {
                const std::int64_t position = rule.offset + i, at = i * n_k + j;
                bool hidden = j > position || (window && j <= position - window);
                if (masking == 1 || masking == 2) hidden = hidden || !keep[(masking == 2 ? h * n_q * n_k : 0) + at];
                mask[at] = hidden ? -INFINITY : masking == 3 ? additive[at] : 0.0f;
              }
            AttentionOptions o;
            o.scale = rule.scale;
            o.mask = Mask::additive_mask(mask.data(), {n_q, n_k});
            const AttentionResult ref = reference::attention(TensorView(q.data() + h * n_q * d_k, {n_q, d_k}),
                                                             TensorView(k.data() + g * capacity * d_k, {n_k, d_k}),
                                                             TensorView(v.data() + g * capacity * d_v, {n_k, d_v}), o);
            for (std::int64_t i = 0; i < n_q; ++i) {
              for (std::int64_t c = 0; c < d_v; ++c) {
                const double want = ref.output.data[i * d_v + c], got = out[i * heads * d_v + h * d_v + c];
                worst = std::max(worst, std::abs(got - want) / std::max(1.0, std::abs(want)));
              }
              for (std::int64_t j = 0; keep_weights && j < n_k; ++j) {
                const double want = ref.weights.data[i * n_k + j], got = weights[(h * n_q + i) * n_k + j];
                worst = std::max(worst, std::isnan(got) ? 1.0 : std::abs(got - want));
              }
            }
          }
        }
  return worst;
}

// PackedWeight::block_rows (each block of x's rows through its own rows of B: one head's output through its rows of
// W_O) against a float64 loop over the same values, on float32, BF16 and F16 panels, with a last panel that is not
// full. Returns the largest error relative to the sum of the terms' magnitudes.
double block_rows_error() {
  namespace k = attnscope::kernels;
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  double worst = 0;
  for (k::Precision precision : {k::Precision::f32, k::Precision::bf16, k::Precision::f16})
    for (auto [blocks, block, n] : {std::array<std::int64_t, 3>{9, 64, 576}, {4, 8, 13}, {1, 3, 7}, {32, 64, 40}}) {
      const std::int64_t depth = blocks * block;
      std::vector<std::uint16_t> raw(static_cast<std::size_t>(depth * n));  // [depth, n] as stored
      for (auto& h : raw) {
        h = static_cast<std::uint16_t>(rng());
        if (precision != k::Precision::f16)
          h = (h & 0x807f) | (0x3c00 + (h & 0x0380));
        else
          h = (h & 0x83ff) | (0x2000 + (h & 0x1c00));
      }
      const k::Precision bits = precision == k::Precision::f16 ? k::Precision::f16 : k::Precision::bf16;
      std::vector<float> wide(raw.size());
      k::widen(raw.data(), bits, static_cast<std::int64_t>(raw.size()), wide.data());
      const void* source = precision == k::Precision::f32 ? static_cast<const void*>(wide.data()) : raw.data();
      const k::PackedWeight w(k::MatrixSource{source, precision, depth, n, false});
      std::vector<float> x(static_cast<std::size_t>(depth)), out(static_cast<std::size_t>(blocks * n));
      for (float& v : x) v = uniform(rng);
      w.block_rows(x.data(), block, out.data());
      for (std::int64_t b = 0; b < blocks; ++b)
        for (std::int64_t j = 0; j < n; ++j) {
          double exact = 0, magnitude = 1e-30;
          for (std::int64_t r = b * block; r < (b + 1) * block; ++r) {
            const double term = double(x[r]) * wide[r * n + j];
            exact += term, magnitude += std::abs(term);
          }
          worst = std::max(worst, std::abs(out[b * n + j] - exact) / magnitude);
        }
    }
  return worst;
}

}  // namespace

int main() {
  using attnscope::kernels::exp_shifted;
  using attnscope::kernels::gelu;

  std::vector<float> x = grid(-87.0f, 0.0f, 200001), e = x;
  exp_shifted(e.data(), static_cast<std::int64_t>(e.size()), 0.0f);
  double rel = 0;
  for (std::size_t i = 0; i < x.size(); ++i) rel = std::max(rel, std::abs(e[i] / std::exp(double(x[i])) - 1.0));
  expect_below("exp: relative error on [-87, 0]", rel, 2e-7);
  std::vector<float> under = {-100.0f, -1e30f, -INFINITY, -88.0f, -87.5f};
  exp_shifted(under.data(), static_cast<std::int64_t>(under.size()), 0.0f);
  double below = 0;
  for (float v : under) below = std::max(below, double(std::abs(v)));
  expect_below("exp: below -87.3 (and -inf): 0 (or denormal)", below, 1e-37);

  x = grid(-12.0f, 12.0f, 240001);
  std::vector<float> g = x;
  gelu(g.data(), static_cast<std::int64_t>(g.size()));
  double err = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], exact = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    err = std::max(err, std::abs(g[i] - exact) / std::max(1.0, std::abs(v)));
  }
  expect_below("gelu: error / max(1, |x|) on [-12, 12]", err, 3e-7);
  std::vector<float> edge = {INFINITY, -1e30f, 1e30f, -0.0f};  // z² overflows; t underflows
  gelu(edge.data(), 4);
  const bool edges_ok = edge[0] == INFINITY && edge[1] == 0.0f && edge[2] == 1e30f && edge[3] == 0.0f;
  expect_below("gelu: inf, -1e30, 1e30, -0 give inf, 0, 1e30, 0", edges_ok ? 0 : 1, 0);
  x = grid(-100.0f, 100.0f, 400001);
  std::vector<float> si = x, gt = x, qg = x;
  attnscope::kernels::silu(si.data(), static_cast<std::int64_t>(si.size()));
  attnscope::kernels::quick_gelu(qg.data(), static_cast<std::int64_t>(qg.size()));
  attnscope::kernels::gelu_tanh(gt.data(), static_cast<std::int64_t>(gt.size()));
  double silu_err = 0, gelu_tanh_err = 0, quick_gelu_err = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    silu_err = std::max(silu_err, std::abs(si[i] - v / (1.0 + std::exp(-v))) / std::max(1.0, std::abs(v)));
    quick_gelu_err =
        std::max(quick_gelu_err, std::abs(qg[i] - v / (1.0 + std::exp(-1.702 * v))) / std::max(1.0, std::abs(v)));
    const double exact = 0.5 * v * (1.0 + std::tanh(0.79788456080286536 * (v + 0.044715 * v * v * v)));
    gelu_tanh_err = std::max(gelu_tanh_err, std::abs(gt[i] - exact) / std::max(1.0, std::abs(v)));
  }
  expect_below("silu: error / max(1, |x|) on [-100, 100]", silu_err, 3e-7);
  expect_below("quick gelu: error / max(1, |x|) on [-100, 100]", quick_gelu_err, 3e-7);
  expect_below("gelu (tanh): error / max(1, |x|) on [-100, 100]", gelu_tanh_err, 3e-7);
  std::vector<float> ends = {INFINITY, -INFINITY, 1e30f, -1e30f, -0.0f};
  std::vector<float> ends_gelu = ends, ends_quick = ends;
  attnscope::kernels::silu(ends.data(), 4);  // four lanes: the SIMD path
  attnscope::kernels::gelu_tanh(ends_gelu.data(), 4);
  attnscope::kernels::quick_gelu(ends_quick.data(), 4);
  expect_below("silu: inf, 1e30, -1e30 give inf, 1e30, -0",
               ends[0] == INFINITY && ends[2] == 1e30f && ends[3] == 0.0f ? 0 : 1, 0);
  expect_below("gelu (tanh): 1e30, -1e30 give 1e30, -0", ends_gelu[2] == 1e30f && ends_gelu[3] == 0.0f ? 0 : 1, 0);
  expect_below("quick gelu: inf, 1e30, -1e30 give inf, 1e30, -0",
               ends_quick[0] == INFINITY && ends_quick[2] == 1e30f && ends_quick[3] == 0.0f ? 0 : 1, 0);
  expect_below("mask_scores: rows differing from the plain loop", mask_scores_mismatches(), 0);
  expect_below("softmax without a mask: rows differing", plain_softmax_mismatches(), 0);
  expect_below("gemm on 16-bit panels: error / sum |terms|", sixteen_bit_gemm_error(), 1e-6);
  expect_below("gemm on float32: error / sum |terms|", float32_gemm_error(), 1e-6);
  int inexact = 0;
  expect_below("gemm on quantized panels: error / sum |terms|", quantized_gemm_error(inexact), 1e-6);
  expect_below("quantized panels: values read otherwise", inexact, 0);
  int finite = 0;
  expect_below("one row by quantized panels, wide ranges: error / sum |terms|", quantized_row_error(finite), 1e-6);
  expect_below("one row by quantized panels, a NaN or inf in: finite outputs", finite, 0);
  expect_below("block rows (heads through W_O): error / sum |terms|", block_rows_error(), 1e-6);
  int ids_differ = 0;
  expect_below("top-k probabilities: relative error", top_k_error(ids_differ), 1e-5);
  expect_below("top-k probabilities: tokens chosen otherwise", ids_differ, 0);
  expect_below("log-sum-exp: error vs float64 reference", log_sum_exp_error(), 2e-6);
  expect_below("few-row attention: error vs float64 reference", few_rows_error(), 2e-5);
  int undecided = 0;
  expect_below("screened argmax: tokens other than the product's", screened_argmax_mismatches(undecided), 0);
  expect_below("screened argmax: undecided on finite logits", undecided, 0);
  return failures ? 1 : 0;
}
