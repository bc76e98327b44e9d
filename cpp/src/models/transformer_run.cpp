// TransformerModel::run: a run keeps its keys, values and queries, rows of every map and per-token outputs, so
// that the next run on text that extends it (a person typing at the end) computes only the new
// tokens: its cost grows with the new tokens × n, not with n². Rows of a token depend only on the
// tokens up to it, so the kept rows are exactly what a fresh run computes (tests hold them equal).
// A run that asks for some layers' maps (map_layers) computes the rest fused, and those layers' maps from the
// kept queries and keys: another layer's maps of the same text cost that layer's attention alone.
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

void TransformerModel::forward(const Runtime& rt, ModelRun& r, const RunOptions& o) const {
  const Config& c = config_;
  const std::int64_t n = static_cast<std::int64_t>(r.ids.size()), vocab = c.vocab, maps = c.layers * c.heads;
  const bool every_map = !o.map_layers;
  if (every_map) {
    r.map_layers.resize(static_cast<std::size_t>(c.layers));
    std::iota(r.map_layers.begin(), r.map_layers.end(), 0);
  } else {
    r.map_layers = *o.map_layers;
  }
  if (!c.language_model && (o.top_k || o.logit_lens || o.return_logits))
    throw Error("run: " + c.name + " (" + c.architecture +
                ") is not a language model: topK, logitLens and returnLogits need a decoder such as GPT-2 or Llama");
  const double logit_bytes = 4.0 * double(n) * double(vocab);
  check_budget("run", 4.0 * double(r.map_layers.size() * c.heads) * double(n) * double(n) +
                          (o.top_k || o.return_logits || o.logit_lens ? logit_bytes : 0.0));
  for (std::int64_t h = 0; h < c.heads; ++h) r.kv_head.push_back(static_cast<std::int32_t>(h / (c.heads / c.kv_heads)));

  // Reuse needs a token's rows to depend on the tokens up to it alone (causal), the same keys and values (no padding,
  // no ablation) and the same outputs kept.
  const bool padded = std::find(o.attention_mask.begin(), o.attention_mask.end(), 0) != o.attention_mask.end();
  const bool reusable = c.causal && o.reuse_prefix && !padded && o.ablate_heads.empty() && !o.return_projections;
  // A run that cannot be reused leaves the last reusable one in place, for the next to extend.
  std::unique_ptr<Previous> previous = reusable ? std::move(previous_) : nullptr;
  std::int64_t p = 0;  // rows kept from the previous run
  // Every map's rows come from the previous run's triangles, which it kept only when it too returned every map.
  if (reusable && previous && same_outputs(previous->options, o) && (!every_map || !previous->options.map_layers)) {
    const std::int64_t common = std::min<std::int64_t>(n, static_cast<std::int64_t>(previous->ids.size()));
    while (p < common && previous->ids[p] == r.ids[p]) ++p;
  }
  if (p == 0) previous.reset();
  const std::int64_t m = n - p;  // rows to compute
  r.reused_tokens = p;

  Cache cache = previous ? std::move(previous->cache) : Cache(c, /*queries=*/true);
  cache.length = std::min(cache.length, p);  // keys and values past the shared prefix are stale
  // Not zeroed: the kernels write every value of a map's rows, kept rows are completed below.
  r.attentions = Tensor::unfilled({static_cast<std::int64_t>(r.map_layers.size()), c.heads, n, n});
  TensorData fresh;  // [layers, heads, m, n]: the new rows, when they do not fill r.attentions (all written)
  if (p > 0 && every_map) fresh.resize(static_cast<std::size_t>(maps * m * n));
  LogitLens lens;
  if (o.logit_lens) lens.ids.resize(static_cast<std::size_t>(c.layers * m)), lens.probs.resize(lens.ids.size());
  Extras e;
  const std::vector<std::uint8_t> padding = padding_mask(o, static_cast<std::size_t>(n));  // checks its length too
  if (padded) e.mask = Mask::keep_mask(padding.data(), {n, n});  // [n, n]: padding runs fresh (p = 0)
  e.weights = !every_map ? nullptr : p > 0 ? fresh.data() : r.attentions.data.data();
  if (o.maps_ready && every_map && p == 0)
    e.maps_ready = [&](std::int64_t layer) { o.maps_ready(r.attentions, layer); };
  e.options = &o;
  e.run = &r;
  e.lens = o.logit_lens ? &lens : nullptr;
  const Matrix computed = m > 0 ? extend(rt, cache, r.ids.data() + p, m, e) : Matrix(0, c.d_model);

  Matrix hidden(n, c.d_model);
  if (!every_map)
    for (std::size_t i = 0; i < r.map_layers.size(); ++i)
      layer_maps(rt, cache, r.map_layers[i], e.mask,
                 r.attentions.data.data() + static_cast<std::int64_t>(i) * c.heads * n * n);
  if (p > 0) {
    for (std::int64_t map = 0; every_map && map < maps; ++map)
      for (std::int64_t i = 0; i < n; ++i) {
        float* row = r.attentions.data.data() + (map * n + i) * n;
        if (i < p) {  // kept: row i sees keys 0 .. i
          std::copy_n(previous->maps.begin() + maps * triangle(i) + map * (i + 1), i + 1, row);
          std::fill(row + i + 1, row + n, 0.0f);
        } else
          std::copy_n(fresh.begin() + (map * m + i - p) * n, n, row);
      }
    hidden.topRows(p) = previous->hidden.topRows(p);
  }
  hidden.bottomRows(m) = computed;
  r.hidden = ops::to_tensor(hidden);
  pool(rt, hidden, r);
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
  if (o.top_k || o.return_logits) {
    logits_all = Matrix(n, vocab);
    if (p > 0 && o.return_logits) logits_all.topRows(p) = previous->logits.topRows(p);
    if (m > 0) logits_all.bottomRows(m) = logits(rt, computed);
  }
  if (o.return_logits) r.logits = ops::to_tensor(logits_all);
  if (o.top_k) {
    const std::int64_t k = std::min(o.top_k, vocab);
    r.predictions.k = k;
    r.predictions.ids.resize(static_cast<std::size_t>(n * k));
    r.predictions.probs.resize(r.predictions.ids.size());
    if (p > 0) {
      std::copy_n(previous->predictions.ids.begin(), p * k, r.predictions.ids.begin());
      std::copy_n(previous->predictions.probs.begin(), p * k, r.predictions.probs.begin());
    }
    rt.parallel_rows(m, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        sampling::top_k_probabilities(logits_all.row(p + i).data(), vocab, k, &r.predictions.ids[(p + i) * k],
                                      &r.predictions.probs[(p + i) * k]);
      }
    });
  }
  if (!reusable) return;
  // Kept for the next run: the keys and values, the maps' lower triangles, the per-token outputs.
  auto next = std::make_unique<Previous>(Previous{r.ids,
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
        std::copy_n(r.attentions.data.begin() + (map * n + i) * n, i + 1,
                    next->maps.begin() + maps * triangle(i) + map * (i + 1));
  }
  previous_ = std::move(next);
}

void TransformerModel::pool(const Runtime& rt, const Matrix& hidden, ModelRun& r) const {
  if (config_.pooler == Pooler::none || !w_.pool) return;  // BERT checkpoints may leave the pooler out
  const Matrix reduced =
      config_.pooler == Pooler::first_tanh ? Matrix(hidden.topRows(1)) : Matrix(hidden.colwise().mean());
  Matrix e = linear(rt, reduced, w_.pool, w_.pool_bias).array().tanh().matrix();
  if (config_.pooler == Pooler::mean_tanh_l2) e /= std::sqrt(std::max(e.squaredNorm(), 1e-12f));
  r.embedding = Tensor({e.cols()});
  std::copy(e.data(), e.data() + e.size(), r.embedding.data.begin());
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
  cache.take_prefix(config_, before.cache, p);
  const std::int64_t maps = config_.layers * config_.heads;
  for (std::int64_t i = 0; rows && i < p; ++i) {  // token i's rows of all maps sit together from maps · triangle(i)
    const auto from = before.maps.begin() + maps * triangle(i);
    rows->emplace_back(from, from + maps * (i + 1));
  }
  return p;
}

}  // namespace attnscope::transformer
