// Reading a language model's logits: the most likely next tokens, and drawing one as
// transformers' generate() does (temperature, then top-k, then top-p, then a draw).
#pragma once

#include <cstdint>
#include <vector>

#include "attnscope/model.hpp"

namespace attnscope::sampling {

// xoshiro256** seeded through splitmix64: the same seed gives the same draws on every build.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  double uniform();  // [0, 1), 53 bits

 private:
  std::uint64_t s_[4];
};

// softmax(logits) [vocab] in place, in float64 sums; returns nothing.
void softmax(float* logits, std::int64_t vocab);

// The k most likely entries of probabilities p [vocab], best first (ties: lower id first).
void top_k(const float* p, std::int64_t vocab, std::int64_t k, std::int32_t* ids, float* probs);

// softmax(logits) then top_k, without the softmax of the whole row: the k largest logits are the k most
// likely tokens (ties: lower id first), and each one's probability is exp(l − max) / Σ exp(l − max). One
// pass for the max, one for the sum (four lanes at a time in wasm), one to select: a prediction at every
// position of a prefill, or every layer's logit lens, reads 49,152 logits a row.
void top_k_probabilities(const float* logits, std::int64_t vocab, std::int64_t k, std::int32_t* ids, float* probs);

// log Σ exp(logits[i]) over the ids i below `end` that `excluded` does not name (ids outside [0, end) named there
// change nothing); −∞ where none is left. One pass for the max, one for the sum, four lanes at a time in wasm: a
// speech step's log-probability among the tokens its filters left, and its word probability among the text tokens,
// each over 51,865 logits.
double log_sum_exp(const float* logits, std::int64_t end, const std::vector<std::int32_t>& excluded);

// Throws an Error naming the option that is out of range (NaN temperature, top_p outside (0, 1], ...).
void check(const char* op, const SamplingOptions& o);

// The tokens that would repeat an n-gram of `ids` (transformers' NoRepeatNGramLogitsProcessor): each token that
// followed an earlier occurrence of the last n − 1 tokens.
std::vector<std::int32_t> repeating(const std::vector<std::int32_t>& ids, std::int64_t n);

// The tokens a step after `ids` may not take: those in `banned`, then those that would repeat an n-gram of size
// `no_repeat_ngram` (0: none). Ids outside the vocabulary are left for the caller to skip.
std::vector<std::int32_t> suppressed(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& banned,
                                     std::int64_t no_repeat_ngram);

// Sets to −∞ the logits [vocab] of the tokens `o` bans, and of those that would repeat an n-gram of `ids`.
void suppress(float* logits, std::int64_t vocab, const std::vector<std::int32_t>& ids, const SamplingOptions& o);

// The next token from logits [vocab] under `o`; temperature 0 is the most likely (the first on ties).
std::int32_t draw(const float* logits, std::int64_t vocab, const SamplingOptions& o, Rng& rng);

}  // namespace attnscope::sampling
