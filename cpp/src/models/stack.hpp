// A stack of the transformer block (transformer.hpp), run on rows a front end made: every model's encoder, decoder
// or only stack is one. It runs new rows after those in its KV cache: a whole text or image at once, or one
// generated token at a time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "attnscope/taps.hpp"
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
// computed once for every token the stack runs on (Stack::memory()).
struct Memory {
  std::int64_t length = 0;
  std::vector<std::vector<float>> k, v;
};

// What a pass writes besides its output rows, and what it reads besides its input; each may be left empty.
struct Pass {
  // Per layer, where its maps go, [heads, n, total] (total = the cache's tokens after the pass), or null: that
  // layer's attention runs fused. Empty: every layer's does.
  std::vector<float*> maps;
  std::vector<float*> cross_maps;  // per layer: [heads, n, memory length], or null; empty: none
  Mask mask;                       // [n, total]: keys hidden from every query (padding), beyond causality
  const Memory* memory = nullptr;  // what cross-attention reads (Config::cross_attention: required)
  // Heads (layer, head) whose outputs are zeroed before W_O.
  const std::vector<std::pair<std::int64_t, std::int64_t>>* ablate = nullptr;
  LayerTap* tap = nullptr;
  std::int64_t stack = 0;  // this stack's index, as the tap sees it
  // Called with a layer's index once its maps are final.
  std::function<void(std::int64_t layer)> maps_ready;

  // `maps` for [layers, heads, n, total] maps at `base`: every layer's.
  static std::vector<float*> every_layer(float* base, std::int64_t layers, std::int64_t per_layer);
};

class Stack {
 public:
  Stack(Config config, Weights weights);

  const Config& config() const { return c_; }
  const Weights& weights() const { return w_; }

  // Runs rows x [n, width_of(0)] at positions cache.length … through every layer, appending their keys and values
  // to the cache; returns the output [n, d], final-normed where the stack has a final norm.
  Matrix run(const Runtime& rt, Cache& cache, Matrix x, const Pass& pass) const;
  // Another stack's output [m, d] through every layer's cross-attention keys and values.
  Memory memory(const Runtime& rt, const Matrix& encoded) const;
  // Layer `layer`'s maps [heads, n, n] of the cache's n tokens, from its queries and keys, into `out`: what the run
  // that filled the cache computed (with the same `mask`, [n, n] or none), by the same kernel.
  void layer_maps(const Runtime& rt, const Cache& cache, std::int64_t layer, const Mask& mask, float* out) const;
  // Layer `layer`'s attention weights, x·W layout, float32 (unpacked on first request; views valid while it lives).
  MultiHeadParams attention_weights(std::int64_t layer) const;

  // x·W (+ b), W packed in its file's precision.
  static Matrix linear(const Runtime& rt, const Matrix& x, const Weight& w, const Tensor& b);
  // x = norm(x) with weight w (and bias b for LayerNorm), row by row across the threads; nothing when w is empty.
  // `scales`, when given, receives what it divided by and subtracted per row (taps.hpp).
  void norm(const Runtime& rt, Matrix& x, const Tensor& w, const Tensor& b, NormScales* scales = nullptr) const;
  // The final norm, where the stack has one.
  void final_norm(const Runtime& rt, Matrix& x, NormScales* scales = nullptr) const;

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

  Config c_;
  Weights w_;
  mutable std::map<std::int64_t, std::vector<Tensor>> unpacked_;  // attention_weights(), per layer
};

// The [n, n] keep mask (row-major) hiding the padding keys of `attention_mask` from every query; empty when there
// is no mask. Throws if the mask is shorter than the n tokens.
std::vector<std::uint8_t> padding_mask(const std::vector<std::uint8_t>& attention_mask, std::size_t n);

}  // namespace attnscope::transformer
