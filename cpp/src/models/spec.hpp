// A model as its row of the architecture table reads it (architectures.cpp): a front end, one stack or an encoder
// and a decoder, the heads after the last stack, and its generation settings; and its weights as the row's naming
// family's converter reads them (checkpoints.cpp). TransformerModel (transformer_model.hpp) puts the parts together.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/model.hpp"
#include "models/transformer.hpp"
#include "models/weights.hpp"

namespace attnscope {

class Json;

namespace transformer {

// How a checkpoint names its tensors: one converter each (checkpoints.cpp).
enum class Family { llama, phi3, gpt2, bert, distilbert, use_lite, bart, marian, t5, vit, dinov2, clip, whisper };

// The token front end: x = embed[ids] · embed_scale (+ position[p] when learned, + sin ‖ cos(p · inv_timescales)
// when sinusoidal); x = LayerNorm(x) where the model has one (BERT, BART).   [n, width]
enum class TokenPositions { none, learned, sinusoidal };
struct TokenConfig {
  std::int64_t vocab = 0, width = 0;  // width: the first layer's (Config::width_of(0))
  std::int64_t max_tokens = 0;        // the position table's rows (learned), or the stack's limit
  TokenPositions positions = TokenPositions::none;
  float embed_scale = 1.0f;  // Gemma, BART's scale_embedding: √d_model
  float eps = 1e-12f;        // the embeddings' LayerNorm's
};

// The image front end (front_ends.hpp): the image cut into patch × patch squares, each projected to d_model (a
// Conv2d of stride patch, as one GEMM), then
//   x = [prefix tokens + their positions] ‖ [registers] ‖ [patches + positions interpolated to the image's grid]
//   x = LayerNorm(x) where the model has one (CLIP's pre_layrnorm)
struct VisionConfig {
  std::int64_t patch = 0;
  std::int64_t channels = 3, image_height = 0, image_width = 0;  // the trained image: its grid is the table's
  std::int64_t prefix = 1;     // [CLS], and DeiT's distillation token after it, each with a position of its own
  std::int64_t registers = 0;  // DINOv2 with registers: learned tokens after the prefix, with no position
  // An image of another grid than the table's reads the table's patch rows resized to its grid by torch's bicubic
  // interpolation at size=(rows, cols), as Hugging Face's interpolate_pos_encoding calls it; DINOv2 with registers
  // passes antialias=True (a −0.5 cubic filter, normalized), which changes the values even when it enlarges.
  bool antialias = false;
  float eps = 1e-5f;  // the pre-norm's
};

// The audio front end (front_ends.hpp): Whisper's log-mel features [mel_bins, frames] (attnscope/audio.hpp), then
//   h = GELU(Conv1d(mel_bins → d, kernel 3, padding 1)(features))                  [frames, d]
//   x = GELU(Conv1d(d → d, kernel 3, stride 2, padding 1)(h)) + positions          [frames / 2, d]
// The checkpoint's encoder positions are sinusoids, read as it stores them.
struct AudioConfig {
  std::int64_t mel_bins = 80;
  std::int64_t positions = 1500;  // max_source_positions: a window's frames / 2
};

// What reads the last stack's output.
//   language models:  logits = cap(norm_final(x) · head_scale · Eᵀ + logits_bias)   E: the LM head, or the token
//                     embedding when tied
//   poolers:          tanh(x[0]·W + b) (BERT, ViT), or l2_normalize(tanh(mean_rows(x)·W + b)) (USE-lite)
//   images:           CLIP's post_layernorm(x[0]) and its projection; a classifier on [CLS] (DeiT with its teacher:
//                     the mean of cls(x[0]) and distillation(x[1]))
enum class Pooler { none, first_tanh, mean_tanh_l2 };
enum class Classifier { none, cls, cls_distillation };
struct HeadConfig {
  bool language_model = false;  // an LM head: predictions, logit lens, generation
  std::int64_t vocab = 0;
  bool tied = false;           // the LM head is the (decoder's) token embedding
  float head_scale = 1.0f;     // the final hidden state × this before the LM head (T5 tied: d^-0.5)
  float final_softcap = 0.0f;  // > 0: logits become cap · tanh(logit / cap) (Gemma)
  Pooler pooler = Pooler::none;
  Classifier classifier = Classifier::none;
  std::vector<std::string> labels;  // id2label, by id
  std::int64_t projection = 0;      // CLIP: the image embedding's width (visual_projection)
  float pool_eps = 1e-5f;           // CLIP's post_layernorm's
};

// An encoder-decoder's and a language model's generation settings.
struct GenerationSettings {
  std::vector<std::int32_t> eos;   // eos_token_id (generation_config.json's when given)
  std::int32_t decoder_start = 0;  // encoder-decoders: the decoder's first token (decoder_start_token_id)
  std::int32_t forced_bos = -1;    // and the token generation forces after it (forced_bos_token_id), or -1
  BeamOptions search;              // their search settings (ModelInfo::search)
};

// How the converter finds a row's tensors, beyond its naming family.
struct Checkpoint {
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  bool norm_plus_one = false;  // Gemma: RMSNorm weights are stored centred on 0 and multiply as (1 + w)
  bool stacked = false;        // Phi-3: qkv_proj holds q, k, v and gate_up_proj gate, up, stacked by rows
  bool image_text = false;     // Gemma 3's image-text checkpoints: the text model under language_model.
};

struct Spec {
  std::string architecture, name;
  Family family = Family::llama;
  InputKind input = InputKind::text;
  // The token front ends: the first stack's (text models) and an encoder-decoder's decoder's (sharing the table).
  TokenConfig tokens, target_tokens;
  VisionConfig vision;         // the image front end (InputKind::image)
  AudioConfig audio;           // the audio front end (InputKind::audio)
  std::vector<Config> stacks;  // one stack, or an encoder then a decoder with cross-attention
  HeadConfig head;
  GenerationSettings generation;
  Checkpoint checkpoint;
  bool tokenizer_required = false;  // USE-lite: its vocab.json is part of the model

  bool encoder_decoder() const { return stacks.size() == 2; }
  const Config& last() const { return stacks.back(); }
};

struct TokenWeights {
  Weight embed;            // Eᵀ [width, vocab]: token t's embedding is column t; the LM head when tied
  Tensor position;         // [max_tokens, width] (learned positions; BERT's token type 0 added in) or empty
  Tensor inv_timescales;   // sinusoidal positions: [width / 2]
  Tensor norm, norm_bias;  // the embeddings' LayerNorm (BERT, BART) or empty
};

struct PatchWeights {
  Weight patch;            // [channels · patch², d]: a patch's values in (channel, row, column) order
  Tensor patch_bias;       // [d] or empty (CLIP)
  Tensor prefix;           // [prefix, d]: [CLS] (then the distillation token)
  Tensor registers;        // [registers, d]
  Tensor position;         // [prefix + trained patches, d]
  Tensor norm, norm_bias;  // CLIP's pre_layrnorm, or empty
};

struct AudioWeights {
  Weight conv1, conv2;  // a Conv1d's [out, in, 3] as the GEMM's B [in · 3, out]: a frame's window in (in, tap) order
  Tensor conv1_bias, conv2_bias;
  Tensor position;  // [positions, d]
};

struct HeadWeights {
  Weight lm_head;      // [d, vocab], or null when tied to the token embedding
  Tensor logits_bias;  // [vocab] added to the logits (BART's final_logits_bias) or empty
  Weight pool;         // the pooler's [d, d] or null
  Tensor pool_bias;
  Tensor pool_norm, pool_norm_bias;            // CLIP's post_layernorm
  Weight projection;                           // CLIPModel's visual_projection [d, projection], or null
  Weight classifier, distillation_classifier;  // [d, labels] (Classifier)
  Tensor classifier_bias, distillation_classifier_bias;
};

struct ModelWeights {
  TokenWeights tokens, target_tokens;  // an encoder-decoder's share their table
  PatchWeights patches;
  AudioWeights audio;
  std::vector<Weights> stacks;
  HeadWeights head;
  std::string dtype;  // how the files store them: "f32", "f16", "bf16"
};

// The architecture table: whether config.json's architectures[0] is a model AttnScope
// runs, and its Spec (every field checked; an unknown or contradictory one is an Error).
// `generation`: generation_config.json, or null.
bool is_supported(const std::string& architecture);
std::string supported_architectures();  // every row's architecture, for an error message
Spec read_spec(const std::string& architecture, const Json& config, const Json* generation = nullptr);
// The weights in the checkpoint's own names, checked against the spec.
ModelWeights read_weights(const Spec& spec, const WeightStore& store);

// `files`: the small files beside the weights (generation_config.json, preprocessor_config.json).
std::unique_ptr<Model> make_model(const std::string& architecture, const Json& config, const ModelFiles& files,
                                  const WeightStore& weights, std::unique_ptr<Tokenizer> tokenizer);

}  // namespace transformer
}  // namespace attnscope
