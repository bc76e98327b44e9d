// Beam search over Generations (model.hpp's BeamOptions says the rules): every beam is a Generation with its own
// KV cache; a beam that several candidates continue is forked, the last of them taking it over.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "attnscope/error.hpp"
#include "attnscope/model.hpp"
#include "models/sampling.hpp"

namespace attnscope {

BeamSearch::BeamSearch(std::unique_ptr<Generation> start, BeamOptions options, std::int64_t vocab,
                       std::int64_t max_tokens)
    : o_(std::move(options)), vocab_(vocab) {
  if (o_.beams < 1 || o_.beams > kMaxBeams)
    throw Error("generate: beams must be from 1 to " + std::to_string(kMaxBeams) + ", got " + std::to_string(o_.beams));
  if (!std::isfinite(o_.length_penalty)) throw Error("generate: lengthPenalty must be a finite number");
  if (o_.no_repeat_ngram < 0) throw Error("generate: noRepeatNgramSize must be 0 or more");
  if (o_.max_length < 0) throw Error("generate: maxLength must be 0 or more");
  max_length_ = o_.max_length > 0 ? std::min(o_.max_length, max_tokens) : max_tokens;
  for (std::int32_t id : o_.eos)
    if (id < 0 || id >= vocab_) throw Error("generate: an end-of-text id is outside the vocabulary");
  start_length_ = start->ids().size();
  if (static_cast<std::int64_t>(start_length_) >= max_length_) done_ = true;
  beams_.push_back(std::move(start));
  sums_.push_back(0.0);
}

BeamSearch::~BeamSearch() = default;

void BeamSearch::finish(std::vector<std::int32_t> ids, double sum, std::size_t length) {
  const double score = sum / std::pow(static_cast<double>(length), static_cast<double>(o_.length_penalty));
  const auto worst = std::min_element(finished_.begin(), finished_.end(),
                                      [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
  if (static_cast<std::int64_t>(finished_.size()) < o_.beams) {
    finished_.push_back({std::move(ids), score});
  } else if (score > worst->score) {
    *worst = {std::move(ids), score};
  }
}

bool BeamSearch::is_over(double best_sum, std::size_t length) const {
  if (static_cast<std::int64_t>(finished_.size()) < o_.beams) return false;
  if (o_.early_stopping) return true;
  double worst = std::numeric_limits<double>::infinity();
  for (const Hypothesis& h : finished_) worst = std::min(worst, h.score);
  return worst >= best_sum / std::pow(static_cast<double>(length), static_cast<double>(o_.length_penalty));
}

bool BeamSearch::step(const Runtime& runtime) {
  if (done_) return false;
  const std::size_t length = beams_.front()->ids().size();
  struct Candidate {
    double score;
    std::size_t beam;
    std::int32_t token;
  };
  // Each beam's best tokens: the overall best `keep` are among them.
  const std::size_t keep =
      static_cast<std::size_t>(std::max<std::int64_t>(2, 1 + static_cast<std::int64_t>(o_.eos.size())) * o_.beams);
  std::vector<Candidate> candidates;
  std::vector<double> logp(static_cast<std::size_t>(vocab_));
  for (std::size_t b = 0; b < beams_.size(); ++b) {
    const std::vector<float>& logits = beams_[b]->next_logits(runtime);
    double top = -std::numeric_limits<double>::infinity();
    for (std::int64_t t = 0; t < vocab_; ++t) top = std::max(top, static_cast<double>(logits[t]));
    double total = 0;
    for (std::int64_t t = 0; t < vocab_; ++t) total += std::exp(static_cast<double>(logits[t]) - top);
    const double log_total = top + std::log(total);
    for (std::int64_t t = 0; t < vocab_; ++t) logp[t] = static_cast<double>(logits[t]) - log_total;
    for (std::int32_t t : sampling::suppressed(beams_[b]->ids(), o_.banned, o_.no_repeat_ngram))
      if (t >= 0 && t < vocab_) logp[t] = -std::numeric_limits<double>::infinity();
    for (std::int32_t t : o_.banned_first)
      if (length == start_length_ && t >= 0 && t < vocab_) logp[t] = -std::numeric_limits<double>::infinity();
    if (o_.filter)
      for (std::int32_t t : o_.filter(beams_[b]->ids(), logits))
        if (t >= 0 && t < vocab_) logp[t] = -std::numeric_limits<double>::infinity();
    std::vector<std::int32_t> order(static_cast<std::size_t>(vocab_));
    for (std::int64_t t = 0; t < vocab_; ++t) order[t] = static_cast<std::int32_t>(t);
    const std::size_t k = std::min(keep, order.size());
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int32_t a, std::int32_t c) {
      return logp[a] > logp[c] || (logp[a] == logp[c] && a < c);
    });
    for (std::size_t i = 0; i < k; ++i)
      if (std::isfinite(logp[order[i]])) candidates.push_back({sums_[b] + logp[order[i]], b, order[i]});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& c) { return a.score > c.score; });
  if (candidates.size() > keep) candidates.resize(keep);
  if (candidates.empty()) throw Error("generate: every token is banned for every beam");

  std::vector<Candidate> next;
  for (std::size_t rank = 0; rank < candidates.size(); ++rank) {
    const Candidate& c = candidates[rank];
    if (std::find(o_.eos.begin(), o_.eos.end(), c.token) != o_.eos.end()) {
      if (static_cast<std::int64_t>(rank) >= o_.beams) continue;  // an end beyond the best `beams`: not kept
      std::vector<std::int32_t> ids = beams_[c.beam]->ids();
      ids.push_back(c.token);
      finish(std::move(ids), c.score, length);
      continue;
    }
    next.push_back(c);
    if (static_cast<std::int64_t>(next.size()) == o_.beams) break;
  }
  if (is_over(candidates.front().score, length) || next.empty()) {
    done_ = true;
    return false;
  }
  // The beams that continue: a parent's last child takes it over, the others fork it first.
  std::vector<int> children(beams_.size(), 0);
  for (const Candidate& c : next) ++children[c.beam];
  std::vector<std::unique_ptr<Generation>> grown;
  std::vector<double> sums;
  for (const Candidate& c : next) {
    std::unique_ptr<Generation> g = --children[c.beam] == 0 ? std::move(beams_[c.beam]) : beams_[c.beam]->fork();
    g->append(runtime, c.token);
    grown.push_back(std::move(g));
    sums.push_back(c.score);
  }
  beams_ = std::move(grown);
  sums_ = std::move(sums);
  if (static_cast<std::int64_t>(length + 1) >= max_length_) {
    for (std::size_t b = 0; b < beams_.size(); ++b) finish(beams_[b]->ids(), sums_[b], length + 1);
    done_ = true;
    return false;
  }
  return true;
}

std::vector<std::int32_t> BeamSearch::best() const {
  if (!done_ || finished_.empty()) return beams_.front()->ids();
  return std::max_element(finished_.begin(), finished_.end(),
                          [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; })
      ->ids;
}

bool BeamSearch::ended() const {
  const std::vector<std::int32_t> ids = best();
  return !ids.empty() && std::find(o_.eos.begin(), o_.eos.end(), ids.back()) != o_.eos.end();
}

}  // namespace attnscope
