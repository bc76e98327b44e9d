// Plain-loop attention, written the way the formulas read, one element at a
// time. No Eigen products, no blocking, no threads: the tests' yardstick.
#include <cmath>
#include <limits>

#include "attnscope/attention.hpp"

namespace attnscope::reference {

namespace {

// c [m, n] = a [m, k] · b [k, n] + bias [n]
std::vector<float> matmul(const float* a, const float* b, const float* bias, std::int64_t m, std::int64_t k,
                          std::int64_t n) {
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (std::int64_t t = 0; t < k; ++t) acc += double(a[i * k + t]) * b[t * n + j];
      c[i * n + j] = static_cast<float>(acc);
    }
  return c;
}

AttentionResult run(const char* op, const TensorView& q, const TensorView& k, const TensorView& v,
                    const AttentionOptions& o, float default_scale) {
  const AttentionDims d = check_attention_inputs(op, q, k, v, o.mask);
  const float scale = o.scale.value_or(default_scale);
  if (!std::isfinite(scale)) throw Error(std::string(op) + ": scale must be a finite number");
  check_attention_values(op, q, k, v, o.mask);

  const auto shape = [&](std::int64_t cols) { return d.heads_axis ? Shape{d.heads, d.n_q, cols} : Shape{d.n_q, cols}; };
  AttentionResult r;
  r.output = Tensor(shape(d.d_v));
  Tensor weights(shape(d.n_k));
  std::vector<double> p(static_cast<std::size_t>(d.n_k));
  for (std::int64_t h = 0; h < d.heads; ++h) {
    const float* qh = q.data + h * d.n_q * d.d_k;
    const float* kh = k.data + h * d.n_k * d.d_k;
    const float* vh = v.data + h * d.n_k * d.d_v;
    for (std::int64_t i = 0; i < d.n_q; ++i) {
      // scores: p_j = q_i · k_j · scale + mask_ij, or -inf when hidden
      double max = -INFINITY;
      for (std::int64_t j = 0; j < d.n_k; ++j) {
        double s = 0.0;
        for (std::int64_t t = 0; t < d.d_k; ++t) s += double(qh[i * d.d_k + t]) * kh[j * d.d_k + t];
        s *= scale;
        const std::int64_t m = ((o.mask.shape.size() == 3 ? h : 0) * d.n_q + i) * d.n_k + j;
        if (o.causal && j > i) s = -INFINITY;
        if (o.mask.kind == Mask::Kind::keep && !o.mask.keep[m]) s = -INFINITY;
        if (o.mask.kind == Mask::Kind::additive) s += o.mask.additive[m];
        p[j] = s;
        if (s > max) max = s;
      }
      // softmax, max-subtracted; a fully hidden row stays all zeros
      double sum = 0.0;
      for (std::int64_t j = 0; j < d.n_k; ++j) {
        p[j] = max == -INFINITY ? 0.0 : std::exp(p[j] - max);
        sum += p[j];
      }
      for (std::int64_t j = 0; j < d.n_k; ++j) {
        if (sum > 0.0) p[j] /= sum;
        weights.data[(h * d.n_q + i) * d.n_k + j] = static_cast<float>(p[j]);
      }
      // output row: sum_j p_j v_j
      for (std::int64_t c = 0; c < d.d_v; ++c) {
        double acc = 0.0;
        for (std::int64_t j = 0; j < d.n_k; ++j) acc += p[j] * vh[j * d.d_v + c];
        r.output.data[(h * d.n_q + i) * d.d_v + c] = static_cast<float>(acc);
      }
    }
  }
  if (o.return_weights) r.weights = std::move(weights);
  return r;
}

}  // namespace

AttentionResult attention(const TensorView& q, const TensorView& k, const TensorView& v,
                          const AttentionOptions& options) {
  const float d_k = q.rank() >= 2 ? static_cast<float>(q.cols()) : 1.0f;
  return run("attention", q, k, v, options, 1.0f / std::sqrt(d_k));
}

AttentionResult self_attention(const TensorView& x, AttentionOptions options) {
  return run("selfAttention", x, x, x, options, 1.0f);
}

MultiHeadResult multi_head_attention(const TensorView& x, const MultiHeadParams& p, const MultiHeadOptions& o) {
  const char* op = "multiHeadAttention";
  check_multi_head_shapes(op, x.shape, p, o);
  const TensorView& c = o.context.empty() ? x : o.context;
  const std::int64_t n = x.shape[0], m = c.shape[0], d_model = x.shape[1], heads = o.heads;
  const std::int64_t d_k = p.wq.shape[1] / heads, d_v = p.wv.shape[1] / heads;

  const auto bias = [](const TensorView& b) { return b.empty() ? nullptr : b.data; };
  const std::vector<float> qa = matmul(x.data, p.wq.data, bias(p.bq), n, d_model, heads * d_k);
  const std::vector<float> ka = matmul(c.data, p.wk.data, bias(p.bk), m, d_model, heads * d_k);
  const std::vector<float> va = matmul(c.data, p.wv.data, bias(p.bv), m, d_model, heads * d_v);

  // Head h reads columns h·d … (h+1)·d − 1 of each projection.
  const auto head_of = [heads](const std::vector<float>& a, std::int64_t rows, std::int64_t d) {
    Tensor t({heads, rows, d});
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < d; ++j) t.data[(h * rows + i) * d + j] = a[i * heads * d + h * d + j];
    return t;
  };
  MultiHeadResult r;
  r.q = head_of(qa, n, d_k);
  r.k = head_of(ka, m, d_k);
  r.v = head_of(va, m, d_v);

  AttentionOptions ao;
  ao.causal = o.causal;
  ao.mask = o.mask;
  ao.return_weights = o.return_weights;
  AttentionResult a = run(op, r.q.view(), r.k.view(), r.v.view(), ao, 1.0f / std::sqrt(float(d_k)));

  std::vector<float> concat(static_cast<std::size_t>(n * heads * d_v));
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < d_v; ++j)
        concat[i * heads * d_v + h * d_v + j] = a.output.data[(h * n + i) * d_v + j];
  if (p.wo.empty()) {
    r.output = Tensor({n, heads * d_v});
    r.output.data.assign(concat.begin(), concat.end());
  } else {
    r.output = Tensor({n, d_model});
    const std::vector<float> out = matmul(concat.data(), p.wo.data, bias(p.bo), n, heads * d_v, d_model);
    r.output.data.assign(out.begin(), out.end());
  }
  r.weights = std::move(a.weights);
  if (!o.return_projections) r.q = r.k = r.v = Tensor();
  return r;
}

}  // namespace attnscope::reference
