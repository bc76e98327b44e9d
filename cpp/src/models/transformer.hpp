// One transformer block for every model AttnScope runs: the encoders (BERT, DistilBERT, USE-lite) and the decoders
// (GPT-2, Llama, Mistral, Qwen 2 and 3, Gemma 2 and 3, Phi-3). What differs between them is a row of the
// architecture table (architectures.cpp reads config.json into a Config) and the names their checkpoints give the
// tensors (checkpoints.cpp, one reader per naming family); the forward pass is written once, in transformer.cpp.
//
//   the input: x = embed[ids] · embed_scale (+ position[p] when learned, + sin ‖ cos(p · inv_timescales) when
//              sinusoidal); x = embed_norm(x) where the model has one (BERT)           [n, width_of(0)]
//              (the stack itself starts from x: another front end, image patches say, hands it its own rows)
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
//   language models: logits = cap(norm_final(x) · head_scale · Eᵀ + logits_bias)   E: the LM head, or the embedding
//                    when tied
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
enum class Family { llama, phi3, gpt2, bert, distilbert, use_lite, bart, marian, t5, vit, dinov2, clip };
enum class Norm { layer, rms };  // LayerNorm (GPT-2, BERT, USE-lite) or RMSNorm
// Where a block normalizes: before attention and FFN (pre), after each residual sum (post: BERT's
// x = norm(x + a)), or before and on the sublayer's output too (sandwich: Gemma 2, 3).
enum class Placement { pre, post, sandwich };
// sinusoidal: sin ‖ cos of position · inv_timescales added to the input; relative (T5): a learned bias per head
// and bucketed key − query distance added to every self-attention score; none: the model sees no positions.
enum class Positions { none, rope, learned, sinusoidal, relative };
enum class Activation { silu, gelu_tanh, gelu, relu, quick_gelu };  // quick_gelu: x·σ(1.702x) (CLIP)
// What an encoder reduces its output to (ModelRun::embedding): nothing, tanh(x[0]·W + b) (BERT's
// pooler), or l2_normalize(tanh(mean_rows(x)·W + b)) (USE-lite).
enum class Pooler { none, first_tanh, mean_tanh_l2 };

// A vision transformer's image front end (vision_model.cpp): the image cut into patch × patch squares, each
// projected to d_model (a Conv2d of stride patch, as one GEMM), then
//   x = [prefix tokens + their positions] ‖ [registers] ‖ [patches + positions interpolated to the image's grid]
// The stack runs on x bidirectionally; its maps are over these tokens.
enum class VisionHead { none, cls, cls_distillation };  // logits from [CLS], or (cls(x[0]) + distillation(x[1])) / 2
struct VisionConfig {
  std::int64_t patch = 0;                                        // 0: not a vision model
  std::int64_t channels = 3, image_height = 0, image_width = 0;  // the trained image: its grid is the table's
  std::int64_t prefix = 1;     // [CLS], and DeiT's distillation token after it, each with a position of its own
  std::int64_t registers = 0;  // DINOv2 with registers: learned tokens after the prefix, with no position
  // An image of another grid than the table's reads the table's patch rows resized to its grid by torch's bicubic
  // interpolation at size=(rows, cols), as Hugging Face's interpolate_pos_encoding calls it; DINOv2 with registers
  // passes antialias=True (a −0.5 cubic filter, normalized), which changes the values even when it enlarges.
  bool antialias = false;
  VisionHead head = VisionHead::none;
  std::vector<std::string> labels;  // id2label, by id
  std::int64_t projection = 0;      // CLIPModel: the image embedding's width (visual_projection)
};

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
  // Positions::relative: distances fall in `relative_buckets` buckets, exact up to half of them (a quarter each
  // way when bidirectional, that is, when not causal) and logarithmic up to `relative_max_distance`.
  std::int64_t relative_buckets = 32, relative_max_distance = 128;
  // After self-attention, attention over another stack's output (an encoder-decoder's decoder): its queries
  // from this stack, its keys and values from the memory, every key visible.
  bool cross_attention = false;
  bool layer_scale = false;  // each sublayer's output times a learned per-channel γ before the residual (DINOv2)
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
  float head_scale = 1.0f;             // the final hidden state × this before the LM head (T5 tied: d^-0.5)
  std::vector<std::int64_t> window;    // per layer: 0 = full attention, else the sliding window's width
  bool tied = false;                   // the LM head is the embedding table
  bool stacked = false;                // Phi-3: qkv_proj holds q, k, v and gate_up_proj gate, up, stacked by rows
  std::vector<std::int32_t> eos;       // eos_token_id (generation_config.json's when given)
  bool tokenizer_required = false;     // USE-lite: its vocab.json is part of the model
  // An encoder-decoder model is its decoder's Config (causal, with cross-attention and the LM head) holding the
  // encoder stack's (bidirectional, no head); null for a model of one stack.
  std::shared_ptr<const Config> encoder;
  std::int32_t decoder_start = 0;  // encoder-decoders: the decoder's first token (decoder_start_token_id)
  std::int32_t forced_bos = -1;    // and the token generation forces after it (forced_bos_token_id), or -1
  BeamOptions search;              // and their search settings (ModelInfo::search)
  VisionConfig vision;             // vision transformers' front end and head

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
  // Cross-attention (Config::cross_attention): its norm (before it or after its residual sum, as placement says)
  // and projections, wcq [d, H·hd], wck, wcv [d, H·hd], wco [H·hd, d].
  Tensor cross_norm, cross_norm_bias;
  Weight wcq, wck, wcv, wco;
  Tensor bcq, bck, bcv, bco;
  Tensor attn_scale, ffn_scale;  // layer scale's γ [d] (Config::layer_scale)
};

struct Weights {
  Weight embed;                        // Eᵀ [d, vocab]: token t's embedding is column t; the head when tied
  Tensor position;                     // [max_tokens, d] (learned positions; BERT's token type 0 added in) or empty
  Tensor inv_timescales;               // sinusoidal positions: [width_of(0) / 2]
  Tensor relative_bias;                // relative positions: [relative_buckets, heads], shared by every layer
  Tensor embed_norm, embed_norm_bias;  // a norm of the embeddings (BERT) or empty
  Tensor final_norm, final_norm_bias;  // empty where the blocks end normed (post) or the model has none
  Weight pool;                         // the pooler's [d, d] (Config::pooler) or null
  Tensor pool_bias;
  Weight lm_head;      // [d, vocab], or null when tied to embed
  Tensor logits_bias;  // [vocab] added to the logits (BART's final_logits_bias) or empty
  std::vector<Block> blocks;
  std::shared_ptr<const Weights> encoder;  // an encoder-decoder's encoder stack (Config::encoder), sharing embed
  // Vision transformers (Config::vision). position is [prefix + trained patches, d]; embed_norm is CLIP's
  // pre_layrnorm; final_norm their last LayerNorm (none in CLIP, whose post_layernorm normalizes token 0 alone).
  Weight patch;                      // [channels · patch², d]: a patch's values in (channel, row, column) order
  Tensor patch_bias;                 // [d] or empty (CLIP)
  Tensor prefix;                     // [prefix, d]: [CLS] (then the distillation token)
  Tensor registers;                  // [registers, d]
  Tensor pool_norm, pool_norm_bias;  // CLIP's post_layernorm
  Weight projection;                 // CLIPModel's visual_projection [d, projection], or null
  Weight classifier, distillation_classifier;  // [d, labels] (VisionHead)
  Tensor classifier_bias, distillation_classifier_bias;
  std::string dtype;  // how the files store them: "f32", "f16", "bf16"
  const Weight& head() const { return lm_head ? lm_head : embed; }
};

// T5's bucket of a key − query distance: the distance itself while it is under half the buckets (of each side's
// half when bidirectional: keys after the query count from buckets / 2), then logarithmic in it up to
// max_distance, past which every distance shares the last bucket. Causal ones count only keys before the query.
// Computed in float32, as Hugging Face's T5 computes it, so that a bucket's edge falls where the model learned it.
std::int64_t relative_bucket(std::int64_t distance, bool bidirectional, std::int64_t buckets,
                             std::int64_t max_distance);

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
