// Whole transformer models: tokenizer, embeddings, blocks, every layer's and
// head's attention weights.
//
//   auto model = Model::load(files);          // file name → bytes: config.json, model.safetensors, vocab...
//   ModelRun r = model->run(runtime, text);   // r.attentions [layers, heads, n, n]
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnscope/attention.hpp"
#include "attnscope/files.hpp"
#include "attnscope/tokenizer.hpp"

namespace attnscope {

// Beam search as transformers' BeamSearchScorer runs it (its num_beams, length_penalty, no_repeat_ngram_size,
// early_stopping, max_length): each step extends every running beam by every token, scored by the sum of its tokens'
// log-probabilities, and keeps the `beams` best; a candidate ending in an end-of-text token among those becomes a
// finished hypothesis, scored sum / length^length_penalty (its length counts the tokens it started from, not the
// end token). It stops when `beams` hypotheses are finished and no running beam can beat the worst of them (or, with
// early_stopping, as soon as there are `beams`), or at max_length, where the running beams join the hypotheses.
struct BeamOptions {
  std::int64_t beams = 1;            // 1 ..= kMaxBeams
  float length_penalty = 1.0f;       // > 0 favours longer hypotheses
  std::int64_t no_repeat_ngram = 0;  // > 0: no n-gram of this size twice in a sequence
  bool early_stopping = false;
  std::int64_t max_length = 0;       // the sequence's whole length at most, start tokens included; 0: the model's
  std::vector<std::int32_t> eos;     // tokens that finish a hypothesis
  std::vector<std::int32_t> banned;  // tokens never generated (bad_words_ids of one token, such as Marian's <pad>)
};
inline constexpr std::int64_t kMaxBeams = 8;

struct ModelInfo {
  std::string name;          // e.g. "Universal Sentence Encoder lite"
  std::string architecture;  // config.json's architectures[0]
  std::int64_t layers = 0, heads = 0, d_model = 0, max_tokens = 0, vocab_size = 0;
  std::int64_t kv_heads = 0;          // key/value heads: fewer than heads under grouped-query attention
  std::int64_t head_dim = 0;          // d_k = d_v of every head
  bool causal = false;                // a token sees only the tokens before it (decoders)
  bool language_model = false;        // predicts the next token: predictions, logit lens, generate
  std::string weights_dtype = "f32";  // as the files store the weights: "f32", "f16" or "bf16"
  std::vector<std::int64_t> window;   // per layer: 0 for full attention, else the sliding window's width
  std::vector<std::int32_t> eos;      // language models: the ids that end a text (config.json's eos_token_id)
  // Encoder-decoders (BART): a source runs through the encoder, a target through the decoder, which attends to the
  // encoder's output. layers, heads and causal then describe the decoder.
  bool encoder_decoder = false;
  std::int64_t encoder_layers = 0, encoder_heads = 0, encoder_max_tokens = 0;
  std::int32_t decoder_start = -1;  // the decoder's first token (decoder_start_token_id)
  std::int32_t forced_bos = -1;     // generation forces it after decoder_start (forced_bos_token_id), or -1
  // Their search settings, from generation_config.json (else config.json): num_beams (1: no beam search),
  // length_penalty, no_repeat_ngram_size, early_stopping, max_length (0 when neither file sets it) and the tokens
  // bad_words_ids bans one by one; eos is `eos`.
  BeamOptions search;
  // Vision transformers (ViT, DeiT, DINOv2, CLIP's vision tower): they run on images (Model::run_image).
  bool vision = false;
  std::int64_t image_height = 0, image_width = 0;  // the image the position table was trained at
  std::int64_t patch_size = 0, channels = 0;
  std::int64_t prefix_tokens = 0;   // [CLS] (and DeiT's distillation token) before the patches
  std::int64_t registers = 0;       // DINOv2 with registers: tokens between the prefix and the patches
  std::vector<std::string> labels;  // a classifier's class names, by id (id2label); empty without one
};

struct RunOptions {
  bool return_projections = false;  // keep every layer's per-head q, k, v
  // One entry per token, 1 = real, 0 = padding: padding keys are hidden from every
  // query in every layer (with causality too, in decoders). Empty: all real.
  std::vector<std::uint8_t> attention_mask;
  // Heads (layer, head) whose output is zeroed before the output projection: head ablation.
  std::vector<std::pair<std::int64_t, std::int64_t>> ablate_heads;
  // Language models only:
  std::int64_t top_k = 0;      // > 0: the top_k most likely next tokens after every position
  bool logit_lens = false;     // every layer's most likely next token at every position
  bool return_logits = false;  // the next-token logits at every position [n, vocab]
  // Decoders: reuse what the previous run computed for the tokens this one starts with (its keys,
  // values and rows), when both ask for the same outputs without padding, ablation or projections.
  bool reuse_prefix = true;
  // The layers whose maps the run returns, in this order (each once): attentions is then
  // [map_layers.size(), heads, n, n]. Absent: every layer. Decoders compute only these (attention runs fused in
  // the others, and a later run on the same tokens computes another layer's maps from the kept queries and keys),
  // so long inputs fit where every layer's maps would not.
  std::optional<std::vector<std::int64_t>> map_layers;
  // When set, a run that returns every layer's maps calls it on the calling thread as soon as layer `layer`'s
  // maps hold their final values in `attentions` (the run's, shaped already), while the run goes on: the
  // bindings copy them out to JavaScript beside the next layers' work. A run that keeps rows from the previous
  // one, or returns some layers only, never calls it. Not kept past the run.
  std::function<void(const Tensor& attentions, std::int64_t layer)> maps_ready;
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

struct ModelRun {
  std::vector<std::int32_t> ids;
  std::vector<std::string> tokens;    // special tokens included
  std::vector<std::uint8_t> special;  // 1 where the token is a special token ([CLS], [SEP], ...)
  std::int64_t total_tokens = 0;      // before truncation to max_tokens
  bool truncated = false;
  Tensor attentions;                     // [layers, heads, n, n]: the layers map_layers names, in its order
  std::vector<std::int64_t> map_layers;  // which layers attentions holds (every one unless the options chose)
  Tensor hidden;                         // last hidden state [n, d_model]
  Tensor embedding;                      // pooled sentence embedding [d] where the model defines one, else empty
  std::vector<Tensor> q, k, v;           // per layer: [heads, n, d_k], [heads, n, d_k], [heads, n, d_v]
  std::vector<Tensor> inputs;            // per layer: X [n, d_in], the matrix the projections multiply
  std::vector<std::int32_t> kv_head;     // [heads]: the key/value head each query head reads
  Predictions predictions;               // on request (top_k)
  LogitLens logit_lens;                  // on request
  Tensor logits;                         // [n, vocab] on request
  std::int64_t reused_tokens = 0;        // decoders: leading tokens taken from the previous run, not recomputed
};

// An encoder-decoder's run on a source and a target (teacher-forced: the target's tokens are the decoder's input).
struct PairRun {
  ModelRun source;  // the encoder's: ids, tokens, attentions [encoder layers, heads, n_s, n_s], hidden [n_s, d]
  ModelRun target;  // the decoder's: attentions [layers, heads, n_t, n_t] (causal), hidden, predictions, logits
  Tensor cross;     // [layers, heads, n_t, n_s]: queries are target tokens, keys source tokens
};

// An image as RGBA bytes, row by row from the top (ImageData's layout). Alpha is dropped, as Pillow's
// convert("RGB") drops it; orientation (EXIF) is the caller's, as a browser applies it when it decodes.
struct ImageInput {
  const std::uint8_t* rgba = nullptr;  // [height, width, 4]
  std::int64_t width = 0, height = 0;
};

struct ImageLabel {
  std::int32_t id = 0;
  std::string label;
  float probability = 0.0f;
};

// A vision transformer's run on an image.
struct ImageRun {
  // tokens: "[CLS]", "distillation", "register 1" …, then "patch r,c" row by row of the grid; special: 1 but for
  // patches; attentions [layers, heads, n, n] (the layers map_layers names); hidden: the last hidden state [n, d]
  // as Hugging Face returns it (after the final LayerNorm, which CLIP has not); ids empty.
  ModelRun run;
  std::int64_t rows = 0, cols = 0;  // the patch grid
  Tensor pixels;                    // the model's input [channels, H, W], after resize, crop and normalization
  Tensor token_norms;               // [layers + 1, n]: each token's hidden-state norm, at the input and per layer
  Tensor pooled;                    // the pooler's output [d] (ViT's tanh pooler, CLIP's post_layernorm), or empty
  Tensor image_embedding;           // CLIP: the pooled output projected [projection], or empty
  Tensor logits;                    // classifiers: [labels]
  std::vector<ImageLabel> labels;   // classifiers: the five most likely, best first
};

// How generate() picks each next token, as transformers' sampling does: logits / temperature,
// then top-k (ties with the k-th kept), then top-p (the smallest set holding top_p of the
// probability), then a draw. temperature 0 takes the most likely token.
struct SamplingOptions {
  float temperature = 1.0f;  // ≥ 0
  std::int64_t top_k = 0;    // 0: no limit
  float top_p = 1.0f;        // in (0, 1]
  // Applied to the logits first, as transformers' logits processors: no n-gram of this size twice (0: off), and
  // tokens never drawn.
  std::int64_t no_repeat_ngram = 0;
  std::vector<std::int32_t> banned;
};

// What a generation keeps of the attention maps: none (attention runs fused, for text alone), each new token's
// rows (last_rows(), then let go: long generations whose whole maps would not fit), or every row of every map
// (attentions(): the lower triangle of every map, kept).
enum class GenerationMaps { none, rows, all };

// A language model's running sequence, with its keys and values kept (the KV cache): each
// appended token costs one row per head, not a rerun of the sequence.
class Generation {
 public:
  virtual ~Generation() = default;
  // Draws the next token from the distribution after the last one (checking `sampling`),
  // appends it and returns it. Throws when the sequence is at the model's max_tokens.
  virtual std::int32_t step(const Runtime& runtime, const SamplingOptions& sampling) = 0;
  // Appends a given token (in the vocabulary).
  virtual void append(const Runtime& runtime, std::int32_t id) = 0;
  // The next-token distribution after the last token: softmax of the logits [vocab].
  virtual std::vector<float> next_probabilities(const Runtime& runtime) const = 0;
  virtual const std::vector<std::int32_t>& ids() const = 0;
  // The newest token's row of every map: [layers, heads, n] (empty with GenerationMaps::none).
  virtual Tensor last_rows() const = 0;
  // Every map of the whole sequence: [layers, heads, n, n] (empty unless GenerationMaps::all).
  virtual Tensor attentions() const = 0;
  // Encoder-decoders: the newest token's row of every cross-attention map, [layers, heads, source tokens] (empty
  // with GenerationMaps::none, and for one-stack models).
  virtual Tensor last_cross_rows() const { return Tensor(); }
  // The prompt's leading tokens taken from the model's last run (its keys and values) rather than run again.
  virtual std::int64_t reused_tokens() const { return 0; }
  // Encoder-decoders: every cross-attention map of the whole sequence, [layers, heads, n, source tokens] (empty
  // unless GenerationMaps::all).
  virtual Tensor cross_attentions() const { return Tensor(); }
  // Encoder-decoders: the source as the encoder ran it once (ids and tokens after truncation; with
  // GenerationMaps::all its maps too); null for one-stack models.
  virtual const ModelRun* source() const { return nullptr; }
  // The logits after the last token [vocab] (computed on `runtime`'s threads if a greedy step left them for later).
  virtual const std::vector<float>& next_logits(const Runtime& runtime) const = 0;
  // An independent copy of this sequence, its cache included: a beam that branches.
  virtual std::unique_ptr<Generation> fork() const = 0;
};

class BeamSearch {
 public:
  // `start`: the sequence so far (its start tokens), run without maps; it becomes the first beam.
  BeamSearch(std::unique_ptr<Generation> start, BeamOptions options, std::int64_t vocab, std::int64_t max_tokens);
  ~BeamSearch();
  // One more token on every running beam; false once the search is over.
  bool step(const Runtime& runtime);
  bool done() const { return done_; }
  // The best finished hypothesis (with its end token), or, before the end, the leading running beam.
  std::vector<std::int32_t> best() const;
  // Whether the winner ended with an end-of-text token (else it reached max_length).
  bool ended() const;

 private:
  struct Hypothesis {
    std::vector<std::int32_t> ids;
    double score;
  };
  void finish(std::vector<std::int32_t> ids, double sum, std::size_t length);
  bool is_over(double best_sum, std::size_t length) const;

  BeamOptions o_;
  std::int64_t vocab_, max_length_;
  std::vector<std::unique_ptr<Generation>> beams_;
  std::vector<double> sums_;  // each running beam's sum of log-probabilities
  std::vector<Hypothesis> finished_;
  bool done_ = false;
};

// The [n, n] keep mask (row-major) hiding the padding keys of `options.attention_mask`
// from every query; empty when there is no mask. Throws if the mask is too short.
std::vector<std::uint8_t> padding_mask(const RunOptions& options, std::size_t n);

// Zeroes the columns of the heads of layer `layer` that `options.ablate_heads` names, in
// the concatenated head outputs [n, heads·d_v]; true if there were any.
bool ablate_heads(const RunOptions& options, std::int64_t layer, std::int64_t heads, Tensor& concatenated);

class Model {
 public:
  virtual ~Model() = default;

  // Reads config.json and builds the architecture it names. Throws Error naming
  // the file, tensor or field that is missing or wrong, or the unsupported architecture.
  // Weight files (*.safetensors) may instead be in `large`, read tensor by tensor.
  static std::unique_ptr<Model> load(const ModelFiles& files, const LargeFiles& large = {});

  const ModelInfo& info() const { return info_; }
  // The tokenizer read from the model's files, or nullptr when they hold none
  // AttnScope reads (such a model runs on ids only).
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }

  // Tokenizes (text already normalized as tokenizer()->normalization() says),
  // truncates to max_tokens, and runs.
  ModelRun run(const Runtime& runtime, std::string_view text, const RunOptions& options = {}) const;
  // Layer `layer`'s attention weights, x·W layout: wq, wk [d_in, heads·d_k], wv [d_in, heads·d_v],
  // wo [heads·d_v, d_out] and their biases. Views into the model: valid while it lives.
  virtual MultiHeadParams attention_weights(std::int64_t layer) const = 0;

  // Runs on token ids, truncated to max_tokens; each id must be in the vocabulary.
  ModelRun run_ids(const Runtime& runtime, std::vector<std::int32_t> ids, const RunOptions& options = {}) const;

  // Encoder-decoders: the source through the encoder (truncated to its positions, visibly), the target through the
  // decoder. Ids must be in the vocabulary; a target longer than the decoder's positions is an Error. The options
  // apply to the decoder (top_k, return_logits, ablate_heads) and, for attention_mask, to the source.
  virtual PairRun run_pair(const Runtime& runtime, std::vector<std::int32_t> source, std::vector<std::int32_t> target,
                           const RunOptions& options = {}) const;
  // The same from texts (normalized as tokenizer()->normalization() says): the source as the tokenizer encodes it
  // (BART: <s> … </s>), the target as the decoder reads it while learning to write it: the decoder's start token,
  // then the target's tokens without the end-of-text token its encoding closes with.
  PairRun run_pair(const Runtime& runtime, std::string_view source, std::string_view target,
                   const RunOptions& options = {}) const;
  // A target text as the decoder's input ids (above).
  std::vector<std::int32_t> decoder_input(std::string_view target) const;

  // Starts generating after `ids` (the prompt, run at once); `seed` seeds the draws. Language
  // models only; `ids` must be in the vocabulary and within max_tokens. `maps` says what it keeps of the maps.
  // A prompt that extends the last run's tokens starts from that run's keys and values (decoders).
  virtual std::unique_ptr<Generation> generate(const Runtime& runtime, const std::vector<std::int32_t>& ids,
                                               std::uint64_t seed, GenerationMaps maps = GenerationMaps::all) const;
  // Encoder-decoders: generates a target for `source` (truncated to the encoder's positions; the encoder runs once,
  // here). The decoder starts from `target`: its start token, and any tokens forced after it. `maps` says what it
  // keeps of the decoder's self-attention; each token's cross-attention rows come with them.
  virtual std::unique_ptr<Generation> generate_pair(const Runtime& runtime, std::vector<std::int32_t> source,
                                                    const std::vector<std::int32_t>& target, std::uint64_t seed,
                                                    GenerationMaps maps = GenerationMaps::rows) const;

  // Vision transformers: an image resized, cropped and normalized as the model's preprocessor_config.json says
  // (Pillow's resampling), cut into patches and run. Other models: an Error.
  virtual ImageRun run_image(const Runtime& runtime, const ImageInput& image, const RunOptions& options = {}) const;
  // The same from the model's input [channels, H, W], as ImageRun::pixels holds it (preprocessed elsewhere).
  virtual ImageRun run_pixels(const Runtime& runtime, Tensor pixels, const RunOptions& options = {}) const;

  // Language models: the next-token logits [rows, vocab] of final-normed hidden rows [rows, d_model], as a
  // run's `hidden` holds them (soft-capped where the model caps): one position's whole distribution without
  // asking a run for every position's.
  virtual Tensor logits(const Runtime& runtime, const Tensor& hidden) const;

 protected:
  // Checks what `options` name against the model, flags special tokens, and runs forward().
  void finish_and_forward(const Runtime& runtime, ModelRun& r, const RunOptions& options) const;
  // A vision model's Error for text or token ids, before they are read.
  void refuse_text() const;
  // Checks the layers and heads `options` name (ablate_heads, map_layers) against the model's.
  void check_layers(const RunOptions& options) const;
  // r.attentions [layers, heads, n, n] → the layers options.map_layers names, in its order (all when absent).
  void keep_layers(ModelRun& r, const RunOptions& options) const;
  // Token ids checked and truncated as run_ids does, with their tokens; `what` names them in errors.
  ModelRun prepare_ids(std::vector<std::int32_t> ids, std::int64_t max_tokens, const char* what) const;
  // Fills attentions, hidden, embedding and projections for the tokens in `r`.
  virtual void forward(const Runtime& runtime, ModelRun& r, const RunOptions& options) const = 0;
  // Whether forward() computes only the layers options.map_layers names (and sets r.map_layers); else it
  // computes every layer's maps and finish_and_forward() keeps the ones asked for.
  virtual bool selects_map_layers() const { return false; }

  ModelInfo info_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace attnscope
