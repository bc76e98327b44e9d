// The Model that runs a transformer::Config, and its KV cache.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/screened_argmax.hpp"
#include "models/transformer.hpp"

namespace attnscope::transformer {

// Every layer's keys and values for the tokens so far, after RoPE: [KV, capacity, hd] per layer; with
// `queries`, their queries too, [H, capacity, hd] per layer, from which any layer's maps can be computed again.
struct Cache {
  explicit Cache(const Config& c, bool queries = false);
  // Room for `rows` tokens (growing by doubling, up to max_tokens), keeping those there.
  void reserve(const Config& c, std::int64_t rows);
  // Starts this (empty) cache with the keys and values of `from`'s first `rows` tokens (not its queries).
  void take_prefix(const Config& c, const Cache& from, std::int64_t rows);

  std::int64_t length = 0, capacity = 0;
  std::vector<std::vector<float>> k, v, q;
};

// Another stack's output [m, d] as each layer's cross-attention sees it: its keys and values [H, m, hd] per layer,
// computed once for every token the stack runs on (memory()).
struct Memory {
  std::int64_t length = 0;
  std::vector<std::vector<float>> k, v;
};

// What extend() writes besides the hidden state, and what it reads besides the input; each may be null.
struct Extras {
  float* weights = nullptr;             // [layers, heads, n, total]: every layer's maps for the new rows
  const RunOptions* options = nullptr;  // ablations, projections
  ModelRun* run = nullptr;              // receives projections when the options ask
  LogitLens* lens = nullptr;            // [layers, n] filled
  Mask mask;                            // [n, total]: keys hidden from every query (padding), beyond causality
  const Memory* memory = nullptr;       // what cross-attention reads (Config::cross_attention: required)
  float* cross_weights = nullptr;       // [layers, heads, n, memory length]: every layer's cross-attention maps
  float* norms = nullptr;               // [layers + 1, n]: each row's L2 norm at the stack's input and per layer
  // Called with a layer's index once its maps in `weights` are final (RunOptions::maps_ready, when `weights` is
  // the run's attentions whole).
  std::function<void(std::int64_t layer)> maps_ready;
};

// What a run leaves for the next one (transformer_run.cpp): its keys and values, the maps' rows, the
// per-token outputs.
struct Previous {
  std::vector<std::int32_t> ids;
  RunOptions options;
  Cache cache;  // with the queries
  // Every map's lower triangle, row by row: row i of each of the [layers, heads] maps holds keys 0 .. i, and the
  // rows i of all maps start at maps · triangle(i), so a run that extends this one keeps them where they are and
  // appends its own rows (when every layer's maps were asked for; else empty).
  TensorData maps;
  Matrix hidden;            // [n, d]
  Predictions predictions;  // [n, k]
  LogitLens lens;           // [layers, n]
  Matrix logits;            // [n, vocab] when asked for
};

class TransformerModel final : public Model {
 public:
  TransformerModel(Config config, Weights weights, std::unique_ptr<Tokenizer> tokenizer);

  MultiHeadParams attention_weights(std::int64_t layer) const override;
  std::unique_ptr<Generation> generate(const Runtime& runtime, const std::vector<std::int32_t>& ids, std::uint64_t seed,
                                       GenerationMaps maps) const override;
  // A generation whose cross-attention reads `memory` (an encoder-decoder's decoder): it starts from `ids` alone,
  // never from the last run, which had no memory.
  std::unique_ptr<Generation> generate(const Runtime& runtime, const std::vector<std::int32_t>& ids, std::uint64_t seed,
                                       GenerationMaps maps, std::shared_ptr<const Memory> memory) const;
  Tensor logits(const Runtime& runtime, const Tensor& hidden) const override;

  const Config& config() const { return config_; }
  // x·W (+ b), W packed in its file's precision.
  Matrix linear(const Runtime& rt, const Matrix& x, const Weight& w, const Tensor& b) const;
  // x = norm(x) with weight w (and bias b for LayerNorm), row by row across the threads; nothing when w is empty.
  void norm(const Runtime& rt, Matrix& x, const Tensor& w, const Tensor& b) const;
  const Weights& weights() const { return w_; }

  // Runs tokens ids[0 .. n) at positions cache.length … through every layer, appending their keys
  // and values to the cache; returns their final-normed hidden state [n, d].
  Matrix extend(const Runtime& rt, Cache& cache, const std::int32_t* ids, std::int64_t n, const Extras& e) const;
  // The same from the stack's input rows x [n, width_of(0)] (the token front end's embed(), or another's).
  Matrix stack(const Runtime& rt, Cache& cache, Matrix x, const Extras& e) const;
  // Another stack's output [m, d] through every layer's cross-attention keys and values.
  Memory memory(const Runtime& rt, const Matrix& encoded) const;
  // The next-token logits [rows, vocab] of final-normed hidden rows (soft-capped where the model caps).
  Matrix logits(const Runtime& rt, const Matrix& normed) const;
  // The greedy next token after the final-normed hidden row `normed` [1, d], the ids in `excluded` left out: the
  // first argmax of logits(normed), bit for bit, found by a screen that reads a float32 head at half its bytes
  // (kernels/screened_argmax.hpp; built on first use). −1 where there is none (a 16-bit head, soft-capped logits,
  // natively) or it cannot tell: then compute logits().
  std::int64_t greedy(const Runtime& rt, const Matrix& normed, const std::vector<std::int32_t>& excluded) const;
  // Tokens ids[0 .. n) at positions p0 … embedded: [n, width_of(0)].
  Matrix embed(const std::int32_t* ids, std::int64_t n, std::int64_t p0) const;
  // Layer `layer`'s maps [heads, n, n] of the cache's n tokens, from its queries and keys, into `out`: what the run
  // that filled the cache computed (with the same `mask`, [n, n] or none), by the same kernel.
  void layer_maps(const Runtime& rt, const Cache& cache, std::int64_t layer, const Mask& mask, float* out) const;
  // How many leading tokens of `ids` (all but the last, whose logits a generation needs) the last run holds: their
  // keys and values go into the empty `cache`, and with `rows`, each token's rows of every map ([layers, heads,
  // i + 1] for token i) into `rows`, when that run kept them. 0 when it holds none of them. It reads the last run
  // as run() writes it: like run(), not to be called from two threads at once.
  std::int64_t resume(const std::vector<std::int32_t>& ids, Cache& cache, std::vector<std::vector<float>>* rows) const;

 protected:
  void forward(const Runtime& runtime, ModelRun& r, const RunOptions& options) const override;
  bool selects_map_layers() const override { return true; }

 private:
  // softmax(q·kᵀ · scale, soft-capped, causal and windowed, + mask)·v of layer l's queries q [H, n, hd] at positions
  // p0 .. p0+n against the cache's keys and values 0 .. p0+n → concat [n, H·hd]; weights [H, n, p0+n] unless null.
  void attend(ThreadPool& pool, const Cache& cache, std::int64_t l, const TensorView& q, std::int64_t p0,
              const Mask& mask, float* concat, float* weights) const;
  // Self-attention's mask for queries p0 .. p0+n against keys 0 .. p0+n: `padding` as it is, or with relative
  // positions, the bias [H, n, p0+n] with padding's hidden keys at −∞, written into `storage`.
  Mask self_mask(std::int64_t p0, std::int64_t n, const Mask& padding, std::vector<float>& storage) const;
  // softmax(q·kᵀ · scale)·v of layer l's cross-attention queries q [H, n, hd] against the memory → concat
  // [n, H·hd]; weights [H, n, m] unless null.
  void cross_attend(ThreadPool& pool, const Memory& memory, std::int64_t l, const TensorView& q, float* concat,
                    float* weights) const;
  // r.embedding from the final hidden state [n, d], as Config::pooler says (nothing for Pooler::none).
  void pool(const Runtime& rt, const Matrix& hidden, ModelRun& r) const;
  // The logit lens of layer `layer`'s output x [n, d]: its most likely token and probability per row.
  void lens_row(const Runtime& rt, const Matrix& x, std::int64_t layer, LogitLens& lens) const;

  Config config_;
  Weights w_;
  mutable std::map<std::int64_t, std::vector<Tensor>> unpacked_;  // attention_weights(), per layer
  mutable std::unique_ptr<Previous> previous_;                    // the last run, for the next to extend
  mutable std::once_flag screen_once_;
  mutable std::unique_ptr<kernels::ScreenedArgmax> screen_;  // greedy(): null until used, or where there is none
};

}  // namespace attnscope::transformer
