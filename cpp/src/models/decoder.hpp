// One decoder block for every decoder-only language model AttnScope runs: GPT-2, Llama
// (SmolLM, TinyLlama, Llama 2 and 3), Mistral, Qwen 2 and 3, Gemma 2 and 3, Phi-3 and Phi-4-mini. What differs
// between them is a row of DecoderConfig (read from config.json by architectures.cpp) and
// the names their checkpoints give the tensors (one reader per naming family); the forward
// pass is written once, here and in decoder.cpp.
//
//   x = embed[ids] · embed_scale (+ position[p] when learned)                 [n, d]
//   per layer:  h = norm_attn(x)
//               q = h·Wq (+bq) [H, n, hd]   k, v = h·Wk, h·Wv (+b) [KV, n, hd]
//               q, k = qk_norm(q), qk_norm(k)          (per head, when qk_norm)
//               q, k = rope(q), rope(k)                (rotate-half over the first rotary dims, at positions p .. p+n)
//               a = softmax(cap(q·kᵀ · scale) + causal/window mask) · v      head h reads kv head h / (H / KV)
//               a = concat_h(a)·Wo (+bo);  a = post_attn_norm(a) when sandwiched
//               x = x + a
//               h = norm_ffn(x)
//               f = gated ? act(h·Wg) ⊙ (h·Wu) : act(h·Wu (+bu));  f = f·Wd (+bd)
//               f = post_ffn_norm(f) when sandwiched;  x = x + f
//   logits = cap(norm_final(x) · Eᵀ)                   E: the LM head, or the embedding when tied
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/model.hpp"
#include "models/weights.hpp"

namespace attnscope {

class Json;

namespace decoder {

enum class Norm { layer, rms };  // LayerNorm (GPT-2) or RMSNorm
enum class Activation { silu, gelu_tanh, gelu, relu };

struct Config {
  std::string architecture, name;
  std::int64_t layers = 0, heads = 0, kv_heads = 0, head_dim = 0, d_model = 0, ffn = 0, vocab = 0, max_tokens = 0;
  Norm norm = Norm::rms;
  bool norm_plus_one = false;  // Gemma: RMSNorm weights are stored centred on 0 and multiply as (1 + w)
  float eps = 1e-6f;
  bool sandwich = false;  // Gemma 2, 3: norms on the attention's and the FFN's outputs too
  bool qk_norm = false;   // Qwen 3, Gemma 3: RMSNorm over each head's q and k, before RoPE
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  bool gated = true;  // down(act(gate(h)) ⊙ up(h)); else down(act(up(h)))
  Activation act = Activation::silu;
  bool learned_positions = false;  // GPT-2: a position embedding; else RoPE
  // RoPE's inverse frequencies [rotary dims / 2] for full-attention layers and sliding-window layers
  // (Gemma 3 gives them their own base), scaling included. The rotary dims are the head's first
  // 2 · size() (partial_rotary_factor × head_dim); the rest pass unrotated.
  std::vector<double> inv_freq_global, inv_freq_local;
  float rope_attention_factor = 1.0f;  // cos and sin scaled by it (rope_scaling longrope's attention_factor)
  float scale = 1.0f;                  // attention scores are q·k · scale
  float attn_softcap = 0.0f;           // > 0: scores become cap · tanh(score / cap) (Gemma 2)
  float final_softcap = 0.0f;          // > 0: the same on the logits
  float embed_scale = 1.0f;            // Gemma: √d_model
  std::vector<std::int64_t> window;    // per layer: 0 = full attention, else the sliding window's width
  bool tied = false;                   // the LM head is the embedding table
  bool stacked = false;                // Phi-3: qkv_proj holds q, k, v and gate_up_proj gate, up, stacked by rows
  std::vector<std::int32_t> eos;       // eos_token_id (generation_config.json's when given)
};

// The weights of one block, canonical whatever the checkpoint calls them. Matrices are packed for
// the GEMM in the file's precision, x·W layout (wq [d, H·hd], wk, wv [d, KV·hd], wo [H·hd, d],
// w_gate, w_up [d, ffn], w_down [ffn, d]); norms and biases are float32. Norm weights already hold
// (1 + w) where the config says norm_plus_one. Empty (null) when absent.
struct Block {
  Tensor attn_norm, attn_norm_bias, post_attn_norm, ffn_norm, ffn_norm_bias, post_ffn_norm, q_norm, k_norm;
  Weight wq, wk, wv, wo, w_gate, w_up, w_down;
  Tensor bq, bk, bv, bo, b_gate, b_up, b_down;
};

struct Weights {
  Weight embed;     // Eᵀ [d, vocab]: token t's embedding is column t; the head when tied
  Tensor position;  // [max_tokens, d] (learned positions) or empty
  Tensor final_norm, final_norm_bias;
  Weight lm_head;  // [d, vocab], or null when tied to embed
  std::vector<Block> blocks;
  std::string dtype;  // how the files store them: "f32", "f16", "bf16"
  const Weight& head() const { return lm_head ? lm_head : embed; }
};

// The architecture table: whether config.json's architectures[0] is a decoder AttnScope
// runs, and its Config (every field checked; an unknown or contradictory one is an Error).
// `generation`: generation_config.json, or null.
bool is_decoder(const std::string& architecture);
Config read_config(const std::string& architecture, const Json& config, const Json* generation = nullptr);
// The weights in the checkpoint's own names, checked against the config.
Weights read_weights(const Config& config, const WeightStore& store);

std::unique_ptr<Model> make_decoder(const std::string& architecture, const Json& config, const ModelFiles& files,
                                    const LargeFiles& large, std::unique_ptr<Tokenizer> tokenizer);

// The decoder behind a Model made by make_decoder, for tests; nullptr for other models.
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

}  // namespace decoder
}  // namespace attnscope
