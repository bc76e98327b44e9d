#include "models/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "attnscope/error.hpp"
#include "kernels/vexp.hpp"

namespace attnscope::sampling {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr float kNegInf = -INFINITY;

}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

void softmax(float* x, std::int64_t vocab) {
  float max = kNegInf;
  for (std::int64_t i = 0; i < vocab; ++i) max = std::max(max, x[i]);
  if (max == kNegInf) {  // nothing possible: nothing is likely
    std::fill(x, x + vocab, 0.0f);
    return;
  }
  double sum = 0.0;
  for (std::int64_t i = 0; i < vocab; ++i) sum += std::exp(double(x[i]) - max);
  for (std::int64_t i = 0; i < vocab; ++i) x[i] = static_cast<float>(std::exp(double(x[i]) - max) / sum);
}

void top_k(const float* p, std::int64_t vocab, std::int64_t k, std::int32_t* ids, float* probs) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  k = std::min(k, vocab);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [p](std::int32_t a, std::int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  for (std::int64_t i = 0; i < k; ++i) ids[i] = order[i], probs[i] = p[order[i]];
}

namespace {

// Σ exp(x[i] − max), float32 terms summed in float64 a chunk at a time.
double sum_exp(const float* x, std::int64_t n, float max) {
  double sum = 0.0;
#ifdef __wasm_simd128__
  constexpr std::int64_t kChunk = 1024;
  const v128_t m = wasm_f32x4_splat(max);
  std::int64_t i = 0;
  for (; i + 4 <= n;) {
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (const std::int64_t end = std::min(n / 4 * 4, i + kChunk); i < end; i += 4)
      acc = wasm_f32x4_add(acc, kernels::exp4(wasm_f32x4_sub(wasm_v128_load(x + i), m)));
    sum += double(wasm_f32x4_extract_lane(acc, 0)) + wasm_f32x4_extract_lane(acc, 1) + wasm_f32x4_extract_lane(acc, 2) +
           wasm_f32x4_extract_lane(acc, 3);
  }
  for (; i < n; ++i) sum += std::exp(double(x[i]) - max);
#else
  for (std::int64_t i = 0; i < n; ++i) sum += std::exp(double(x[i]) - max);
#endif
  return sum;
}

// Whether (value a, id a) ranks before (value b, id b): larger first, ties by lower id.
bool before(float a, std::int32_t ia, float b, std::int32_t ib) { return a > b || (a == b && ia < ib); }

}  // namespace

double log_sum_exp(const float* logits, std::int64_t end, const std::vector<std::int32_t>& excluded) {
  std::vector<float> kept(logits, logits + end);
  for (std::int32_t id : excluded)
    if (id >= 0 && id < end) kept[static_cast<std::size_t>(id)] = kNegInf;
  const float max = kernels::max_of(kept.data(), end);
  if (max == kNegInf) return -std::numeric_limits<double>::infinity();
  return double(max) + std::log(sum_exp(kept.data(), end, max));
}

void top_k_probabilities(const float* logits, std::int64_t vocab, std::int64_t k, std::int32_t* ids, float* probs) {
  k = std::min(k, vocab);
  if (k <= 0) return;
  const float max = kernels::max_of(logits, vocab);
  if (max == kNegInf) {  // nothing possible: nothing is likely (softmax gives zeros; top_k then the first ids)
    for (std::int64_t i = 0; i < k; ++i) ids[i] = static_cast<std::int32_t>(i), probs[i] = 0.0f;
    return;
  }
  const double sum = sum_exp(logits, vocab, max);
  constexpr std::int64_t kFew = 64;  // up to this many, kept sorted while scanning; more: a partial sort
  if (k <= kFew) {
    float best[kFew];
    std::int64_t have = 0;
    for (std::int64_t i = 0; i < vocab; ++i) {
      const float x = logits[i];
      const auto id = static_cast<std::int32_t>(i);
      if (have == k && !before(x, id, best[k - 1], ids[k - 1])) continue;
      std::int64_t at = have < k ? have++ : k - 1;  // the slot it takes, then moved up past smaller ones
      for (; at > 0 && before(x, id, best[at - 1], ids[at - 1]); --at) best[at] = best[at - 1], ids[at] = ids[at - 1];
      best[at] = x, ids[at] = id;
    }
  } else {
    std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [logits](std::int32_t a, std::int32_t b) { return before(logits[a], a, logits[b], b); });
    std::copy_n(order.begin(), k, ids);
  }
  for (std::int64_t i = 0; i < k; ++i) probs[i] = static_cast<float>(std::exp(double(logits[ids[i]]) - max) / sum);
}

void check(const char* op, const SamplingOptions& o) {
  if (!(o.temperature >= 0.0f) || !std::isfinite(o.temperature))
    throw Error(std::string(op) + ": temperature must be a finite number ≥ 0, got " + std::to_string(o.temperature));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    throw Error(std::string(op) + ": topP must be in (0, 1], got " + std::to_string(o.top_p));
  if (o.top_k < 0) throw Error(std::string(op) + ": topK must be 0 (no limit) or more, got " + std::to_string(o.top_k));
  if (o.no_repeat_ngram < 0)
    throw Error(std::string(op) + ": noRepeatNgramSize must be 0 (off) or more, got " +
                std::to_string(o.no_repeat_ngram));
}

std::vector<std::int32_t> repeating(const std::vector<std::int32_t>& ids, std::int64_t n) {
  std::vector<std::int32_t> out;
  const auto size = static_cast<std::int64_t>(ids.size());
  if (n <= 0 || size + 1 < n) return out;
  for (std::int64_t start = 0; start + n <= size; ++start)
    if (std::equal(ids.begin() + start, ids.begin() + start + n - 1, ids.end() - (n - 1)))
      out.push_back(ids[static_cast<std::size_t>(start + n - 1)]);
  return out;
}

std::vector<std::int32_t> suppressed(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& banned,
                                     std::int64_t no_repeat_ngram) {
  std::vector<std::int32_t> out = banned;
  const std::vector<std::int32_t> repeats = repeating(ids, no_repeat_ngram);
  out.insert(out.end(), repeats.begin(), repeats.end());
  return out;
}

void suppress(float* logits, std::int64_t vocab, const std::vector<std::int32_t>& ids, const SamplingOptions& o) {
  for (std::int32_t t : suppressed(ids, o.banned, o.no_repeat_ngram))
    if (t >= 0 && t < vocab) logits[t] = kNegInf;
}

namespace {

// The first id of the largest logit, as std::max_element finds it (NaNs aside): the largest value four lanes at a
// time (kernels::max_of), then where it first is. A greedy step runs it over the whole vocabulary.
std::int32_t argmax(const float* logits, std::int64_t vocab) {
  const float best = kernels::max_of(logits, vocab);
  for (std::int64_t i = 0; i < vocab; ++i)
    if (logits[i] == best) return static_cast<std::int32_t>(i);
  return 0;  // nothing but NaN
}

}  // namespace

std::int32_t draw(const float* logits, std::int64_t vocab, const SamplingOptions& o, Rng& rng) {
  if (o.temperature == 0.0f) return argmax(logits, vocab);
  std::vector<float> s(logits, logits + vocab);
  if (o.temperature != 1.0f)
    for (float& x : s) x /= o.temperature;
  if (o.top_k > 0 && o.top_k < vocab) {  // keep scores ≥ the k-th largest: ties with it stay
    std::vector<float> sorted = s;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<float>());
    const float kth = sorted[static_cast<std::size_t>(o.top_k - 1)];
    for (float& x : s)
      if (x < kth) x = kNegInf;
  }
  if (o.top_p < 1.0f) {  // drop the least likely tokens while their total stays ≤ 1 − top_p; the best always stays
    std::vector<float> p = s;
    softmax(p.data(), vocab);
    std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return s[a] < s[b]; });
    double cumulative = 0.0;
    for (std::int64_t i = 0; i + 1 < vocab; ++i) {
      cumulative += p[order[i]];
      if (cumulative > 1.0 - o.top_p) break;
      s[order[i]] = kNegInf;
    }
  }
  softmax(s.data(), vocab);
  const double u = rng.uniform();
  double cumulative = 0.0;
  std::int32_t last = 0;
  for (std::int64_t i = 0; i < vocab; ++i) {
    if (s[i] <= 0.0f) continue;
    cumulative += s[i];
    last = static_cast<std::int32_t>(i);
    if (u < cumulative) return last;
  }
  return last;  // rounding left u past the total: the last possible token
}

}  // namespace attnscope::sampling
