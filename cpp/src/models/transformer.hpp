// One transformer block for every model AttnScope runs: the encoders (BERT, DistilBERT, USE-lite) and the decoders
// (GPT-2, Llama, Mistral, Qwen 2 and 3, Gemma 2 and 3, Phi-3). What differs between them is a row of the
// architecture table (architectures.cpp reads config.json into a Config) and the names their checkpoints give the
// tensors (checkpoints.cpp, one reader per naming family); the forward pass is written once, in transformer.cpp.
//
//   x = embed[ids] · embed_scale (+ position[p] when learned, + sin ‖ cos(p · inv_timescales) when sinusoidal)
//   x = embed_norm(x) where the model has one (BERT)                                   [n, width_of(0)]
//   per layer:  h = pre or sandwich ? norm_attn(x) : x
//               q = h·Wq (+bq) [H, n, hd]   k, v = h·Wk, h·Wv (+b) [KV, n, hd]
//               q, k = qk_norm(q), qk_norm(k)          (per head, when qk_norm)
//               q, k = rope(q), rope(k)                (rotate-half over the first rotary dims, at positions p .. p+n)
//               a = softmax(cap(q·kᵀ · scale) + causal/window/padding mask) · v   head h reads kv head h / (H / KV)
//               a = concat_h(a)·Wo (+bo);  a = post_attn_norm(a) when sandwiched
//               x = (x·Wr + br where the block widens the stream) + a;  x = norm_attn(x) when post
//               h = pre or sandwich ? norm_ffn(x) : x
//               f = gated ? act(h·Wg) ⊙ (h·Wu) : act(h·Wu (+bu));  f = f·Wd (+bd)
//               f = post_ffn_norm(f) when sandwiched;  x = x + f;  x = norm_ffn(x) when post
//   language models: logits = cap(norm_final(x) · Eᵀ)   E: the LM head, or the embedding when tied
//   encoders:        embedding = the pooler's reduction of x, where the model has one
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/model.hpp"
#include "models/weights.hpp"

namespace attnscope {

class Json;

namespace transformer {

// How a checkpoint names its tensors: one reader each (checkpoints.cpp). Phi-3 is the Llama family's names with
// q, k, v stacked in one tensor.
enum class Family { llama, phi3, gpt2, bert, distilbert, use_lite };
enum class Norm { layer, rms };  // LayerNorm (GPT-2, BERT, USE-lite) or RMSNorm
// Where a block normalizes: before attention and FFN (pre), after each residual sum (post: BERT's
// x = norm(x + a)), or before and on the sublayer's output too (sandwich: Gemma 2, 3).
enum class Placement { pre, post, sandwich };
enum class Positions { rope, learned, sinusoidal };  // sinusoidal: sin ‖ cos of position · inv_timescales
enum class Activation { silu, gelu_tanh, gelu, relu };
// What an encoder reduces its output to (ModelRun::embedding): nothing, tanh(x[0]·W + b) (BERT's
// pooler), or l2_normalize(tanh(mean_rows(x)·W + b)) (USE-lite).
enum class Pooler { none, first_tanh, mean_tanh_l2 };

struct Config {
  std::string architecture, name;
  Family family = Family::llama;
  std::int64_t layers = 0, heads = 0, kv_heads = 0, head_dim = 0, d_model = 0, ffn = 0, vocab = 0, max_tokens = 0;
  bool causal = true;          // a token sees the tokens up to it (decoders); else every token (encoders)
  bool language_model = true;  // an LM head: predictions, logit lens, generation
  Norm norm = Norm::rms;
  Placement placement = Placement::pre;
  bool norm_plus_one = false;  // Gemma: RMSNorm weights are stored centred on 0 and multiply as (1 + w)
  float eps = 1e-6f;
  bool qk_norm = false;  // Qwen 3, Gemma 3: RMSNorm over each head's q and k, before RoPE
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  bool gated = true;  // down(act(gate(h)) ⊙ up(h)); else down(act(up(h)))
  Activation act = Activation::silu;
  Positions positions = Positions::rope;
  // > 0: the first block reads the embedding at this narrower width, its heads first_width / heads wide, and a
  // residual projection widens it to d_model (USE-lite: 256 → 512). 0: every block reads d_model.
  std::int64_t first_width = 0;
  Pooler pooler = Pooler::none;
  // RoPE's inverse frequencies [rotary dims / 2] for full-attention layers and sliding-window layers
  // (Gemma 3 gives them their own base), scaling included. The rotary dims are the head's first
  // 2 · size() (partial_rotary_factor × head_dim); the rest pass unrotated.
  std::vector<double> inv_freq_global, inv_freq_local;
  float rope_attention_factor = 1.0f;  // cos and sin scaled by it (rope_scaling longrope's attention_factor)
  float scale = 1.0f;                  // attention scores are q·k · scale (scale_of(l) per layer)
  float attn_softcap = 0.0f;           // > 0: scores become cap · tanh(score / cap) (Gemma 2)
  float final_softcap = 0.0f;          // > 0: the same on the logits
  float embed_scale = 1.0f;            // Gemma: √d_model
  std::vector<std::int64_t> window;    // per layer: 0 = full attention, else the sliding window's width
  bool tied = false;                   // the LM head is the embedding table
  bool stacked = false;                // Phi-3: qkv_proj holds q, k, v and gate_up_proj gate, up, stacked by rows
  std::vector<std::int32_t> eos;       // eos_token_id (generation_config.json's when given)
  bool tokenizer_required = false;     // USE-lite: its vocab.json is part of the model

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
// (1 + w) where the config says norm_plus_one. Empty (null) when absent.
struct Block {
  Weight w_residual;  // [first_width, d_model] where the first block widens the stream (USE-lite), else null
  Tensor b_residual;
  Tensor attn_norm, attn_norm_bias, post_attn_norm, ffn_norm, ffn_norm_bias, post_ffn_norm, q_norm, k_norm;
  Weight wq, wk, wv, wo, w_gate, w_up, w_down;
  Tensor bq, bk, bv, bo, b_gate, b_up, b_down;
};

struct Weights {
  Weight embed;                        // Eᵀ [d, vocab]: token t's embedding is column t; the head when tied
  Tensor position;                     // [max_tokens, d] (learned positions; BERT's token type 0 added in) or empty
  Tensor inv_timescales;               // sinusoidal positions: [width_of(0) / 2]
  Tensor embed_norm, embed_norm_bias;  // a norm of the embeddings (BERT) or empty
  Tensor final_norm, final_norm_bias;  // empty where the blocks end normed (post) or the model has none
  Weight pool;                         // the pooler's [d, d] (Config::pooler) or null
  Tensor pool_bias;
  Weight lm_head;  // [d, vocab], or null when tied to embed
  std::vector<Block> blocks;
  std::string dtype;  // how the files store them: "f32", "f16", "bf16"
  const Weight& head() const { return lm_head ? lm_head : embed; }
};

// The architecture table: whether config.json's architectures[0] is a model AttnScope
// runs, and its Config (every field checked; an unknown or contradictory one is an Error).
// `generation`: generation_config.json, or null.
bool is_supported(const std::string& architecture);
std::string supported_architectures();  // every row's architecture, for an error message
Config read_config(const std::string& architecture, const Json& config, const Json* generation = nullptr);
// The weights in the checkpoint's own names, checked against the config.
Weights read_weights(const Config& config, const WeightStore& store);

std::unique_ptr<Model> make_model(const std::string& architecture, const Json& config, const ModelFiles& files,
                                  const LargeFiles& large, std::unique_ptr<Tokenizer> tokenizer);

// The transformer behind a Model made by make_model, for tests.
struct Parts {
  const Config* config;
  const Weights* weights;
};
Parts parts_of(const Model& model);

// Plain loops in float64, written as the formulas above read: the yardstick for the
// decoder. Attention maps [layers, heads, n, n] and logits [n, vocab].
struct ReferenceRun {
  std::vector<double> attentions, logits;
};
ReferenceRun reference_forward(const Config& config, const Weights& weights, const std::vector<std::int32_t>& ids);

}  // namespace transformer
}  // namespace attnscope
