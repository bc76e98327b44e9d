// A score or a logit taken apart by its sources (attnscope/explain.hpp). Trackers (sources.hpp) follow the one or two
// tokens through a run to the layer that computes the score (or to the stack's end, for a logit or a cross-attention
// key); the sources they hold then go through what the engine does next, with every norm's scale frozen:
//   query side:  h = norm(x) → h·W_Q[:, head] (+ b_Q) → QK-norm → RoPE at the query's position
//   key side:    the same with W_K and the key/value head the query head reads, at the key's position
//   cross keys:  the encoder's stream through its final norm, then the decoder layer's W_K'
//   logits:      the final norm → × head_scale · E_t (+ the logits' bias)
#include <algorithm>
#include <cmath>
#include <optional>

#include "attnscope/error.hpp"
#include "models/transformer_model.hpp"

namespace attnscope::transformer {

namespace {

std::string named(const ModelInfo& info) { return info.name + " (" + info.architecture + ")"; }

const Tensor kNone;  // where a projection reads the stream as it is (post-normed stacks)

// One side of a score: its sources and each one's vector in the head's space, [sources, hd].
struct Side {
  std::vector<Source> sources;
  std::vector<double> rows;
  std::int64_t hd = 0;
  double* row(std::size_t a) { return rows.data() + a * hd; }
};

// The stream through the norm before a projection (frozen at `scale`; none where `norm_w` is empty), then columns
// [first, first + hd) of W, with W's bias a source of its own.
Side project_side(Stream stream, Norm norm, float scale, const Tensor& norm_w, const Tensor& norm_b,
                  const Source& norm_bias, const Weight& w, const Tensor& bias, std::int64_t first, std::int64_t hd,
                  const Source& bias_source) {
  freeze_norm(stream, norm, scale, norm_w, norm_b, norm_bias);
  Side side;
  side.hd = hd;
  side.sources = stream.sources;
  side.rows = project(stream, w, first, hd);
  if (!bias.empty()) {
    side.sources.push_back(bias_source);
    side.rows.insert(side.rows.end(), bias.data.begin() + first, bias.data.begin() + first + hd);
  }
  return side;
}

// QK-norm's per-head RMSNorm with its scale frozen, then RoPE at `position`, as the stack applies them.
void turn(Side& side, const Config& c, std::int64_t layer, float qk_scale, const Tensor& qk_norm,
          std::int64_t position) {
  const std::int64_t hd = side.hd;
  const std::vector<double>& inv_freq = c.window[layer] ? c.inv_freq_local : c.inv_freq_global;
  const std::size_t half = inv_freq.size();
  for (std::size_t a = 0; a < side.sources.size(); ++a) {
    double* x = side.row(a);
    if (c.qk_norm)
      for (std::int64_t t = 0; t < hd; ++t) x[t] *= double(qk_scale) * double(qk_norm.data[t]);
    if (c.positions != Positions::rope) continue;
    for (std::size_t j = 0; j < half; ++j) {
      const double angle = double(position) * inv_freq[j], f = c.rope_attention_factor;
      const double u = x[j], v = x[j + half];
      x[j] = u * std::cos(angle) * f - v * std::sin(angle) * f;
      x[j + half] = v * std::cos(angle) * f + u * std::sin(angle) * f;
    }
  }
}

double dot(const float* a, const float* b, std::int64_t n) {
  double s = 0;
  for (std::int64_t t = 0; t < n; ++t) s += double(a[t]) * double(b[t]);
  return s;
}

// A decoder's cache lent to a replay of token p: its rows of p, and its length, as they were when it ends.
struct Borrowed {
  Cache& cache;
  std::int64_t length;
  std::vector<std::pair<float*, std::int64_t>> rows;
  std::vector<float> kept;
  ~Borrowed() {
    std::size_t at = 0;
    for (auto [row, hd] : rows) std::copy_n(kept.data() + at, hd, row), at += static_cast<std::size_t>(hd);
    cache.length = length;
  }
};

}  // namespace

std::vector<Reading> TransformerModel::read_all(const Input& input, const RunOptions& o, const char* op) const {
  front_->check_form(input.sequence, info_);
  check(o);
  std::vector<Reading> readings;
  if (spec_.encoder_decoder()) {
    if (!input.target)
      throw Error(std::string(op) + ": " + named(info_) +
                  " is an encoder-decoder model: explain a run on a source and a target");
    readings.push_back(read(input.sequence, 0));
    readings.push_back(read(*input.target, 1));
    const Sequence& target = readings[1].sequence;
    if (target.truncated)
      throw Error(std::string(op) + ": the target has " + std::to_string(target.total_tokens) +
                  " tokens, more than the decoder's " + std::to_string(spec_.last().max_tokens) + " positions");
  } else {
    if (input.target)
      throw Error(std::string(op) + ": " + named(info_) + " is not an encoder-decoder model; it reads one sequence");
    readings.push_back(read(input.sequence, 0));
  }
  return readings;
}

Stream TransformerModel::start(const Runtime& rt, const std::vector<Reading>& readings, std::int64_t stack,
                               std::int64_t position) const {
  const Reading& reading = readings[static_cast<std::size_t>(stack)];
  if (stack == 1) return target_tokens_->decompose(rt, reading, position, stack);
  return front_->decompose(rt, reading, position, stack);
}

void TransformerModel::follow(const Runtime& rt, const Input& input, const RunOptions& o, std::vector<Reading> readings,
                              const std::vector<StreamTracker*>& trackers) const {
  std::vector<const Stack*> stacks;
  for (const Stack& s : stacks_) stacks.push_back(&s);
  TrackerTap tap(stacks, trackers);
  const Stack& stack = stacks_[0];
  const Config& c = stack.config();
  const std::vector<std::int32_t>& ids = readings[0].sequence.ids;
  // A token of a decoder depends on the tokens up to it alone: where the last run holds them (and nothing masked or
  // ablated changes the stream), the token runs alone against that run's keys and values.
  bool replay = stacks_.size() == 1 && c.causal && spec_.input == InputKind::text && previous_ &&
                o.ablate_heads.empty() &&
                std::find(o.attention_mask.begin(), o.attention_mask.end(), 0) == o.attention_mask.end();
  for (const StreamTracker* t : trackers) {
    const std::size_t p = static_cast<std::size_t>(t->position());
    replay =
        replay && p < previous_->ids.size() && std::equal(ids.begin(), ids.begin() + p + 1, previous_->ids.begin());
  }
  if (replay) {
    Cache& cache = previous_->cache;
    for (const StreamTracker* t : trackers) {
      const std::int64_t p = t->position();
      // The replay writes its own keys, values and queries of token p (equal to the kept ones up to rounding) into
      // the cache: the kept ones go back after it, so that the next run extends the run as it was.
      Borrowed borrowed{cache, cache.length, {}, {}};
      for (auto [per_layer, heads] : {std::pair{&cache.k, c.kv_heads}, {&cache.v, c.kv_heads}, {&cache.q, c.heads}})
        for (std::size_t l = 0; l < per_layer->size(); ++l) {
          const std::int64_t hd = c.head_dim_of(static_cast<std::int64_t>(l));
          for (std::int64_t h = 0; h < heads; ++h) {
            float* row = (*per_layer)[l].data() + (h * cache.capacity + p) * hd;
            borrowed.rows.emplace_back(row, hd);
            borrowed.kept.insert(borrowed.kept.end(), row, row + hd);
          }
        }
      cache.length = p;
      Pass pass;
      pass.tap = &tap;
      stack.run(rt, cache, tokens().embed(ids.data() + p, 1, p), pass);
    }
  } else {
    RunOptions again;
    again.tap = &tap;
    again.attention_mask = o.attention_mask;
    again.ablate_heads = o.ablate_heads;
    RunResult r;
    if (spec_.encoder_decoder()) {
      run_pair(rt, input, again, r);
    } else {
      again.map_layers = std::vector<std::int64_t>{};  // no maps: the trackers read the rows they follow
      run_one(rt, std::move(readings[0]), again, r);
    }
  }
  for (const StreamTracker* t : trackers)
    if (!t->done()) throw Error("explain: the run did not reach token " + std::to_string(t->position()));
}

ScoreExplanation TransformerModel::explain_score(const Runtime& rt, const Input& input, const RunOptions& o,
                                                 const ScoreQuery& query) const {
  const std::string op = "explainScore";
  std::vector<Reading> readings = read_all(input, o, op.c_str());
  // Which stacks the query and the key are of.
  std::int64_t qs = 0, ks = 0;
  bool cross = false;
  const std::string& set = query.set;
  if (spec_.encoder_decoder()) {
    if (set == "decoder")
      qs = ks = 1;
    else if (set == "cross")
      qs = 1, ks = 0, cross = true;
    else if (!set.empty() && set != "encoder")
      throw Error(op + ": set " + quote(set) + " is not one of " + named(info_) + "'s: encoder, decoder, cross");
  } else if (!set.empty() && set != "self") {
    throw Error(op + ": set " + quote(set) + " is not one of " + named(info_) + "'s: self");
  }
  const Stack& stack = stacks_[static_cast<std::size_t>(qs)];
  const Config& c = stack.config();
  const std::int64_t layer = query.layer, head = query.head, i = query.query, j = query.key;
  if (layer < 0 || layer >= c.layers)
    throw Error(op + ": layer " + std::to_string(layer) + " is outside the " + std::to_string(c.layers) +
                " layers (counting from 0)");
  if (head < 0 || head >= c.heads)
    throw Error(op + ": head " + std::to_string(head) + " is outside the " + std::to_string(c.heads) +
                " heads (counting from 0)");
  const Sequence &queries = readings[static_cast<std::size_t>(qs)].sequence,
                 &keys = readings[static_cast<std::size_t>(ks)].sequence;
  const auto count = [](const Sequence& s) { return static_cast<std::int64_t>(s.tokens.size()); };
  if (i < 0 || i >= count(queries))
    throw Error(op + ": query " + std::to_string(i) + " is outside the " + queries.name + "'s " +
                std::to_string(count(queries)) + " tokens (counting from 0)");
  if (j < 0 || j >= count(keys))
    throw Error(op + ": key " + std::to_string(j) + " is outside the " + keys.name + "'s " +
                std::to_string(count(keys)) + " tokens (counting from 0)");
  if (!cross && c.causal && j > i)
    throw Error(op + ": key " + std::to_string(j) + " comes after query " + std::to_string(i) +
                ", and the heads of a decoder see only the keys up to their query: it has no score");
  if (!cross && c.window[layer] && i - j >= c.window[layer])
    throw Error(op + ": key " + std::to_string(j) + " is outside layer " + std::to_string(layer) +
                "'s sliding window of " + std::to_string(c.window[layer]) + " tokens before query " +
                std::to_string(i) + ": it has no score");
  if (ks == 0 && static_cast<std::size_t>(j) < o.attention_mask.size() && !o.attention_mask[j])
    throw Error(op + ": key " + std::to_string(j) + " is padding (attentionMask 0): it has no score");

  const Stack& key_stack = stacks_[static_cast<std::size_t>(ks)];
  StreamTracker query_tracker(stack, qs, i, start(rt, readings, qs, i), layer, cross);
  std::optional<StreamTracker> key_tracker;
  if (cross)
    key_tracker.emplace(key_stack, ks, j, start(rt, readings, ks, j), key_stack.config().layers);
  else if (j != i)
    key_tracker.emplace(stack, ks, j, start(rt, readings, ks, j), layer);
  std::vector<StreamTracker*> trackers{&query_tracker};
  if (key_tracker) trackers.push_back(&*key_tracker);
  follow(rt, input, o, std::move(readings), trackers);
  const StreamTracker& kt = key_tracker ? *key_tracker : query_tracker;

  const Block& b = stack.weights().blocks[static_cast<std::size_t>(layer)];
  const std::int64_t hd = c.head_dim_of(layer), g = head / (c.heads / c.kv_heads);
  const bool pre = c.placement != Placement::post;
  ScoreExplanation e;
  Side q, k;
  double engine = 0;
  if (!cross) {
    q = project_side(query_tracker.stream, c.norm, query_tracker.at.attn_scale, pre ? b.attn_norm : kNone,
                     b.attn_norm_bias, source_of(Source::Kind::norm_bias, qs, layer, 0, i), b.wq, b.bq, head * hd, hd,
                     source_of(Source::Kind::query_bias, qs, layer, head, i));
    k = project_side(kt.stream, c.norm, kt.at.attn_scale, pre ? b.attn_norm : kNone, b.attn_norm_bias,
                     source_of(Source::Kind::norm_bias, ks, layer, 0, j), b.wk, b.bk, g * hd, hd,
                     source_of(Source::Kind::key_bias, ks, layer, head, j));
    turn(q, c, layer, c.qk_norm ? query_tracker.at.q_scales[head] : 0.0f, b.q_norm, i);
    turn(k, c, layer, c.qk_norm ? kt.at.k_scales[g] : 0.0f, b.k_norm, j);
    engine = dot(query_tracker.at.q.data() + head * hd, kt.at.k.data() + g * hd, hd);
    if (c.positions == Positions::relative) {
      const std::int64_t bucket = relative_bucket(j - i, !c.causal, c.relative_buckets, c.relative_max_distance);
      e.position_bias = stack.weights().relative_bias.data[bucket * c.heads + head];
    }
  } else {
    // The query reads the decoder's stream after its self-attention; the key, the encoder's final-normed output.
    const Weights& encoder = key_stack.weights();
    q = project_side(query_tracker.stream, c.norm, query_tracker.at.cross_scale, pre ? b.cross_norm : kNone,
                     b.cross_norm_bias, source_of(Source::Kind::norm_bias, qs, layer, 1, i), b.wcq, b.bcq, head * hd,
                     hd, source_of(Source::Kind::query_bias, qs, layer, head, i));
    k = project_side(kt.stream, key_stack.config().norm, kt.final_scale, encoder.final_norm, encoder.final_norm_bias,
                     source_of(Source::Kind::norm_bias, ks, key_stack.config().layers, 0, j), b.wck, b.bck, head * hd,
                     hd, source_of(Source::Kind::key_bias, ks, layer, head, j));
    Stream memory(c.d_model);  // the engine's key: the encoder's output row through W_K' (+ b_K')
    memory.add(Source{}, kt.hidden.data());
    const std::vector<double> key = project(memory, b.wck, head * hd, hd);
    for (std::int64_t t = 0; t < hd; ++t)
      engine += double(query_tracker.at.cross_q[head * hd + t]) *
                (key[t] + (b.bck.empty() ? 0.0 : b.bck.data[head * hd + t]));
  }
  const double scale = c.scale_of(layer);
  e.score = scale * engine + e.position_bias;
  e.softcap = cross ? 0.0f : c.attn_softcap;
  e.query_sources = q.sources;
  e.key_sources = k.sources;
  const std::size_t nq = q.sources.size(), nk = k.sources.size();
  e.terms.resize(nq * nk);
  for (std::size_t a = 0; a < nq; ++a)
    for (std::size_t b = 0; b < nk; ++b) e.terms[a * nk + b] = scale * dot(q.row(a), k.row(b), hd);
  return e;
}

LogitExplanation TransformerModel::explain_logit(const Runtime& rt, const Input& input, const RunOptions& o,
                                                 const LogitQuery& query) const {
  const std::string op = "explainLogit";
  if (!spec_.head.language_model)
    throw Error(op + ": " + named(info_) +
                " has no LM head: its logits are a language model's, a decoder such as GPT-2 or an encoder-decoder "
                "such as BART");
  std::vector<Reading> readings = read_all(input, o, op.c_str());
  const std::int64_t ls = static_cast<std::int64_t>(stacks_.size()) - 1, vocab = spec_.head.vocab;
  const Sequence& sequence = readings.back().sequence;
  const std::int64_t n = static_cast<std::int64_t>(sequence.ids.size()), p = query.position;
  if (p < 0 || p >= n)
    throw Error(op + ": position " + std::to_string(p) + " is outside the " + sequence.name + "'s " +
                std::to_string(n) + " tokens (counting from 0)");
  if (query.token < 0 || query.token >= vocab)
    throw Error(op + ": token " + std::to_string(query.token) + " is outside the vocabulary [0, " +
                std::to_string(vocab) + ")");
  const Stack& stack = last();
  const Config& c = stack.config();
  StreamTracker tracker(stack, ls, p, start(rt, readings, ls, p), c.layers);
  follow(rt, input, o, std::move(readings), {&tracker});

  Stream s = tracker.stream;
  freeze_norm(s, c.norm, tracker.final_scale, stack.weights().final_norm, stack.weights().final_norm_bias,
              source_of(Source::Kind::norm_bias, ls, c.layers, 0, p));
  std::vector<float> column(static_cast<std::size_t>(c.d_model));
  heads_.head()->column(query.token, column.data());  // E_t
  const double head_scale = spec_.head.head_scale;
  LogitExplanation e;
  e.sources = s.sources;
  for (std::int64_t a = 0; a < s.size(); ++a) {
    double t = 0;
    for (std::int64_t k = 0; k < c.d_model; ++k) t += s.row(a)[k] * column[k];
    e.terms.push_back(head_scale * t);
  }
  e.logit = head_scale * dot(tracker.hidden.data(), column.data(), c.d_model);
  const Tensor& bias = heads_.weights().logits_bias;
  if (!bias.empty()) {
    e.sources.push_back(source_of(Source::Kind::logit_bias, ls, -1, -1, p));
    e.terms.push_back(bias.data[query.token]);
    e.logit += bias.data[query.token];
  }
  e.softcap = spec_.head.final_softcap;
  return e;
}

}  // namespace attnscope::transformer
