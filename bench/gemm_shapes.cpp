// The GEMM on one thread on the shapes the models and the bench give it, in GFLOPS and as a share of the
// micro-kernel's peak measured between them (npm run bench:gemm): projections and FFNs of BERT-base and
// SmolLM2-135M at a prompt's length, the long-input projection (n = 4096, d 768), attention's q·kᵀ and
// probabilities·v for one block of 32 query rows at n = 4096, and ViT-B/16's projections and FFN at 197 tokens.
// B is packed as a model's weights are. The SIMD128 and the relaxed-SIMD build each
// (build/wasm/bench/gemm_shapes_st.js, gemm_shapes_st-relaxed.js).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "kernels/gemm.hpp"

using attnscope::kernels::GemmArgs;

namespace {

struct Shape {
  const char* name;
  std::int64_t m, n, k;
  bool b_transposed;  // B is [n, k] (attention's keys)
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main() {
  const Shape shapes[] = {
      {"BERT-base q/k/v/o, n = 128", 128, 768, 768, false},
      {"BERT-base FFN out, n = 128", 128, 768, 3072, false},
      {"BERT-base FFN out, n = 512", 512, 768, 3072, false},
      {"SmolLM2-135M up/gate, n = 512", 512, 1536, 576, false},
      {"SmolLM2-135M down, n = 512", 512, 576, 1536, false},
      {"long input projection, n = 4096", 4096, 768, 768, false},
      {"scores q·kT, 32 rows, n = 4096", 32, 4096, 64, true},
      {"probabilities·v, 32 rows, n = 4096", 32, 64, 4096, false},
      {"ViT-B/16 q/k/v/o, n = 197", 197, 768, 768, false},
      {"ViT-B/16 FFN in, n = 197", 197, 3072, 768, false},
      {"ViT-B/16 FFN out, n = 197", 197, 768, 3072, false},
  };
  constexpr double kFlopsPerRound = 2e9;  // about 2 GFLOP of each shape per round
  constexpr int kRounds = 5;
  std::printf("%-36s %8s %8s\n", "one thread", "GFLOPS", "of peak");
  for (const Shape& s : shapes) {
    std::vector<float> a(static_cast<std::size_t>(s.m * s.k)), b(static_cast<std::size_t>(s.k * s.n));
    std::vector<float> c(static_cast<std::size_t>(s.m * s.n)),
        panels(static_cast<std::size_t>(attnscope::kernels::packed_size(s.k, s.n)));
    std::vector<float> scratch;
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 97) * 1e-3f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 89) * 1e-3f;
    GemmArgs g = GemmArgs()
                     .lhs(a.data(), s.k)
                     .rhs(b.data(), s.b_transposed ? s.k : s.n, s.b_transposed)
                     .out(c.data(), s.n)
                     .shape(s.m, s.n, s.k);
    attnscope::kernels::pack_b(g, panels.data());
    g.packed = panels.data();
    const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
    const int calls = std::max(1, static_cast<int>(kFlopsPerRound / flops));
    double best = 0, peak = 0;
    for (int round = 0; round < kRounds; ++round) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) attnscope::kernels::gemm_serial(g, scratch);
      best = std::max(best, flops * calls / seconds_since(start) / 1e9);
      peak = std::max(peak, attnscope::kernels::micro_kernel_gflops(0.05));
    }
    std::printf("%-36s %8.1f %7.0f%%\n", s.name, best, 100 * best / peak);
  }
}
