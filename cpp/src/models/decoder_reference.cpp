// The decoder in plain loops and float64, one token at a time, written the way transformer.hpp's and spec.hpp's
// formulas read: no GEMM, no cache layout, no threads. Tests hold TransformerModel to it.
#include <cmath>
#include <numeric>

#include "attnscope/error.hpp"
#include "models/transformer_model.hpp"

namespace attnscope::transformer {

namespace {

using Vec = std::vector<double>;

// y = x · W (+ b), W [in, out] row-major
Vec linear(const Vec& x, const Tensor& w, const Tensor& b) {
  const std::int64_t in = w.shape[0], out = w.shape[1];
  Vec y(static_cast<std::size_t>(out));
  for (std::int64_t j = 0; j < out; ++j) {
    double acc = b.empty() ? 0.0 : b.data[j];
    for (std::int64_t i = 0; i < in; ++i) acc += x[i] * w.data[i * out + j];
    y[j] = acc;
  }
  return y;
}

Vec normalize(const Config& c, const Vec& x, const Tensor& w, const Tensor& b) {
  const double n = static_cast<double>(x.size());
  double mean = 0.0, square = 0.0;
  for (double v : x) mean += v / n;
  Vec y(x.size());
  if (c.norm == Norm::rms) {
    for (double v : x) square += v * v / n;
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] / std::sqrt(square + c.eps) * w.data[i];
  } else {
    for (double v : x) square += (v - mean) * (v - mean) / n;
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) / std::sqrt(square + c.eps) * w.data[i] + b.data[i];
  }
  return y;
}

double activation(Activation a, double x) {
  switch (a) {
    case Activation::silu:
      return x / (1.0 + std::exp(-x));
    case Activation::gelu_tanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::gelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::relu:
      return x > 0 ? x : 0.0;
    case Activation::quick_gelu:
      return x / (1.0 + std::exp(-1.702 * x));
  }
  return x;
}

// One head's vector rotated for position `pos`: x[j], x[j + half] as a pair (rotate-half) over the first
// 2 · half = rotary dims, scaled by `factor`; the rest stay.
void rotate(double* x, std::int64_t pos, const std::vector<double>& inv_freq, double factor) {
  const std::size_t half = inv_freq.size();
  for (std::size_t j = 0; j < half; ++j) {
    const double angle = double(pos) * inv_freq[j], a = x[j], b = x[j + half];
    x[j] = (a * std::cos(angle) - b * std::sin(angle)) * factor;
    x[j + half] = (b * std::cos(angle) + a * std::sin(angle)) * factor;
  }
}

void head_norm(double* x, std::int64_t hd, const Tensor& w, double eps) {
  double square = 0.0;
  for (std::int64_t j = 0; j < hd; ++j) square += x[j] * x[j] / double(hd);
  for (std::int64_t j = 0; j < hd; ++j) x[j] = x[j] / std::sqrt(square + eps) * w.data[j];
}

}  // namespace

// A block's matrices as float32 [in, out], whatever precision the model packs them in.
struct Matrices {
  Tensor wq, wk, wv, wo, w_gate, w_up, w_down;
  explicit Matrices(const Block& b)
      : wq(b.wq->unpack()),
        wk(b.wk->unpack()),
        wv(b.wv->unpack()),
        wo(b.wo->unpack()),
        w_gate(b.w_gate ? b.w_gate->unpack() : Tensor()),
        w_up(b.w_up->unpack()),
        w_down(b.w_down->unpack()) {}
};

// 1 / √(mean(x²) + eps) (RMS) or 1 / √(var + eps) (LayerNorm): what normalize() divides x by.
static double scale_of(const Config& c, const Vec& x) {
  const double n = static_cast<double>(x.size());
  double mean = 0.0, square = 0.0;
  if (c.norm == Norm::layer)
    for (double v : x) mean += v / n;
  for (double v : x) square += (v - mean) * (v - mean) / n;
  return 1.0 / std::sqrt(square + c.eps);
}

ReferenceRun reference_forward(const TransformerModel& model, const std::vector<std::int32_t>& ids,
                               ReferenceParts* parts) {
  const Spec& spec = model.spec();
  const Config& c = model.last().config();
  const Weights& w = model.last().weights();
  const TokenConfig& tc = model.tokens().config();
  const TokenWeights& tw = model.tokens().weights();
  const HeadConfig& hc = spec.head;
  if (spec.encoder_decoder() || !c.causal || !hc.language_model || c.placement == Placement::post ||
      tc.positions == TokenPositions::sinusoidal || c.positions == Positions::relative || c.cross_attention ||
      c.layer_scale)
    throw Error(
        "reference_forward: written for decoders (causal, pre- or sandwich-normed, with an LM head; no relative "
        "positions, cross-attention or layer scale: tests/cpp/block_test.cpp holds those to PyTorch)");
  const std::int64_t n = static_cast<std::int64_t>(ids.size()), d = c.d_model, hd = c.head_dim;
  const std::int64_t H = c.heads, KV = c.kv_heads;
  ReferenceRun r;
  r.attentions.assign(static_cast<std::size_t>(c.layers * H * n * n), 0.0);
  const std::int64_t vocab = tc.vocab;
  const Tensor embed = tw.embed->unpack();  // Eᵀ [d, vocab]
  std::vector<Vec> x(static_cast<std::size_t>(n), Vec(static_cast<std::size_t>(d)));
  if (parts) parts->layers.assign(static_cast<std::size_t>(c.layers), std::vector<ReferenceParts::Row>(ids.size()));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j)
      x[i][j] = double(embed.data[j * vocab + ids[i]]) * tc.embed_scale +
                (tc.positions == TokenPositions::learned ? tw.position.data[i * d + j] : 0.0);
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const Block& b = w.blocks[static_cast<std::size_t>(l)];
    const Matrices m(b);
    std::vector<Vec> q(static_cast<std::size_t>(n)), k(q.size()), v(q.size());
    const std::vector<double>& freq = c.window[l] ? c.inv_freq_local : c.inv_freq_global;
    for (std::int64_t i = 0; i < n; ++i) {
      ReferenceParts::Row* row = parts ? &parts->layers[l][i] : nullptr;
      const Vec h = normalize(c, x[i], b.attn_norm, b.attn_norm_bias);
      if (row) row->attn_scale = scale_of(c, x[i]);
      q[i] = linear(h, m.wq, b.bq), k[i] = linear(h, m.wk, b.bk), v[i] = linear(h, m.wv, b.bv);
      for (std::int64_t g = 0; g < H; ++g) {
        if (row && c.qk_norm)
          row->q_scales.push_back(
              1.0 / std::sqrt(std::inner_product(&q[i][g * hd], &q[i][g * hd] + hd, &q[i][g * hd], 0.0) / double(hd) +
                              c.eps));
        if (c.qk_norm) head_norm(&q[i][g * hd], hd, b.q_norm, c.eps);
        if (c.positions == Positions::rope) rotate(&q[i][g * hd], i, freq, c.rope_attention_factor);
      }
      for (std::int64_t g = 0; g < KV; ++g) {
        if (row && c.qk_norm)
          row->k_scales.push_back(
              1.0 / std::sqrt(std::inner_product(&k[i][g * hd], &k[i][g * hd] + hd, &k[i][g * hd], 0.0) / double(hd) +
                              c.eps));
        if (c.qk_norm) head_norm(&k[i][g * hd], hd, b.k_norm, c.eps);
        if (c.positions == Positions::rope) rotate(&k[i][g * hd], i, freq, c.rope_attention_factor);
      }
      if (row) row->q = q[i], row->k = k[i];
    }
    for (std::int64_t i = 0; i < n; ++i) {
      Vec concat(static_cast<std::size_t>(H * hd), 0.0);
      for (std::int64_t h = 0; h < H; ++h) {
        const std::int64_t g = h / (H / KV);  // the key/value head this query head reads
        Vec s(static_cast<std::size_t>(i + 1));
        double max = -INFINITY;
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0.0;
          for (std::int64_t t = 0; t < hd; ++t) dot += q[i][h * hd + t] * k[j][g * hd + t];
          dot *= c.scale;
          if (c.attn_softcap > 0) dot = c.attn_softcap * std::tanh(dot / c.attn_softcap);
          if (c.window[l] && i - j >= c.window[l]) dot = -INFINITY;  // outside the sliding window
          s[j] = dot;
          max = std::max(max, dot);
        }
        double sum = 0.0;
        for (double& e : s) sum += e = std::exp(e - max);
        for (std::int64_t j = 0; j <= i; ++j) {
          const double p = s[j] / sum;
          r.attentions[((l * H + h) * n + i) * n + j] = p;
          for (std::int64_t t = 0; t < hd; ++t) concat[h * hd + t] += p * v[j][g * hd + t];
        }
      }
      Vec a = linear(concat, m.wo, b.bo);
      if (parts) {  // each head's output through its rows of W_O
        ReferenceParts::Row& row = parts->layers[l][i];
        for (std::int64_t h = 0; h < H; ++h) {
          Vec o(static_cast<std::size_t>(d), 0.0);
          for (std::int64_t t = 0; t < hd; ++t)
            for (std::int64_t j = 0; j < d; ++j) o[j] += concat[h * hd + t] * m.wo.data[(h * hd + t) * d + j];
          row.heads.push_back(o);
        }
        if (c.placement == Placement::sandwich) row.attn_out_scale = scale_of(c, a);
      }
      if (c.placement == Placement::sandwich) a = normalize(c, a, b.post_attn_norm, {});
      for (std::int64_t j = 0; j < d; ++j) x[i][j] += a[j];
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const Vec h = normalize(c, x[i], b.ffn_norm, b.ffn_norm_bias);
      Vec up = linear(h, m.w_up, b.b_up);
      const Vec gate = c.gated ? linear(h, m.w_gate, b.b_gate) : Vec();
      for (std::size_t j = 0; j < up.size(); ++j)
        up[j] = c.gated ? activation(c.act, gate[j]) * up[j] : activation(c.act, up[j]);
      Vec f = linear(up, m.w_down, b.b_down);
      if (c.placement == Placement::sandwich) f = normalize(c, f, b.post_ffn_norm, {});
      if (parts) parts->layers[l][i].mlp = f;
      for (std::int64_t j = 0; j < d; ++j) x[i][j] += f[j];
    }
  }
  const Tensor head = model.heads().head()->unpack();  // [d, vocab]
  for (std::int64_t i = 0; i < n; ++i) {
    if (parts) parts->final_scales.push_back(scale_of(c, x[i]));
    const Vec h = normalize(c, x[i], w.final_norm, w.final_norm_bias);
    if (parts) parts->final_hidden.push_back(h);
    for (std::int64_t t = 0; t < vocab; ++t) {
      double logit = 0.0;
      for (std::int64_t j = 0; j < d; ++j) logit += h[j] * head.data[j * vocab + t];
      if (hc.final_softcap > 0) logit = hc.final_softcap * std::tanh(logit / hc.final_softcap);
      r.logits.push_back(logit);
    }
  }
  return r;
}

namespace {

// A token's stream by its sources, from the parts the forward recorded: its embedding and position, then every
// layer before `stop`'s heads (each through its rows of W_O), W_O's bias and MLP, as the forward added them.
struct Parts {
  std::vector<Source> sources;
  std::vector<Vec> values;
  void add(Source::Kind kind, std::int64_t layer, std::int64_t head, std::int64_t position, Vec v) {
    Source s;
    s.kind = kind, s.layer = layer, s.head = head, s.position = position;
    sources.push_back(s);
    values.push_back(std::move(v));
  }
};

Parts parts_of(const TransformerModel& model, const ReferenceParts& rec, std::int32_t id, std::int64_t position,
               std::int64_t stop) {
  const Config& c = model.last().config();
  const TokenConfig& tc = model.tokens().config();
  const TokenWeights& tw = model.tokens().weights();
  const std::int64_t d = c.d_model;
  const Tensor embed = tw.embed->unpack();  // Eᵀ [d, vocab]
  Parts p;
  Vec e(static_cast<std::size_t>(d));
  for (std::int64_t j = 0; j < d; ++j) e[j] = double(embed.data[j * tc.vocab + id]) * tc.embed_scale;
  p.add(Source::Kind::token, -1, -1, position, e);
  if (tc.positions == TokenPositions::learned)
    p.add(Source::Kind::position, -1, -1, position,
          Vec(tw.position.data.begin() + position * d, tw.position.data.begin() + (position + 1) * d));
  for (std::int64_t l = 0; l < stop; ++l) {
    const Block& b = model.last().weights().blocks[static_cast<std::size_t>(l)];
    const ReferenceParts::Row& row = rec.layers[l][position];
    // The sandwich's post-norm, its scale that of the sum of the heads and the bias.
    const auto after = [&](Vec v) {
      if (c.placement == Placement::sandwich)
        for (std::int64_t j = 0; j < d; ++j) v[j] *= row.attn_out_scale * b.post_attn_norm.data[j];
      return v;
    };
    for (std::size_t h = 0; h < row.heads.size(); ++h)
      p.add(Source::Kind::head, l, static_cast<std::int64_t>(h), position, after(row.heads[h]));
    if (!b.bo.empty())
      p.add(Source::Kind::attention_bias, l, -1, position, after(Vec(b.bo.data.begin(), b.bo.data.end())));
    p.add(Source::Kind::mlp, l, -1, position, row.mlp);
  }
  return p;
}

// Each part through a norm with its scale frozen; LayerNorm's bias a part of its own.
void freeze(Parts& p, const Config& c, double scale, const Tensor& w, const Tensor& b, std::int64_t layer,
            std::int64_t position) {
  for (Vec& v : p.values) {
    double mean = 0;
    if (c.norm == Norm::layer) mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = (v[j] - mean) * scale * w.data[j];
  }
  if (c.norm == Norm::layer && !b.empty())
    p.add(Source::Kind::norm_bias, layer, 0, position, Vec(b.data.begin(), b.data.end()));
}

}  // namespace

ReferenceExplanation reference_explain_score(const TransformerModel& model, const std::vector<std::int32_t>& ids,
                                             std::int64_t layer, std::int64_t head, std::int64_t query,
                                             std::int64_t key) {
  ReferenceParts rec;
  reference_forward(model, ids, &rec);
  const Config& c = model.last().config();
  const Block& b = model.last().weights().blocks[static_cast<std::size_t>(layer)];
  const Matrices m(b);
  const std::int64_t hd = c.head_dim, g = head / (c.heads / c.kv_heads);
  const std::vector<double>& freq = c.window[layer] ? c.inv_freq_local : c.inv_freq_global;
  // One side: the token's parts through the pre-norm, its head's columns of W, W's bias, QK-norm and RoPE.
  const auto side = [&](std::int64_t position, const Tensor& w, const Tensor& bias, std::int64_t h, double qk_scale,
                        const Tensor& qk_norm, Source::Kind bias_kind, std::vector<Source>& sources) {
    Parts p = parts_of(model, rec, ids[position], position, layer);
    freeze(p, c, rec.layers[layer][position].attn_scale, b.attn_norm, b.attn_norm_bias, layer, position);
    std::vector<Vec> out;
    for (const Vec& v : p.values) {
      Vec y(static_cast<std::size_t>(hd), 0.0);
      for (std::int64_t t = 0; t < hd; ++t)
        for (std::size_t j = 0; j < v.size(); ++j) y[t] += v[j] * w.data[j * w.shape[1] + h * hd + t];
      out.push_back(y);
    }
    if (!bias.empty()) {
      p.add(bias_kind, layer, head, position, {});
      out.emplace_back(bias.data.begin() + h * hd, bias.data.begin() + (h + 1) * hd);
    }
    for (Vec& y : out) {
      if (c.qk_norm)
        for (std::int64_t t = 0; t < hd; ++t) y[t] *= qk_scale * qk_norm.data[t];
      if (c.positions == Positions::rope) rotate(y.data(), position, freq, c.rope_attention_factor);
    }
    sources = p.sources;
    return out;
  };
  const ReferenceParts::Row &qi = rec.layers[layer][query], &kj = rec.layers[layer][key];
  ReferenceExplanation e;
  const std::vector<Vec> q = side(query, m.wq, b.bq, head, c.qk_norm ? qi.q_scales[head] : 0.0, b.q_norm,
                                  Source::Kind::query_bias, e.query_sources);
  const std::vector<Vec> k =
      side(key, m.wk, b.bk, g, c.qk_norm ? kj.k_scales[g] : 0.0, b.k_norm, Source::Kind::key_bias, e.key_sources);
  for (const Vec& a : q)
    for (const Vec& z : k) e.terms.push_back(c.scale * std::inner_product(a.begin(), a.end(), z.begin(), 0.0));
  e.score = c.scale *
            std::inner_product(qi.q.begin() + head * hd, qi.q.begin() + (head + 1) * hd, kj.k.begin() + g * hd, 0.0);
  return e;
}

ReferenceExplanation reference_explain_logit(const TransformerModel& model, const std::vector<std::int32_t>& ids,
                                             std::int64_t position, std::int32_t token) {
  ReferenceParts rec;
  reference_forward(model, ids, &rec);
  const Config& c = model.last().config();
  const Weights& w = model.last().weights();
  Parts p = parts_of(model, rec, ids[position], position, c.layers);
  freeze(p, c, rec.final_scales[position], w.final_norm, w.final_norm_bias, c.layers, position);
  const Tensor head = model.heads().head()->unpack();  // [d, vocab]
  const std::int64_t vocab = head.shape[1];
  ReferenceExplanation e;
  e.query_sources = p.sources;
  for (const Vec& v : p.values) {
    double t = 0;
    for (std::size_t j = 0; j < v.size(); ++j) t += v[j] * head.data[j * vocab + token];
    e.terms.push_back(t * model.spec().head.head_scale);
  }
  const Vec& h = rec.final_hidden[position];
  for (std::int64_t j = 0; j < c.d_model; ++j) e.score += h[j] * head.data[j * vocab + token];
  e.score *= model.spec().head.head_scale;
  return e;
}

}  // namespace attnscope::transformer
