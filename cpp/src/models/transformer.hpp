// One transformer block for every model AttnScope runs, in stacks (stack.hpp): the encoders (BERT, DistilBERT,
// USE-lite, the vision transformers), the decoders (GPT-2, Llama, Mistral, Qwen 2 and 3, Gemma 2 and 3, Phi-3) and
// both stacks of the encoder-decoders (BART, Marian, T5). What differs between them is a Config, read from a row of
// the architecture table (architectures.cpp), and the names their checkpoints give the tensors (checkpoints.cpp);
// the forward pass is written once, in stack.cpp. What comes before the first layer is a front end
// (front_ends.hpp: token embeddings, an image's patches) and what reads the last one a head (heads.hpp).
//
//   per layer:  h = pre or sandwich ? norm_attn(x) : x
//               q = h·Wq (+bq) [H, n, hd]   k, v = h·Wk, h·Wv (+b) [KV, n, hd]
//               q, k = qk_norm(q), qk_norm(k)          (per head, when qk_norm)
//               q, k = rope(q), rope(k)                (rotate-half over the first rotary dims, at positions p .. p+n)
//               a = softmax(cap(q·kᵀ · scale) + bias + causal/window/padding mask) · v   head h reads kv head
//                   h / (H / KV); bias[h, i, j] = relative_bias[bucket(j − i), h] when relative, else 0
//               a = concat_h(a)·Wo (+bo);  a = post_attn_norm(a) when sandwiched;  a = γ_attn ⊙ a (layer scale)
//               x = (x·Wr + br where the block widens the stream) + a;  x = norm_attn(x) when post
//   cross:      h = pre ? norm_cross(x) : x;  q = h·Wq' (+b)   k, v = memory·Wk', memory·Wv' (+b), once per memory
//               x = x + concat_h(softmax(q·kᵀ · scale) · v)·Wo' (+bo');  x = norm_cross(x) when post
//               h = pre or sandwich ? norm_ffn(x) : x
//               f = gated ? act(h·Wg) ⊙ (h·Wu) : act(h·Wu (+bu));  f = f·Wd (+bd)
//               f = post_ffn_norm(f) when sandwiched;  f = γ_ffn ⊙ f;  x = x + f;  x = norm_ffn(x) when post
//   the end:    x = norm_final(x), where the stack has one
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "attnscope/model.hpp"
#include "models/weights.hpp"

namespace attnscope::transformer {

enum class Norm { layer, rms };  // LayerNorm (GPT-2, BERT, USE-lite, the vision rows, BART) or RMSNorm
// Where a block normalizes: before attention and FFN (pre), after each residual sum (post: BERT's
// x = norm(x + a)), or before and on the sublayer's output too (sandwich: Gemma 2, 3).
enum class Placement { pre, post, sandwich };
// What the block does with positions: rotates q and k (RoPE); adds T5's learned bias per head and bucketed
// key − query distance to every self-attention score (relative); or nothing, where the front end added them to the
// input (learned, sinusoidal) or the model sees none.
enum class Positions { none, rope, relative };
enum class Activation { silu, gelu_tanh, gelu, relu, quick_gelu };  // quick_gelu: x·σ(1.702x) (CLIP)

struct Config {
  std::int64_t layers = 0, heads = 0, kv_heads = 0, head_dim = 0, d_model = 0, ffn = 0;
  std::int64_t max_tokens = 0;  // the longest sequence the stack runs (its positions)
  bool causal = true;           // a token sees the tokens up to it (decoders); else every token (encoders)
  Norm norm = Norm::rms;
  Placement placement = Placement::pre;
  float eps = 1e-6f;
  bool qk_norm = false;  // Qwen 3, Gemma 3: RMSNorm over each head's q and k, before RoPE
  bool gated = true;     // down(act(gate(h)) ⊙ up(h)); else down(act(up(h)))
  Activation act = Activation::silu;
  Positions positions = Positions::rope;
  // Positions::relative: distances fall in `relative_buckets` buckets, exact up to half of them (a quarter each
  // way when bidirectional, that is, when not causal) and logarithmic up to `relative_max_distance`.
  std::int64_t relative_buckets = 32, relative_max_distance = 128;
  // After self-attention, attention over another stack's output (an encoder-decoder's decoder): its queries
  // from this stack, its keys and values from the memory, every key visible.
  bool cross_attention = false;
  bool layer_scale = false;  // each sublayer's output times a learned per-channel γ before the residual (DINOv2)
  // > 0: the first block reads its input at this narrower width, its heads first_width / heads wide, and a
  // residual projection widens it to d_model (USE-lite: 256 → 512). 0: every block reads d_model.
  std::int64_t first_width = 0;
  // RoPE's inverse frequencies [rotary dims / 2] for full-attention layers and sliding-window layers
  // (Gemma 3 gives them their own base), scaling included. The rotary dims are the head's first
  // 2 · size() (partial_rotary_factor × head_dim); the rest pass unrotated.
  std::vector<double> inv_freq_global, inv_freq_local;
  float rope_attention_factor = 1.0f;  // cos and sin scaled by it (rope_scaling longrope's attention_factor)
  float scale = 1.0f;                  // attention scores are q·k · scale (scale_of(l) per layer)
  float attn_softcap = 0.0f;           // > 0: scores become cap · tanh(score / cap) (Gemma 2)
  std::vector<std::int64_t> window;    // per layer: 0 = full attention, else the sliding window's width

  std::int64_t width_of(std::int64_t layer) const { return layer == 0 && first_width ? first_width : d_model; }
  std::int64_t head_dim_of(std::int64_t layer) const {
    return layer == 0 && first_width ? first_width / heads : head_dim;
  }
  // The scale in units of the head's size, so that a narrower first block keeps 1/√d_k.
  float scale_of(std::int64_t layer) const { return scale * std::sqrt(float(head_dim) / float(head_dim_of(layer))); }
};

// The weights of one block, canonical whatever the checkpoint calls them. attn_norm and ffn_norm come before their
// sublayer (pre, sandwich) or after its residual sum (post). Matrices are packed for
// the GEMM in the file's precision, x·W layout (wq [d, H·hd], wk, wv [d, KV·hd], wo [H·hd, d],
// w_gate, w_up [d, ffn], w_down [ffn, d]); norms and biases are float32. Norm weights already hold
// (1 + w) where the checkpoint stores them centred on 0 (Gemma). Empty (null) when absent.
struct Block {
  Weight w_residual;  // [first_width, d_model] where the first block widens the stream (USE-lite), else null
  Tensor b_residual;
  Tensor attn_norm, attn_norm_bias, post_attn_norm, ffn_norm, ffn_norm_bias, post_ffn_norm, q_norm, k_norm;
  Weight wq, wk, wv, wo, w_gate, w_up, w_down;
  Tensor bq, bk, bv, bo, b_gate, b_up, b_down;
  // Cross-attention (Config::cross_attention): its norm (before it or after its residual sum, as placement says)
  // and projections, wcq [d, H·hd], wck, wcv [d, H·hd], wco [H·hd, d].
  Tensor cross_norm, cross_norm_bias;
  Weight wcq, wck, wcv, wco;
  Tensor bcq, bck, bcv, bco;
  Tensor attn_scale, ffn_scale;  // layer scale's γ [d] (Config::layer_scale)
};

// One stack's weights: its blocks, T5's relative bias and the final norm.
struct Weights {
  std::vector<Block> blocks;
  Tensor relative_bias;                // relative positions: [relative_buckets, heads], shared by every layer
  Tensor final_norm, final_norm_bias;  // empty where the blocks end normed (post) or the stack has none (CLIP)
};

// T5's bucket of a key − query distance: the distance itself while it is under half the buckets (of each side's
// half when bidirectional: keys after the query count from buckets / 2), then logarithmic in it up to
// max_distance, past which every distance shares the last bucket. Causal ones count only keys before the query.
// Computed in float32, as Hugging Face's T5 computes it, so that a bucket's edge falls where the model learned it.
std::int64_t relative_bucket(std::int64_t distance, bool bidirectional, std::int64_t buckets,
                             std::int64_t max_distance);

}  // namespace attnscope::transformer
