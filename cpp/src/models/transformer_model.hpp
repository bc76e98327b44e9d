// The one Model: a front end, one stack or an encoder and a decoder (the topology), and the heads after the last
// stack, each configured by the row that read the model's config.json (spec.hpp). A run reads its input with the
// front end, runs the stacks, and returns each stack's map sets by name: "self" for a model of one stack;
// "encoder", "decoder" and "cross" for an encoder-decoder.
#pragma once

#include <memory>
#include <vector>

#include "models/front_ends.hpp"
#include "models/heads.hpp"
#include "models/sources.hpp"
#include "models/spec.hpp"
#include "models/stack.hpp"

namespace attnscope::transformer {

// What a run of a causal stack on tokens leaves for the next one (transformer_run.cpp): its keys and values, the
// maps' rows, the per-token outputs.
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

// What preprocessor_config.json says, or its processor class's defaults where there is no such file: a vision model's
// image processor, a speech model's feature extractor.
struct Preprocessor {
  vision::Preprocess image;
  audio::Features audio;
  bool from_file = false;
};

class TransformerModel final : public Model {
 public:
  TransformerModel(Spec spec, ModelWeights weights, std::unique_ptr<Tokenizer> tokenizer, Preprocessor preprocessor);

  RunResult run(const Runtime& runtime, const Input& input, const RunOptions& options) const override;
  std::unique_ptr<Generation> generate(const Runtime& runtime, const Input& input, std::uint64_t seed,
                                       GenerationMaps maps,
                                       const std::optional<std::vector<std::int64_t>>& encoder_maps) const override;
  MultiHeadParams attention_weights(std::int64_t layer) const override;
  Tensor logits(const Runtime& runtime, const Tensor& hidden) const override;
  ScoreExplanation explain_score(const Runtime& runtime, const Input& input, const RunOptions& options,
                                 const ScoreQuery& query) const override;
  LogitExplanation explain_logit(const Runtime& runtime, const Input& input, const RunOptions& options,
                                 const LogitQuery& query) const override;

  const Spec& spec() const { return spec_; }
  const FrontEnd& front_end() const { return *front_; }
  // The token front end the last stack reads: a decoder's (an encoder-decoder's target), or the only one.
  const TokenEmbedding& tokens() const;
  const Stack& stack(std::size_t i) const { return stacks_[i]; }
  const Stack& last() const { return stacks_.back(); }
  const Heads& heads() const { return heads_; }

  // How many leading tokens of `ids` (all but the last, whose logits a generation needs) the last run holds: their
  // keys and values go into the empty `cache`, and with `rows`, each token's rows of every map ([layers, heads,
  // i + 1] for token i) into `rows`, when that run kept them. 0 when it holds none of them. It reads the last run
  // as run() writes it: like run(), not to be called from two threads at once.
  std::int64_t resume(const std::vector<std::int32_t>& ids, Cache& cache, std::vector<std::vector<float>>* rows) const;
  // The RunResult of an encoder-decoder's encoder on `source` for a generation: its sequence "source" and, when
  // `map_layers` names any, its map set "encoder" of those layers; the memory each decoder layer's cross-attention
  // reads.
  std::pair<std::shared_ptr<const RunResult>, std::shared_ptr<const Memory>> encode(
      const Runtime& rt, const SequenceInput& source, const std::vector<std::int64_t>& map_layers) const;

 private:
  // The run of a model of one stack: "self" (transformer_run.cpp). A causal stack on tokens keeps what the next run
  // can reuse.
  void run_one(const Runtime& rt, Reading reading, const RunOptions& o, RunResult& r) const;
  // The run of an encoder-decoder: the source through the encoder, the target through the decoder.
  void run_pair(const Runtime& rt, const Input& input, const RunOptions& o, RunResult& r) const;
  // Each stack's sequence read by its front end, named as the run names it.
  Reading read(const SequenceInput& input, std::size_t stack) const;
  // The options checked against the model: layers and heads they name, options its kind has no use for.
  void check(const RunOptions& o) const;
  // Summaries, rollout and flow of the self-attention sets, where the options ask.
  void analyse(const RunOptions& o, RunResult& r) const;
  // Each stack's sequence of the input read, checked as run() checks it (explain.cpp).
  std::vector<Reading> read_all(const Input& input, const RunOptions& o, const char* op) const;
  // The stream of token `position` of stack `stack` as its front end starts it.
  Stream start(const Runtime& rt, const std::vector<Reading>& readings, std::int64_t stack,
               std::int64_t position) const;
  // Runs what the trackers need to reach their stops: a decoder whose last run holds each tracked token's prefix
  // replays that token alone against the run's keys and values; any other run is run again whole, with the tap.
  void follow(const Runtime& rt, const Input& input, const RunOptions& o, std::vector<Reading> readings,
              const std::vector<StreamTracker*>& trackers) const;
  // The language model's outputs over the last stack's final-normed rows: predictions and logits where asked.
  void predict(const Runtime& rt, const Matrix& hidden, const RunOptions& o, RunResult& r) const;
  // What a run's logits take of its budget at `rows` positions: [rows, vocab] where it keeps them, one block for the
  // top k or the lens alone, else nothing.
  double logit_bytes(std::int64_t rows, const RunOptions& o) const;

  Spec spec_;
  std::unique_ptr<FrontEnd> front_;                // the first stack's
  std::unique_ptr<TokenEmbedding> target_tokens_;  // an encoder-decoder's decoder's
  std::vector<Stack> stacks_;
  Heads heads_;
  mutable std::unique_ptr<Previous> previous_;  // the last run, for the next to extend
};

// The taps a run's own options make (run_taps.cpp): projections, token norms and the logit lens, each written as a
// tap on the block like any caller's, and the caller's own, chained.
class RunTaps final : public LayerTap {
 public:
  // `lens`: [layers, n] to fill for the last stack (null: no lens); `heads`: what reads the last stack.
  RunTaps(const Runtime& rt, const RunOptions& o, RunResult& r, const Heads& heads, const Stack& last,
          std::int64_t last_index, LogitLens* lens);
  // Whether the options ask for any tap at all.
  bool any() const { return projections_ || norms_ || lens_ || user_; }
  void layer(const LayerView& view) override;
  void end(const StackEnd& end) override;
  bool scales() const override { return user_ && user_->scales(); }

 private:
  const Runtime& rt_;
  RunResult& r_;
  const Heads& heads_;
  const Stack& last_;
  std::int64_t last_index_;
  bool projections_, norms_;
  LogitLens* lens_;
  LayerTap* user_;
};

// The TransformerModel behind a Model that make_model made (for tests), or null.
const TransformerModel* transformer_of(const Model& model);

// Plain loops in float64, written as the formulas read (decoder_reference.cpp): the yardstick for the decoders.
// Attention maps [layers, heads, n, n] and logits [n, vocab].
struct ReferenceRun {
  std::vector<double> attentions, logits;
};
// What each layer wrote, per token, for the reference's decompositions: the norms' scales, each head's output
// through its rows of W_O (before a sandwich's post-norm), the MLP's output as added, and q, k after RoPE.
struct ReferenceParts {
  struct Row {
    double attn_scale = 0, attn_out_scale = 0;
    std::vector<double> q_scales, k_scales, q, k, mlp;
    std::vector<std::vector<double>> heads;
  };
  std::vector<std::vector<Row>> layers;  // [layers][tokens]
  std::vector<double> final_scales;
  std::vector<std::vector<double>> final_hidden;  // [tokens][d]: after the final norm
};
ReferenceRun reference_forward(const TransformerModel& model, const std::vector<std::int32_t>& ids,
                               ReferenceParts* parts = nullptr);
// A score (query sources × key sources) or a logit (query_sources, one term each; score the logit, before any
// soft-cap) taken apart by sources in float64, in the order explain_score and explain_logit give them.
struct ReferenceExplanation {
  std::vector<Source> query_sources, key_sources;
  std::vector<double> terms;
  double score = 0;
};
ReferenceExplanation reference_explain_score(const TransformerModel& model, const std::vector<std::int32_t>& ids,
                                             std::int64_t layer, std::int64_t head, std::int64_t query,
                                             std::int64_t key);
ReferenceExplanation reference_explain_logit(const TransformerModel& model, const std::vector<std::int32_t>& ids,
                                             std::int64_t position, std::int32_t token);

}  // namespace attnscope::transformer
