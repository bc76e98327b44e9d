// The run of a model of one stack. A causal stack on tokens (a decoder) keeps its keys, values and queries, rows of
// every map and per-token outputs, so that the next run on text that extends it (a person typing at the end)
// computes only the new tokens: its cost grows with the new tokens × n, not with n². Rows of a token depend only on
// the tokens up to it, so the kept rows are exactly what a fresh run computes (tests hold them equal).
// A decoder's run that asks for some layers' maps (map_layers) computes every layer fused, and those layers' maps
// from the kept queries and keys, as a later run on the same tokens computes another layer's: that layer's attention
// alone. An encoder's writes the other layers' maps into one layer's scratch.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "attnscope/error.hpp"
#include "models/ops.hpp"
#include "models/sampling.hpp"
#include "models/transformer_model.hpp"

namespace attnscope::transformer {

namespace {

// Floats of a map's rows 0 .. n kept as its lower triangle: row i holds keys 0 .. i. Previous::maps holds the
// rows i of all maps from maps · triangle(i) on.
std::int64_t triangle(std::int64_t n) { return n * (n + 1) / 2; }

bool same_outputs(const RunOptions& a, const RunOptions& b) {
  return a.top_k == b.top_k && a.logit_lens == b.logit_lens && a.return_logits == b.return_logits;
}

}  // namespace

void TransformerModel::run_one(const Runtime& rt, Reading reading, const RunOptions& o, RunResult& r) const {
  const Stack& stack = stacks_[0];
  const Config& c = stack.config();
  const std::int64_t n = static_cast<std::int64_t>(reading.sequence.tokens.size()), maps = c.layers * c.heads;
  const std::int64_t vocab = spec_.head.vocab;
  MapSet& set = r.maps.emplace_back();
  set.name = "self";
  set.causal = c.causal;
  const bool every_map = !o.map_layers;
  if (every_map) {
    set.map_layers.resize(static_cast<std::size_t>(c.layers));
    std::iota(set.map_layers.begin(), set.map_layers.end(), 0);
  } else {
    set.map_layers = *o.map_layers;
  }
  check_budget("run", 4.0 * double(set.map_layers.size() * c.heads) * double(n) * double(n) + logit_bytes(n, o) +
                          (spec_.input == InputKind::image ? 8.0 * double(n) * double(c.ffn) : 0.0));
  for (std::int64_t h = 0; h < c.heads; ++h)
    set.kv_head.push_back(static_cast<std::int32_t>(h / (c.heads / c.kv_heads)));
  StackRun& out = r.stacks.emplace_back();
  out.name = c.causal ? "decoder" : "encoder";
  if (o.token_norms) out.token_norms = Tensor({c.layers + 1, n});

  // Reuse needs a token's rows to depend on the tokens up to it alone (causal), the same keys and values (no padding,
  // no ablation) and the same outputs kept (no tap but the lens, which the run keeps).
  const bool padded = std::find(o.attention_mask.begin(), o.attention_mask.end(), 0) != o.attention_mask.end();
  const bool reusable = c.causal && spec_.input == InputKind::text && o.reuse_prefix && !padded &&
                        o.ablate_heads.empty() && !o.return_projections && !o.token_norms && !o.tap;
  // A run that cannot be reused leaves the last reusable one in place, for the next to extend.
  std::unique_ptr<Previous> previous = reusable ? std::move(previous_) : nullptr;
  std::int64_t p = 0;  // rows kept from the previous run
  const std::vector<std::int32_t>& ids = reading.sequence.ids;
  // Every map's rows come from the previous run's triangles, which it kept only when it too returned every map.
  if (reusable && previous && same_outputs(previous->options, o) && (!every_map || !previous->options.map_layers)) {
    const std::int64_t common = std::min<std::int64_t>(n, static_cast<std::int64_t>(previous->ids.size()));
    while (p < common && previous->ids[p] == ids[p]) ++p;
  }
  if (p == 0) previous.reset();
  const std::int64_t m = n - p;  // rows to compute
  r.reused_tokens = p;

  // A decoder computes the asked layers' maps after the run, from the kept queries and keys.
  const bool maps_after = !every_map && c.causal;
  Cache cache = previous ? std::move(previous->cache) : Cache(c, /*queries=*/reusable || maps_after);
  cache.length = std::min(cache.length, p);  // keys and values past the shared prefix are stale
  // Not zeroed: the kernels write every value of a map's rows, kept rows are completed below.
  set.attentions = Tensor::unfilled({static_cast<std::int64_t>(set.map_layers.size()), c.heads, n, n});
  TensorData fresh;  // [layers, heads, m, n]: the new rows, when they do not fill the set's maps (all written)
  if (p > 0 && every_map) fresh.resize(static_cast<std::size_t>(maps * m * n));
  LogitLens lens;
  if (o.logit_lens) lens.ids.resize(static_cast<std::size_t>(c.layers * m)), lens.probs.resize(lens.ids.size());
  const std::vector<std::uint8_t> padding = padding_mask(o.attention_mask, static_cast<std::size_t>(n));
  Pass pass;
  if (padded) pass.mask = Mask::keep_mask(padding.data(), {n, n});  // [n, n]: padding runs fresh (p = 0)
  std::vector<float> scratch;  // an encoder's maps of the layers not asked for, one layer at a time
  if (every_map) {
    pass.maps = Pass::every_layer(p > 0 ? fresh.data() : set.attentions.data.data(), c.layers, c.heads * m * n);
  } else if (!maps_after) {
    // The layers asked for in place, the others into one layer's scratch: the same kernel for every layer, so the
    // maps are those of a run of every layer, bit for bit, in the memory of the layers asked for and one more.
    if (set.map_layers.size() < static_cast<std::size_t>(c.layers))
      scratch.resize(static_cast<std::size_t>(c.heads * n * n));
    pass.maps.assign(static_cast<std::size_t>(c.layers), scratch.data());
    for (std::size_t i = 0; i < set.map_layers.size(); ++i)
      pass.maps[set.map_layers[i]] = set.attentions.data.data() + static_cast<std::int64_t>(i) * c.heads * n * n;
  }
  if (o.maps_ready && every_map && p == 0)
    pass.maps_ready = [&](std::int64_t layer) { o.maps_ready(set.attentions, layer); };
  pass.ablate = &o.ablate_heads;
  RunTaps taps(rt, o, r, heads_, stack, 0, o.logit_lens ? &lens : nullptr);
  pass.tap = taps.any() ? &taps : nullptr;
  const Matrix computed = m > 0 ? stack.run(rt, cache, front_->embed(rt, reading, p), pass) : Matrix(0, c.d_model);

  Matrix hidden(n, c.d_model);
  if (maps_after)  // the asked layers' whole maps, from the kept queries and keys
    for (std::size_t i = 0; i < set.map_layers.size(); ++i)
      stack.layer_maps(rt, cache, set.map_layers[i], pass.mask,
                       set.attentions.data.data() + static_cast<std::int64_t>(i) * c.heads * n * n);
  if (p > 0) {
    for (std::int64_t map = 0; every_map && map < maps; ++map)
      for (std::int64_t i = 0; i < n; ++i) {
        float* row = set.attentions.data.data() + (map * n + i) * n;
        if (i < p) {  // kept: row i sees keys 0 .. i
          std::copy_n(previous->maps.begin() + maps * triangle(i) + map * (i + 1), i + 1, row);
          std::fill(row + i + 1, row + n, 0.0f);
        } else
          std::copy_n(fresh.begin() + (map * m + i - p) * n, n, row);
      }
    hidden.topRows(p) = previous->hidden.topRows(p);
  }
  hidden.bottomRows(m) = computed;
  out.hidden = ops::to_tensor(hidden);
  heads_.read_out(rt, hidden, r);
  r.pixels = std::move(reading.pixels);
  r.sequences.push_back(std::move(reading.sequence));
  if (o.logit_lens) {
    r.logit_lens.ids.resize(static_cast<std::size_t>(c.layers * n));
    r.logit_lens.probs.resize(r.logit_lens.ids.size());
    for (std::int64_t l = 0; l < c.layers; ++l)
      for (std::int64_t i = 0; i < n; ++i) {
        const bool kept = i < p;
        const std::size_t from = kept ? l * previous->ids.size() + i : l * m + i - p;
        r.logit_lens.ids[l * n + i] = (kept ? previous->lens : lens).ids[from];
        r.logit_lens.probs[l * n + i] = (kept ? previous->lens : lens).probs[from];
      }
  }
  Matrix logits_all;
  if (o.return_logits) {
    logits_all = Matrix(n, vocab);
    if (p > 0) logits_all.topRows(p) = previous->logits.topRows(p);
    if (m > 0) logits_all.bottomRows(m) = heads_.logits(rt, computed);
    r.logits = ops::to_tensor(logits_all);
  }
  if (o.top_k) {
    const std::int64_t k = std::min(o.top_k, vocab);
    r.predictions.k = k;
    r.predictions.ids.resize(static_cast<std::size_t>(n * k));
    r.predictions.probs.resize(r.predictions.ids.size());
    if (p > 0) {
      std::copy_n(previous->predictions.ids.begin(), p * k, r.predictions.ids.begin());
      std::copy_n(previous->predictions.probs.begin(), p * k, r.predictions.probs.begin());
    }
    if (o.return_logits)
      Heads::top_k_of(rt, logits_all, p, m, k, &r.predictions.ids[p * k], &r.predictions.probs[p * k]);
    else
      heads_.top_k(rt, computed, k, &r.predictions.ids[p * k], &r.predictions.probs[p * k]);
  }
  if (!reusable) return;
  // Kept for the next run: the keys and values, the maps' lower triangles, the per-token outputs.
  auto next = std::make_unique<Previous>(Previous{r.sequences[0].ids,
                                                  o,
                                                  std::move(cache),
                                                  {},
                                                  std::move(hidden),
                                                  r.predictions,
                                                  r.logit_lens,
                                                  o.return_logits ? std::move(logits_all) : Matrix()});
  next->options.maps_ready = nullptr;  // it points into this call's caller
  if (every_map) {
    // The kept rows stay where they are (p > 0 with every map means the previous run kept every map's rows);
    // the rows computed now follow them.
    if (p > 0) next->maps = std::move(previous->maps);
    next->maps.resize(static_cast<std::size_t>(maps * triangle(n)));  // rows from p on, stale after an edit, rewritten
    for (std::int64_t i = p; i < n; ++i)
      for (std::int64_t map = 0; map < maps; ++map)
        std::copy_n(set.attentions.data.begin() + (map * n + i) * n, i + 1,
                    next->maps.begin() + maps * triangle(i) + map * (i + 1));
  }
  previous_ = std::move(next);
}

std::int64_t TransformerModel::resume(const std::vector<std::int32_t>& ids, Cache& cache,
                                      std::vector<std::vector<float>>* rows) const {
  // A run that asked for some layers' maps kept no rows of the maps.
  if (!previous_ || (rows && previous_->options.map_layers)) return 0;
  const Previous& before = *previous_;
  const std::int64_t common =
      std::min<std::int64_t>(static_cast<std::int64_t>(ids.size()) - 1, static_cast<std::int64_t>(before.ids.size()));
  std::int64_t p = 0;
  while (p < common && before.ids[p] == ids[p]) ++p;
  if (p == 0) return 0;
  const Config& c = stacks_[0].config();
  cache.take_prefix(c, before.cache, p);
  const std::int64_t maps = c.layers * c.heads;
  for (std::int64_t i = 0; rows && i < p; ++i) {  // token i's rows of all maps sit together from maps · triangle(i)
    const auto from = before.maps.begin() + maps * triangle(i);
    rows->emplace_back(from, from + maps * (i + 1));
  }
  return p;
}

}  // namespace attnscope::transformer
