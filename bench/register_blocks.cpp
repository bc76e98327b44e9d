// Which register block should the SIMD128 GEMM use? Every R × (4·V) block shape, run
// on operands in L1 cache (k = 256), interleaved round by round; the best of 22 rounds.
// SIMD128 has no fused multiply-add, so each step of k is R·V multiplies and R·V adds
// on the same ports; beyond 8 accumulators V8 runs out of its 16 vector registers and
// spills.
//
//   npm run bench:blocks        (built with the wasm builds: build/wasm/bench/register_blocks.js)
#include <wasm_simd128.h>

#include <chrono>
#include <cstdio>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

template <int R, int V>
[[gnu::noinline]] void block(const float* a, int lda, const float* pack, int k, float* c, int ldc) {
  v128_t acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = wasm_f32x4_splat(0.0f);
  for (int p = 0; p < k; ++p) {
    v128_t b[V];
    for (int v = 0; v < V; ++v) b[v] = wasm_v128_load(pack + p * 4 * V + 4 * v);
    for (int r = 0; r < R; ++r) {
      const v128_t x = wasm_v128_load32_splat(a + r * lda + p);
      for (int v = 0; v < V; ++v) acc[r][v] = wasm_f32x4_add(acc[r][v], wasm_f32x4_mul(x, b[v]));
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) wasm_v128_store(c + r * ldc + 4 * v, acc[r][v]);
}

// A hundred blocks per call: V8 tiers a wasm function up between calls, never within one.
template <int R, int V>
[[gnu::noinline]] void hundred(const float* a, const float* b, int k, float* c) {
  for (int i = 0; i < 100; ++i) block<R, V>(a, k, b, k, c, 4 * V);
}

struct Shape {
  int rows, cols;
  void (*run)(const float*, const float*, int, float*);
  double best = 0;
};

}  // namespace

int main() {
  constexpr int k = 256;
  std::vector<float> a(8 * k, 0.5f), b(k * 32, 0.25f), c(8 * 32);
  Shape shapes[] = {{4, 8, hundred<4, 2>},  {2, 16, hundred<2, 4>}, {5, 8, hundred<5, 2>},
                    {3, 8, hundred<3, 2>},  {6, 8, hundred<6, 2>},  {3, 16, hundred<3, 4>},
                    {4, 12, hundred<4, 3>}, {2, 24, hundred<2, 6>}, {1, 32, hundred<1, 8>}};
  for (int round = 0; round < 25; ++round)
    for (Shape& s : shapes) {
      const auto start = Clock::now();
      std::int64_t calls = 0;
      double seconds = 0;
      while ((seconds = std::chrono::duration<double>(Clock::now() - start).count()) < 0.04) {
        s.run(a.data(), b.data(), k, c.data());
        calls += 100;
      }
      const double gflops = 2.0 * s.rows * s.cols * k * static_cast<double>(calls) / seconds / 1e9;
      if (round >= 3 && gflops > s.best) s.best = gflops;  // the first rounds run before V8 tiers up
    }
  std::printf("SIMD128 register blocks, one thread, k = %d (best of 22 rounds; accumulators = rows·cols/4)\n", k);
  for (const Shape& s : shapes)
    std::printf("  %d × %-2d  %2d accumulators  %5.1f GFLOPS\n", s.rows, s.cols, s.rows * s.cols / 4, s.best);
  return static_cast<int>(c[0] * 0.0f);
}
