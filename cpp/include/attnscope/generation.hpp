// Generating with a language model or an encoder-decoder: token by token against a KV cache (Generation), drawn as
// transformers' sampling draws (SamplingOptions), or by beam search (BeamSearch). Model::generate starts one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "attnscope/attention.hpp"

namespace attnscope {

struct RunResult;

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
  std::vector<std::int32_t> banned_first;  // tokens not generated first (Whisper's begin_suppress_tokens)
  // Tokens a beam may not take next, from its ids so far and its next logits (Whisper's timestamp rules, which
  // depend on each beam's own tokens); applied as `banned` is, after the log-softmax. Empty: none.
  std::function<std::vector<std::int32_t>(const std::vector<std::int32_t>& ids, const std::vector<float>& logits)>
      filter;
};
inline constexpr std::int64_t kMaxBeams = 8;

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

// A language model's running sequence (an encoder-decoder's target), with its keys and values kept (the KV cache):
// each appended token costs one row per head, not a rerun of the sequence.
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
  // log Σ exp of the logits after the last token over the ids below `end` that `excluded` does not name; −∞ where
  // none is left (a step's log-probability among the tokens its filters left is its logit less this).
  virtual double next_log_sum_exp(const Runtime& runtime, std::int64_t end,
                                  const std::vector<std::int32_t>& excluded) const = 0;
  virtual const std::vector<std::int32_t>& ids() const = 0;
  // The newest token's row of every self-attention map: [layers, heads, n] (empty with GenerationMaps::none).
  virtual Tensor last_rows() const = 0;
  // Every self-attention map of the whole sequence: [layers, heads, n, n] (empty unless GenerationMaps::all).
  virtual Tensor attentions() const = 0;
  // Encoder-decoders: the newest token's row of every cross-attention map, [layers, heads, source tokens] (empty
  // with GenerationMaps::none, and for one-stack models).
  virtual Tensor last_cross_rows() const = 0;
  // The prompt's leading tokens taken from the model's last run (its keys and values) rather than run again.
  virtual std::int64_t reused_tokens() const = 0;
  // Encoder-decoders: every cross-attention map of the whole sequence, [layers, heads, n, source tokens] (empty
  // unless GenerationMaps::all).
  virtual Tensor cross_attentions() const = 0;
  // Encoder-decoders: the encoder's run of the source, once: its sequence "source" (after truncation) and, with
  // GenerationMaps::all, its map set "encoder"; null for one-stack models.
  virtual const RunResult* source() const = 0;
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
  std::size_t start_length_;  // the start tokens': the first step is the one after them
  bool done_ = false;
};

}  // namespace attnscope
