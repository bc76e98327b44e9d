// The decoder in plain loops and float64, one token at a time, written the way transformer.hpp's and spec.hpp's
// formulas read: no GEMM, no cache layout, no threads. Tests hold TransformerModel to it.
#include <cmath>

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

ReferenceRun reference_forward(const TransformerModel& model, const std::vector<std::int32_t>& ids) {
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
      const Vec h = normalize(c, x[i], b.attn_norm, b.attn_norm_bias);
      q[i] = linear(h, m.wq, b.bq), k[i] = linear(h, m.wk, b.bk), v[i] = linear(h, m.wv, b.bv);
      for (std::int64_t g = 0; g < H; ++g) {
        if (c.qk_norm) head_norm(&q[i][g * hd], hd, b.q_norm, c.eps);
        if (c.positions == Positions::rope) rotate(&q[i][g * hd], i, freq, c.rope_attention_factor);
      }
      for (std::int64_t g = 0; g < KV; ++g) {
        if (c.qk_norm) head_norm(&k[i][g * hd], hd, b.k_norm, c.eps);
        if (c.positions == Positions::rope) rotate(&k[i][g * hd], i, freq, c.rope_attention_factor);
      }
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
      for (std::int64_t j = 0; j < d; ++j) x[i][j] += f[j];
    }
  }
  const Tensor head = model.heads().head()->unpack();  // [d, vocab]
  for (std::int64_t i = 0; i < n; ++i) {
    const Vec h = normalize(c, x[i], w.final_norm, w.final_norm_bias);
    for (std::int64_t t = 0; t < vocab; ++t) {
      double logit = 0.0;
      for (std::int64_t j = 0; j < d; ++j) logit += h[j] * head.data[j * vocab + t];
      if (hc.final_softcap > 0) logit = hc.final_softcap * std::tanh(logit / hc.final_softcap);
      r.logits.push_back(logit);
    }
  }
  return r;
}

}  // namespace attnscope::transformer
