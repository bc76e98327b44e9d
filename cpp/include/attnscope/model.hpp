// Whole transformer models: a front end that turns the input into rows (token embeddings, an image's patches), one
// stack of the transformer block or an encoder and a decoder, and the heads after them; every layer's and head's
// attention weights, as named map sets.
//
//   auto model = Model::load(files);                       // config.json, model.safetensors, the tokenizer's files
//   RunResult r = model->run(runtime, Input::text("The cat sat.")); // r.map("self").attentions [layers, heads, n, n]
//   RunResult p = model->run(runtime, Input::pair(SequenceInput::of_text(source), SequenceInput::of_text(target)));
//   // p.map("encoder"), p.map("decoder"), p.map("cross"): [layers, heads, n_target, n_source]
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnscope/attention.hpp"
#include "attnscope/explain.hpp"
#include "attnscope/files.hpp"
#include "attnscope/generation.hpp"
#include "attnscope/taps.hpp"
#include "attnscope/tokenizer.hpp"

namespace attnscope {

// What a model's first stack reads (its front end): text as token ids, an image as patches, or speech as Whisper's
// log-mel frames through two convolutions.
enum class InputKind { text, image, audio };

// One stack of the transformer block, as ModelInfo lists them.
struct StackInfo {
  std::string name;  // "encoder", "decoder", or for a model of one stack "self" (the map set it makes)
  std::int64_t layers = 0, heads = 0, kv_heads = 0, head_dim = 0, max_tokens = 0;
  bool causal = false;
  std::vector<std::int64_t> window;  // per layer: 0 for full attention, else the sliding window's width
};

// How a vision model's front end normalizes an image's pixels: v = (p · rescale − mean) / std per channel, after its
// resize and crop (the engine's; preprocessor_config.json's, else its processor class's defaults).
struct ImageNormalization {
  std::string processor;   // the image processor class whose rules apply, e.g. "ViTImageProcessor"
  bool from_file = false;  // read from preprocessor_config.json (else the class's defaults)
  double rescale = 1.0 / 255;
  std::vector<double> mean, std;  // per channel; 0 and 1 where the processor does not normalize
};

// How a speech model's front end hears: Whisper's feature extractor (preprocessor_config.json) and its encoder's
// frames. Audio is mono float32 at sampling_rate, read in windows of window_samples (30 s).
struct AudioInfo {
  std::int64_t sampling_rate = 0, mel_bins = 0, n_fft = 0, hop_length = 0;
  std::int64_t window_samples = 0;  // chunk_length · sampling_rate
  std::int64_t frames = 0;          // a window's log-mel frames (3,000): window_samples / hop_length
  std::int64_t positions = 0;       // the encoder's positions after the stride-2 convolution (1,500: 20 ms each)
};

struct ModelInfo {
  std::string name;          // e.g. "Universal Sentence Encoder lite"
  std::string architecture;  // config.json's architectures[0]
  InputKind input = InputKind::text;
  // The stacks: one, or an encoder then a decoder (which reads the encoder's output through cross-attention).
  std::vector<StackInfo> stacks;
  // The last stack's (the decoder's), as stacks.back() has them.
  std::int64_t layers = 0, heads = 0, d_model = 0, max_tokens = 0, vocab_size = 0;
  std::int64_t kv_heads = 0;          // key/value heads: fewer than heads under grouped-query attention
  std::int64_t head_dim = 0;          // d_k = d_v of every head
  bool causal = false;                // a token sees only the tokens before it (decoders)
  bool language_model = false;        // predicts the next token: predictions, logit lens, generate
  std::string weights_dtype = "f32";  // the embedding's type: "f32", "f16", "bf16", a GGUF's "q8_0", "q4_k", ...
  std::string weights;                // as the files name their type: a GGUF's file type (Q4_K_M), else F32, BF16, ...
  std::vector<std::int64_t> window;   // per layer: 0 for full attention, else the sliding window's width
  std::vector<std::int32_t> eos;      // language models: the ids that end a text (config.json's eos_token_id)
  // Encoder-decoders (BART, Marian, T5): a source runs through the encoder, a target through the decoder.
  bool encoder_decoder = false;
  std::int64_t encoder_layers = 0, encoder_heads = 0, encoder_max_tokens = 0;
  std::int32_t decoder_start = -1;  // the decoder's first token (decoder_start_token_id)
  std::int32_t forced_bos = -1;     // generation forces it after decoder_start (forced_bos_token_id), or -1
  // Their search settings, from generation_config.json (else config.json): num_beams (1: no beam search),
  // length_penalty, no_repeat_ngram_size, early_stopping, max_length (0 when neither file sets it) and the tokens
  // bad_words_ids bans one by one; eos is `eos`.
  BeamOptions search;
  // Vision transformers (ViT, DeiT, DINOv2, CLIP's vision tower): input is InputKind::image.
  bool vision = false;
  std::int64_t image_height = 0, image_width = 0;  // the image the position table was trained at
  std::int64_t patch_size = 0, channels = 0;
  std::int64_t prefix_tokens = 0;   // [CLS] (and DeiT's distillation token) before the patches
  std::int64_t registers = 0;       // DINOv2 with registers: tokens between the prefix and the patches
  std::vector<std::string> labels;  // a classifier's class names, by id (id2label); empty without one
  ImageNormalization normalization;
  // Speech models (Whisper): input is InputKind::audio; all zero otherwise.
  AudioInfo audio;
};

// An image as RGBA bytes, row by row from the top (ImageData's layout). Alpha is dropped, as Pillow's
// convert("RGB") drops it; orientation (EXIF) is the caller's, as a browser applies it when it decodes.
struct ImageInput {
  const std::uint8_t* rgba = nullptr;  // [height, width, 4]
  std::int64_t width = 0, height = 0;
};

// Mono samples at the model's sampling rate (AudioInfo), read during the run: one window's worth or less (the rest of
// the window is silence, as Whisper pads it).
struct AudioInput {
  const float* samples = nullptr;
  std::int64_t n = 0;
};

// One sequence a run reads, in one of six forms, as its factories make it.
struct SequenceInput {
  enum class Form { text, ids, image, pixels, audio, features };
  Form form = Form::ids;
  std::string text;               // normalized as the tokenizer's normalization() says
  std::vector<std::int32_t> ids;  // token ids, run as they are (each in the vocabulary)
  ImageInput image;               // the caller's bytes, read during the run
  Tensor pixels;                  // a vision model's input [channels, H, W], preprocessed elsewhere
  AudioInput audio;               // the caller's samples, read during the run
  Tensor features;                // a speech model's log-mel input [mel_bins, frames], computed elsewhere

  static SequenceInput of_text(std::string_view text);
  static SequenceInput of_ids(std::vector<std::int32_t> ids);
  static SequenceInput of_image(const ImageInput& image);
  static SequenceInput of_pixels(Tensor pixels);
  static SequenceInput of_audio(const AudioInput& audio);
  static SequenceInput of_features(Tensor features);
};

// What a run reads: its first stack's sequence (a one-stack model's text or image; an encoder-decoder's source), and
// an encoder-decoder's target, which its decoder reads teacher-forced. A target text is read as the decoder reads it
// while writing it: the decoder's start token, then its tokens without the end-of-text token their encoding closes
// with; target ids run as they are.
struct Input {
  SequenceInput sequence;
  std::optional<SequenceInput> target;

  static Input text(std::string_view text) { return {SequenceInput::of_text(text), std::nullopt}; }
  static Input ids(std::vector<std::int32_t> ids) { return {SequenceInput::of_ids(std::move(ids)), std::nullopt}; }
  static Input image(const ImageInput& image) { return {SequenceInput::of_image(image), std::nullopt}; }
  static Input pixels(Tensor pixels) { return {SequenceInput::of_pixels(std::move(pixels)), std::nullopt}; }
  static Input pair(SequenceInput source, SequenceInput target) { return {std::move(source), std::move(target)}; }
};

// Rollout or attention flow through every layer of a self-attention map set (analysis.hpp), in the same run.
struct AcrossLayers {
  bool residual = true;            // Â = (A + I) / 2, as Abnar & Zuidema
  std::vector<std::int64_t> rows;  // flow: the output tokens to compute it for (every one when empty)
  std::string set;                 // the self-attention map set to compute it for (every one when empty)
};

struct RunOptions {
  bool return_projections = false;  // keep every layer's per-head q, k, v and the matrix they multiply (StackRun)
  bool token_norms = false;         // each token's hidden-state norm at every layer (StackRun::token_norms)
  bool head_summaries = false;      // every returned head's summary (MapSet::head_summaries), self-attention only
  std::optional<AcrossLayers> rollout, flow;  // self-attention sets over every layer: MapSet::rollout, flow
  // One entry per token of the first stack's sequence, 1 = real, 0 = padding: padding keys are hidden from every
  // query in every layer (with causality too, in decoders). Empty: all real.
  std::vector<std::uint8_t> attention_mask;
  // Heads (layer, head) of the last stack whose output is zeroed before the output projection: head ablation.
  std::vector<std::pair<std::int64_t, std::int64_t>> ablate_heads;
  // Language models only:
  std::int64_t top_k = 0;      // > 0: the top_k most likely next tokens after every position
  bool logit_lens = false;     // every layer's most likely next token at every position
  bool return_logits = false;  // the next-token logits at every position [n, vocab]
  // Decoders: reuse what the previous run computed for the tokens this one starts with (its keys,
  // values and rows), when both ask for the same outputs without padding, ablation, projections or a tap.
  bool reuse_prefix = true;
  // Models of one stack: the layers whose maps the run returns, in this order (each once): the "self" set is then
  // [map_layers.size(), heads, n, n]. Absent: every layer. Only these layers' maps are computed (attention runs
  // fused in the others); decoders compute a later run's other layers from the kept queries and keys.
  std::optional<std::vector<std::int64_t>> map_layers;
  // Sees every layer of every stack as it is computed (taps.hpp). Not kept past the run.
  LayerTap* tap = nullptr;
  // When set, a run of one stack that returns every layer's maps calls it on the calling thread as soon as layer
  // `layer`'s maps hold their final values in `attentions` (the "self" set's, shaped already), while the run goes on:
  // the bindings copy them out to JavaScript beside the next layers' work. A run that keeps rows from the previous
  // one, or returns some layers only, never calls it. Not kept past the run.
  std::function<void(const Tensor& attentions, std::int64_t layer)> maps_ready;
};

// One sequence a run went over: the tokens of its maps' rows or columns.
struct Sequence {
  std::string name;                   // "text", "image", "source" or "target"
  std::vector<std::int32_t> ids;      // the tokens' ids (empty for an image)
  std::vector<std::string> tokens;    // special tokens included; an image's "[CLS]", "register 1", "patch 3,5" …
  std::vector<std::uint8_t> special;  // 1 where the token is special ([CLS], [SEP], an image's prefix, registers)
  std::int64_t total_tokens = 0;      // before truncation to the stack's positions
  bool truncated = false;
  std::int64_t rows = 0, cols = 0;  // an image's patch grid
  // Audio: the seconds of sound the window held (the positions after them hear Whisper's padding).
  double seconds = 0;
};

// One set of attention maps, with the sequences of its rows (queries) and columns (keys).
struct MapSet {
  std::string name;                      // "self" (a model of one stack), "encoder", "decoder" or "cross"
  std::size_t queries = 0, keys = 0;     // indices into RunResult::sequences
  bool causal = false;                   // a query sees the keys up to its own position
  Tensor attentions;                     // [map_layers.size(), heads, n_queries, n_keys]
  std::vector<std::int64_t> map_layers;  // the stack's layers `attentions` holds, in its order
  std::vector<std::int32_t> kv_head;     // [heads]: the key/value head each query head reads
  Tensor head_summaries;                 // [map_layers.size(), heads, kHeadMeasures] (analysis.hpp), with the option
  Tensor rollout;                        // [n, n], with the option: the last layer's rollout
  Tensor flow;                           // [rows, n], with the option
  bool cross() const { return queries != keys; }
};

// The most likely next tokens after each position, best first: [n, k] each.
struct Predictions {
  std::int64_t k = 0;
  std::vector<std::int32_t> ids;
  std::vector<float> probs;
};

// What each layer would predict if the model stopped there: the final norm and the language
// model head applied to every layer's output (nostalgebraist, 2020). [layers, n] each.
struct LogitLens {
  std::vector<std::int32_t> ids;
  std::vector<float> probs;
};

// What one stack computed, besides its maps.
struct StackRun {
  std::string name;          // as StackInfo names it
  std::size_t sequence = 0;  // the RunResult::sequences entry it ran on
  Tensor hidden;             // its output [n, d_model] (after its final norm where it has one)
  // With return_projections, per layer: X [n, d_in] (what the projections multiply), q [heads, n, d_k],
  // k [kv_heads, n, d_k], v [kv_heads, n, d_v].
  std::vector<Tensor> inputs, q, k, v;
  Tensor token_norms;  // [layers + 1, n], with token_norms: each row's L2 norm at the input and after each layer
};

struct ImageLabel {
  std::int32_t id = 0;
  std::string label;
  float probability = 0.0f;
};

// A run: its sequences, its map sets, what each stack computed, and what the heads after the last stack made of it.
struct RunResult {
  std::vector<Sequence> sequences;
  std::vector<MapSet> maps;
  std::vector<StackRun> stacks;
  // Encoders with a pooler: the pooled embedding [d] (BERT's tanh pooler, USE-lite's; ViT's), else empty.
  Tensor embedding;
  // Language models, on request:
  Predictions predictions;  // top_k
  LogitLens logit_lens;
  Tensor logits;                   // [n, vocab]
  std::int64_t reused_tokens = 0;  // decoders: leading tokens taken from the previous run, not recomputed
  // Vision models: the model's input [channels, H, W] after resize, crop and normalization; CLIP's image embedding;
  // a classifier's logits [labels] and its five most likely labels, best first.
  Tensor pixels, image_embedding, label_logits;
  std::vector<ImageLabel> labels;
  // Speech models: the log-mel features the encoder read [mel_bins, frames].
  Tensor features;

  // The sequence or map set of this name, or an Error naming the ones there are.
  const Sequence& sequence(std::string_view name) const;
  const MapSet& map(std::string_view name) const;
  // The last stack's output: the one the heads read.
  const Tensor& hidden() const { return stacks.back().hidden; }
};

class Model {
 public:
  virtual ~Model() = default;

  // Reads config.json and builds the architecture it names. Throws Error naming
  // the file, tensor or field that is missing or wrong, or the unsupported architecture.
  // Weight files (*.safetensors) may instead be in `large`, read tensor by tensor.
  static std::unique_ptr<Model> load(const ModelFiles& files, const LargeFiles& large = {});
  // The heap the weights of a GGUF (its file, or a split one's files, by name) take once loaded, from their headers
  // alone: what a load of them needs, known before any tensor is read. Throws as load does for a header it cannot read.
  static std::uint64_t gguf_weight_bytes(const LargeFiles& ggufs);

  const ModelInfo& info() const { return info_; }
  // The tokenizer read from the model's files, or nullptr when they hold none
  // AttnScope reads (such a model runs on ids only).
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }

  // The one way in: the front end reads the input (a text is tokenized and truncated to the stack's positions, ids
  // are checked; an image is resized, cropped and normalized as the model's preprocessor_config.json says), the
  // stacks run, and the heads read the last one. An input of a kind the model does not read is an Error saying what
  // it reads.
  virtual RunResult run(const Runtime& runtime, const Input& input, const RunOptions& options = {}) const = 0;

  // Starts generating (language models and encoder-decoders): after the prompt `input.sequence`, run at once, or for
  // an encoder-decoder, a target for the source `input.sequence` (the encoder runs once, here) from the decoder's
  // first tokens `input.target` (its start token, and any forced after it). `seed` seeds the draws; `maps` says what
  // it keeps of the maps. A prompt that extends the last run's tokens starts from that run's keys and values.
  // `encoder_maps`: with GenerationMaps::all, the encoder layers whose maps are kept (absent: every layer's; a
  // speech encoder's 1,500 × 1,500 maps are 9 MB a head).
  virtual std::unique_ptr<Generation> generate(
      const Runtime& runtime, const Input& input, std::uint64_t seed, GenerationMaps maps = GenerationMaps::all,
      const std::optional<std::vector<std::int64_t>>& encoder_maps = std::nullopt) const = 0;

  // Layer `layer`'s attention weights of the last stack, x·W layout: wq, wk [d_in, heads·d_k], wv
  // [d_in, heads·d_v], wo [heads·d_v, d_out] and their biases. Views into the model: valid while it lives.
  virtual MultiHeadParams attention_weights(std::int64_t layer) const = 0;

  // One score of a run on `input` with `options` (their attention mask and ablated heads; the rest is ignored) taken
  // apart by its sources (explain.hpp). It runs again what the two tokens need: a decoder whose last run holds their
  // prefix replays the two tokens against that run's keys and values; another model runs the input again with a tap
  // that follows the two tokens.
  virtual ScoreExplanation explain_score(const Runtime& runtime, const Input& input, const RunOptions& options,
                                         const ScoreQuery& query) const = 0;
  // Language models: one next-token logit of such a run taken apart by its sources, as explain_score does.
  virtual LogitExplanation explain_logit(const Runtime& runtime, const Input& input, const RunOptions& options,
                                         const LogitQuery& query) const = 0;

  // Language models: the next-token logits [rows, vocab] of final-normed hidden rows [rows, d_model], as a
  // run's hidden() holds them (soft-capped where the model caps): one position's whole distribution without
  // asking a run for every position's.
  virtual Tensor logits(const Runtime& runtime, const Tensor& hidden) const = 0;

  // Encoder-decoders: a target text as the decoder's input ids (Input's rule).
  std::vector<std::int32_t> decoder_input(std::string_view target) const;

 protected:
  ModelInfo info_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace attnscope
