// How fast does one thread read a decoding step's weights? A decoding step multiplies one row by
// every weight of the model once, so its GEMMs are bound by how fast the BF16 panels (gemm.cpp's
// layout: k rows of 8 columns) stream in, and by the work each 16 bytes of them costs. This
// times the engine's few-rows path (kernels::gemm_columns with 1, 2 and 3 rows, depth 576) on
// panels in cache (768 columns, 0.9 MB) and from memory (196,608 columns, 226 MB; a
// SmolLM2-135M step reads 257 MiB), in GB/s of weights, best of 6 interleaved rounds, beside a
// pass that only reads the panels (one stream, no multiply).
//
// Then a whole step's GEMVs as the engine runs them (SmolLM2-135M's 211 BF16 weights; Marian's 48 float32 decoder
// weights and its head), each its own panels, in the model's order: whether a step's many short GEMVs (k and v
// have 24 panels) read as fast as one long one, on one thread and on two (a parallel loop per group, as
// gemms_by_columns runs them). Best and median of 12 steps: a step inside a model runs at the median, not the best.
// Marian once more as a greedy step runs it: the head (random, so that its logits differ) through
// kernels::ScreenedArgmax, which reads it as 8-bit integers and then a few float32 panels again.
//
// Then the step's attention (kernels::attention with one query row: few_rows.cpp) over 30 layers
// of a SmolLM2-135M-shaped cache (9 query heads over 3 key/value heads, 64 wide), after 128, 1,024
// and 4,096 tokens, best of 20, three ways: "warm", one layer's cache read 30 times (it stays in cache);
// "own caches", each layer its own cache (47 MB at 1,024 tokens), which a large L3 may or may not hold;
// and "after weights", each layer's share of a step's weights read (untimed) before the layer, so that
// every layer reads its keys and values from memory, as a decoding step does (the weights of the whole
// model pass through the caches between one step's read of a layer's cache and the next).
//
// Last, the same GEMV on quantized weights (alone: QUANTIZED_ONLY=1 npm run bench:decode).
//
//   npm run bench:decode        (built with the wasm builds: build/wasm/bench/decode_kernels.js)
#include <wasm_simd128.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/kernels.hpp"
#include "kernels/quantized.hpp"
#include "kernels/screened_argmax.hpp"
#include "threads/thread_pool.hpp"

namespace {

namespace k = attnscope::kernels;
using Clock = std::chrono::steady_clock;

thread_local std::vector<float> g_pack;  // the engine's scratch (the few-rows path needs none)

void engine(int rows, const float* a, const std::uint16_t* panels, std::int64_t depth, std::int64_t n, float* c) {
  k::GemmArgs g = k::GemmArgs().lhs(a, depth).out(c, n).shape(rows, n, depth);
  g.packed = panels;
  g.precision = k::Precision::bf16;
  g.streamed = true;
  k::gemm_columns(g, 0, n, g_pack);
}

// The same with float32 panels, as a model of float32 weights (a Marian or BART checkpoint) decodes.
void engine_f32(const float* a, const float* panels, std::int64_t depth, std::int64_t n, float* c) {
  k::GemmArgs g = k::GemmArgs().lhs(a, depth).out(c, n).shape(1, n, depth);
  g.packed = panels;
  g.precision = k::Precision::f32;
  g.streamed = true;
  k::gemm_columns(g, 0, n, g_pack);
}

[[gnu::noinline]] void read_only(const std::uint16_t* panels, std::int64_t count, float* c) {
  v128_t s0 = wasm_i32x4_splat(0), s1 = s0, s2 = s0, s3 = s0;
  for (const std::uint16_t *p = panels, *end = panels + count; p < end; p += 32) {
    s0 = wasm_v128_or(s0, wasm_v128_load(p));
    s1 = wasm_v128_or(s1, wasm_v128_load(p + 8));
    s2 = wasm_v128_or(s2, wasm_v128_load(p + 16));
    s3 = wasm_v128_or(s3, wasm_v128_load(p + 24));
  }
  wasm_v128_store(c, wasm_v128_or(wasm_v128_or(s0, s1), wasm_v128_or(s2, s3)));
}

// A decoding step's GEMVs as the engine runs them on one thread: each weight in its own panels (allocated in the
// model's order), each group of a layer (q, k and v; or each weight alone) as one loop over their columns, then the
// head; each GEMM in two column tasks, as gemms_by_columns splits a few-row GEMM per thread.
//   SmolLM2-135M, BF16: 30 layers of q, k, v | o | gate | up | down, and the 49,152-column head.
//   Marian (opus-mt-en-de), float32: 6 decoder layers of self q, k, v | self o | cross q | cross o | fc1 | fc2, and
//   the 58,101-column head (a translation's step: bench section 11).
struct Shape2 {
  std::int64_t depth, n;
};
struct StepSpec {
  const char* name;
  k::Precision precision;
  int layers;
  std::vector<std::vector<Shape2>> groups;  // a layer's GEMM loops, in order
  Shape2 head;
  bool screened = false;  // the head's argmax through kernels::ScreenedArgmax, as a greedy step takes it
};

class StepWeights {
 public:
  StepWeights(const StepSpec& spec, attnscope::ThreadPool& pool) : spec_(spec) {
    const std::size_t bytes = spec.precision == k::Precision::f32 ? 4 : 2;
    const auto add = [&](Shape2 s) {
      // 1.0 in the weight's format: every multiply is real work on finite values
      std::vector<std::uint8_t> panels(static_cast<std::size_t>(s.depth * s.n) * bytes);
      if (bytes == 4)
        std::fill_n(reinterpret_cast<float*>(panels.data()), s.depth * s.n, 1.0f);
      else
        std::fill_n(reinterpret_cast<std::uint16_t*>(panels.data()), s.depth * s.n, std::uint16_t{0x3f80});
      weights_.push_back({s, std::move(panels)});
      width_ = std::max({width_, s.depth, s.n});
    };
    for (int l = 0; l < spec.layers; ++l)
      for (const auto& group : spec.groups)
        for (Shape2 s : group) add(s);
    if (spec.screened) {
      std::mt19937 rng(1);
      std::normal_distribution<float> normal(0.0f, 0.05f);
      std::vector<float> head(static_cast<std::size_t>(spec.head.depth * spec.head.n));
      for (float& v : head) v = normal(rng);
      head_ = std::make_unique<k::PackedWeight>(
          k::MatrixSource{head.data(), k::Precision::f32, spec.head.depth, spec.head.n, false});
      screen_ = std::make_unique<k::ScreenedArgmax>(pool, *head_, nullptr);
    } else {
      add(spec.head);
    }
    x_.assign(static_cast<std::size_t>(width_), 0.01f);
    y_.resize(static_cast<std::size_t>(width_));
  }
  double bytes() const {
    double b = 0;
    for (const Weight& w : weights_) b += static_cast<double>(w.panels.size());
    return b + (screen_ ? static_cast<double>(spec_.head.depth * spec_.head.n) : 0.0);  // its 8-bit copy
  }
  // Milliseconds for one step's GEMVs on the pool's threads.
  double step_ms(attnscope::ThreadPool& pool) {
    const auto start = Clock::now();
    std::size_t next = 0;
    for (int l = 0; l < spec_.layers; ++l)
      for (const auto& group : spec_.groups) {
        gemms(pool, next, next + group.size());
        next += group.size();
      }
    if (screen_)
      undecided_ += screen_->argmax(pool, x_.data()) < 0;
    else
      gemms(pool, next, next + 1);
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  }
  // Greedy steps whose screen could not tell the token (and a model would compute the whole logits).
  int undecided() const { return undecided_; }

 private:
  struct Weight {
    Shape2 shape;
    std::vector<std::uint8_t> panels;
  };
  // The GEMMs [first, last) as one parallel loop over their columns, two tasks a thread.
  void gemms(attnscope::ThreadPool& pool, std::size_t first, std::size_t last) {
    std::int64_t panels = 0;
    for (std::size_t i = first; i < last; ++i) panels += weights_[i].shape.n / 8;
    const std::int64_t per_task = std::max<std::int64_t>(1, panels / (2 * pool.size())) * 8;
    std::vector<std::pair<std::size_t, std::int64_t>> tasks;  // (which GEMM, first column)
    for (std::size_t i = first; i < last; ++i)
      for (std::int64_t col = 0; col < weights_[i].shape.n; col += per_task) tasks.emplace_back(i, col);
    pool.parallel_for(tasks.size(), [&](std::size_t task, int) {
      const auto [i, col] = tasks[task];
      const auto [depth, n] = weights_[i].shape;
      k::GemmArgs g = k::GemmArgs().lhs(x_.data(), depth).out(y_.data(), n).shape(1, n, depth);
      g.packed = weights_[i].panels.data();
      g.precision = spec_.precision;
      g.streamed = true;
      k::gemm_columns(g, col, std::min(n, col + per_task), g_pack);
    });
  }
  StepSpec spec_;
  std::vector<Weight> weights_;
  std::int64_t width_ = 0;
  std::vector<float> x_, y_;
  std::unique_ptr<k::PackedWeight> head_;
  std::unique_ptr<k::ScreenedArgmax> screen_;
  int undecided_ = 0;
};

const StepSpec kSmolLM2{
    "SmolLM2-135M, BF16",
    k::Precision::bf16,
    30,
    {{{576, 576}, {576, 192}, {576, 192}}, {{576, 576}}, {{576, 1536}}, {{576, 1536}}, {{1536, 576}}},
    {576, 49152}};
const StepSpec kMarian{
    "Marian's decoder, float32",
    k::Precision::f32,
    6,
    {{{512, 512}, {512, 512}, {512, 512}}, {{512, 512}}, {{512, 512}}, {{512, 512}}, {{512, 2048}}, {{2048, 512}}},
    {512, 58101}};
StepSpec screened(StepSpec spec) {
  spec.name = "Marian, greedy (8-bit head)";
  spec.screened = true;
  return spec;
}
const StepSpec kMarianGreedy = screened(kMarian);

// How a step's attention finds each layer's cache: all layers on one (warm: it stays in cache), each on its
// own, or each on its own with the layer's share of a step's weights read between two layers (untimed), as a
// step does: the weights pass through the caches and push the layer's keys and values out to memory.
enum class Caches { warm, own, after_weights };

// Milliseconds for 30 layers of a decoding step's attention after `context` tokens, best of 20.
double step_attention_ms(attnscope::ThreadPool& pool, std::int64_t context, Caches caches) {
  constexpr std::int64_t kHeads = 9, kKvHeads = 3, kWidth = 64, kLayers = 30;
  constexpr std::int64_t kWeights = 135'000'000;  // BF16 values a SmolLM2-135M step reads (257 MiB)
  const bool warm = caches == Caches::warm;
  const std::int64_t capacity = 2 * context;  // as the cache grows, by doubling
  std::vector<float> q(kHeads * kWidth, 0.01f), out(kHeads * kWidth), sink(4);
  std::vector<std::uint16_t> weights(caches == Caches::after_weights ? kWeights : 0, 0x3f80);
  std::vector<std::vector<float>> k(warm ? 1 : kLayers), v(k.size());
  std::vector<attnscope::TensorView> tk, tv;  // layer l reads cache l (warm: cache 0)
  for (std::size_t l = 0; l < k.size(); ++l) {
    k[l].assign(kKvHeads * capacity * kWidth, 0.02f + 0.001f * l);
    v[l].assign(kKvHeads * capacity * kWidth, 0.03f);
  }
  for (std::size_t l = 0; l < kLayers; ++l) {
    const std::size_t c = warm ? 0 : l;
    tk.emplace_back(k[c].data(), attnscope::Shape{kKvHeads, capacity, kWidth});
    tv.emplace_back(v[c].data(), attnscope::Shape{kKvHeads, capacity, kWidth});
  }
  const attnscope::TensorView tq(q.data(), {kHeads, 1, kWidth});
  attnscope::AttentionDims dims{kHeads, 1, context, kWidth, kWidth, true};
  dims.group = kHeads / kKvHeads;
  dims.kv_capacity = capacity;
  k::ScoreRule rule;
  rule.scale = 0.125f;
  rule.causal = true;
  rule.offset = context - 1;
  double best = 1e30;
  for (int round = 0; round < 20; ++round) {
    double ms = 0.0;
    for (std::size_t l = 0; l < kLayers; ++l) {
      if (!weights.empty()) read_only(weights.data() + l * (kWeights / kLayers), kWeights / kLayers, sink.data());
      const auto start = Clock::now();
      k::attention(pool, tq, tk[l], tv[l], dims, rule, out.data(), k::OutputLayout::side_by_side(dims), nullptr);
      ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    }
    best = std::min(best, ms);
  }
  return best;
}

}  // namespace

// A decoding step's GEMV on quantized weights (random blocks, finite scales), one thread: giga-weights per second and
// GB/s of the file's bytes, in cache (n = 256) and from memory (n = 16,384: 32 M weights), at Llama-3.2-1B's depth
// (2,048), beside BF16 panels of the same shape. Best of 6 interleaved rounds.
void quantized_rates() {
  const std::int64_t depth = 2048;
  const k::Precision formats[] = {k::Precision::bf16, k::Precision::q8_0, k::Precision::q4_0, k::Precision::q4_k,
                                  k::Precision::q6_k};
  const char* names[] = {"BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"};
  std::printf("\nA decoding step's GEMV (1 row, depth %lld), one thread: G weights/s (GB/s of the file's bytes)\n",
              static_cast<long long>(depth));
  std::printf("%-8s %22s %22s\n", "", "in cache", "from memory");
  std::mt19937 rng(3);
  for (int f = 0; f < 5; ++f) {
    const k::Precision q = formats[f];
    double best[2] = {};
    double bytes_per_weight = 2;
    for (int s = 0; s < 2; ++s) {
      const std::int64_t n = s == 0 ? 256 : 16384;
      std::unique_ptr<k::PackedWeight> w;
      std::vector<std::uint16_t> half;
      if (q == k::Precision::bf16) {
        half.assign(static_cast<std::size_t>(n * depth), 0x3f80);
        w = std::make_unique<k::PackedWeight>(k::MatrixSource{half.data(), q, depth, n, true});
      } else {
        const k::FileBlock& b = k::file_block(q);
        bytes_per_weight = static_cast<double>(b.bytes) / static_cast<double>(b.values);
        std::vector<std::uint8_t> raw(static_cast<std::size_t>(n * depth / b.values * b.bytes));
        for (auto& x : raw) x = static_cast<std::uint8_t>(rng());
        for (std::int64_t i = 0; i < n * depth / b.values; ++i) {
          std::uint8_t* at = raw.data() + i * b.bytes + (q == k::Precision::q6_k ? 208 : 0);
          at[1] = 0x10;
          if (q == k::Precision::q4_k) at[3] = 0x10;  // its dmin
        }
        w = std::make_unique<k::PackedWeight>(k::MatrixSource{raw.data(), q, depth, n, true});
      }
      std::vector<float> a(static_cast<std::size_t>(depth), 0.5f), c(static_cast<std::size_t>(n));
      const int reps = s == 0 ? 400 : 4;
      for (int round = 0; round < 6; ++round) {
        k::GemmArgs g = k::GemmArgs().lhs(a.data(), depth).out(c.data(), n).shape(1, n, depth);
        g.packed = w->panels(), g.precision = q, g.streamed = true;
        const auto start = Clock::now();
        for (int i = 0; i < reps; ++i) k::gemm_columns(g, 0, n, g_pack);
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        best[s] = std::max(best[s], static_cast<double>(depth * n) * reps / seconds / 1e9);
      }
    }
    std::printf("%-8s %10.2f (%5.1f GB/s) %10.2f (%5.1f GB/s)\n", names[f], best[0], best[0] * bytes_per_weight,
                best[1], best[1] * bytes_per_weight);
  }
}

int main() {
  if (const char* only = std::getenv("QUANTIZED_ONLY"); only && *only) {
    quantized_rates();
    return 0;
  }
  volatile std::int64_t depth_now = 576;  // not a constant, as in the engine
  const std::int64_t depth = depth_now;
  const char* names[] = {"engine, 1 row (decoding step)", "engine, 2 rows", "engine, 3 rows", "read only",
                         "engine, 1 row, float32 weights"};
  double best[2][5] = {};
  const std::int64_t sizes[2] = {768, 196608};
  for (int s = 0; s < 2; ++s) {
    const std::int64_t n = sizes[s];
    std::vector<std::uint16_t> panels(static_cast<std::size_t>(n * depth), 0x3f80);
    std::vector<float> wide(static_cast<std::size_t>(n * depth), 1.0f);
    std::vector<float> a(static_cast<std::size_t>(3 * depth), 0.5f), c(static_cast<std::size_t>(3 * n));
    const int reps = s == 0 ? 2000 : 8;
    for (int round = 0; round < 6; ++round)
      for (int r = 0; r < 5; ++r) {
        const auto start = Clock::now();
        for (int i = 0; i < reps; ++i) {
          if (r < 3)
            engine(r + 1, a.data(), panels.data(), depth, n, c.data());
          else if (r == 3)
            read_only(panels.data(), n * depth, c.data());
          else
            engine_f32(a.data(), wide.data(), depth, n, c.data());
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        const double bytes = r == 4 ? 4.0 : 2.0;  // per weight
        const double gbs = bytes * static_cast<double>(depth * n) * reps / seconds / 1e9;
        if (gbs > best[s][r]) best[s][r] = gbs;
      }
  }
  std::printf("GB/s of BF16 weights (the last row float32; depth %lld), one thread, best of 6 rounds\n",
              static_cast<long long>(depth));
  std::printf("%-32s %10s %12s\n", "", "in cache", "from memory");
  for (int r = 0; r < 5; ++r) std::printf("%-32s %10.1f %12.1f\n", names[r], best[0][r], best[1][r]);
  std::printf("\nA step's GEMVs, 12 steps: the best and the median\n");
  attnscope::ThreadPool pool(1), pair(2);
  for (const StepSpec* spec : {&kSmolLM2, &kMarian, &kMarianGreedy}) {
    StepWeights step(*spec, pool);
    for (attnscope::ThreadPool* on : {&pool, &pair}) {
      std::vector<double> ms;
      for (int round = 0; round < 12; ++round) ms.push_back(step.step_ms(*on));
      std::sort(ms.begin(), ms.end());
      const double mb = step.bytes() / 1e6, median = (ms[5] + ms[6]) / 2;
      std::printf("  %-28s ×%d %4.0f MB: %6.2f ms, %5.1f GB/s; median %6.2f ms, %5.1f GB/s\n", spec->name, on->size(),
                  mb, ms[0], mb / ms[0], median, mb / median);
    }
    if (step.undecided()) std::printf("  (the screen could not tell %d of its steps' tokens)\n", step.undecided());
  }
  std::printf("\nA step's attention, 30 layers, 9 query heads over 3, 64 wide (ms, best of 20)\n");
  std::printf("%-18s %8s %14s %16s\n", "", "warm", "own caches", "after weights");
  step_attention_ms(pool, 1024, Caches::warm);  // V8 tiers the kernels up after their first calls
  for (std::int64_t context : {128, 1024, 4096})
    std::printf("  after %4lld tokens %8.2f %14.2f %16.2f\n", static_cast<long long>(context),
                step_attention_ms(pool, context, Caches::warm), step_attention_ms(pool, context, Caches::own),
                step_attention_ms(pool, context, Caches::after_weights));
  quantized_rates();
}
