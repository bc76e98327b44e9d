// What a model's attention says, beyond the raw maps: rollout and flow across
// layers, per-head summaries, comparisons between runs, and .npy export.
//
// `attentions` is a model run's [layers, heads, n, n] tensor: row i of a map is
// how query token i spreads its attention over the keys (rows sum to 1).
//
//   attention_rollout   Abnar & Zuidema (2020): Â_l = mean_h A_l (+ I)/2, R_l = Â_l · R_{l-1}
//   attention_flow      the same graph read as a flow network: max-flow from an
//                       output token to each input token
//   head_summaries      entropy, mean distance, and where each head looks
//   align_tokens        which tokens of two runs correspond (longest common subsequence)
//   attention_change    how far each head's maps moved between two aligned runs
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/tensor.hpp"

namespace attnscope {

// Checks that `shape` is [layers, heads, n, n] and within the per-call memory budget;
// `name` names the argument in errors. Callers check shapes before copying any data.
void check_attentions_shape(const char* op, const char* name, const Shape& shape);
// The same, and that every value is finite.
void check_attentions(const char* op, const char* name, const float* data, const Shape& shape);

// Per-layer rollout [layers, n, n]: entry l combines layers 0..l, so entry
// layers-1 says how much each final token draws on each input token. Heads are
// averaged; `residual` adds the identity for the skip connection (Â = 0.5·A + 0.5·I).
Tensor attention_rollout(const float* attentions, const Shape& shape, bool residual);

// Attention flow [rows.size(), n]: entry (r, j) is the maximum flow from token
// rows[r] in the last layer to input token j, through the layered graph whose
// edge (layer l, key j) → (layer l+1, query i) has capacity Â_l[i, j].
Tensor attention_flow(const float* attentions, const Shape& shape, bool residual,
                      const std::vector<std::int64_t>& rows);

// A directed edge with a capacity, for max_flow.
struct FlowEdge {
  std::int64_t from, to;
  double capacity;
};

// The maximum flow from `source` to `sink` (Dinic's algorithm); capacities must be ≥ 0.
double max_flow(std::int64_t nodes, const std::vector<FlowEdge>& edges, std::int64_t source, std::int64_t sink);

// What each head does, averaged over its query rows.
enum HeadMeasure : int {
  kEntropy = 0,  // −Σ_j p log p, in nats (0: looks at one token; log n: looks everywhere)
  kDistance,     // Σ_j p·|i − j|: how far, in tokens, it looks
  kPrevious,     // p[i, i−1], over rows i ≥ 1
  kSelf,         // p[i, i]
  kSpecial,      // Σ over special tokens ([CLS], [SEP], ...) and the first token
  kPunctuation,  // Σ over tokens made only of punctuation
  kHeadMeasures,
};

// [layers, heads, kHeadMeasures]. `special` and `punctuation` flag each of the n tokens.
Tensor head_summaries(const float* attentions, const Shape& shape, const std::vector<std::uint8_t>& special,
                      const std::vector<std::uint8_t>& punctuation);

// 1 for tokens made only of punctuation once the tokenizer's markers ("##", "▁", "Ġ") are removed.
std::vector<std::uint8_t> punctuation_tokens(const std::vector<std::string>& tokens);

// The pairs (i in a, j in b) of a longest common subsequence of the two token
// lists, in order: the positions where two runs can be compared.
std::vector<std::pair<std::int64_t, std::int64_t>> align_tokens(const std::vector<std::string>& a,
                                                                const std::vector<std::string>& b);

// For each layer and head [layers, heads]: the total variation distance
// ½·Σ_j |a[i, j] − b[i', j']| over aligned keys, averaged over aligned query
// rows. 0: the head attends the same way; 1: to entirely different tokens.
// `a` and `b` have the same layers and heads; their n may differ.
Tensor attention_change(const float* a, const Shape& a_shape, const float* b, const Shape& b_shape,
                        const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs);

// Cosine similarity of each row of a and b [n, d]: [n].
Tensor row_cosines(const float* a, const float* b, std::int64_t n, std::int64_t d);

// A NumPy .npy file (format 1.0, little-endian float32, C order) holding `data` with `shape`.
std::string to_npy(const float* data, const Shape& shape);

}  // namespace attnscope
