// The forward pass of a stack (see transformer.hpp), run on new rows after those already in a KV cache: a whole
// text or image at once, or one generated token at a time.
#include "models/stack.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnscope/error.hpp"
#include "kernels/gemm.hpp"
#include "kernels/kernels.hpp"
#include "models/ops.hpp"

namespace attnscope::transformer {

namespace {

// y = x / √(mean(x²) + eps) · w, per row of x [rows, width], in place; `scale`, when given, gets each row's
// 1 / √(mean(x²) + eps).
void rms_norm(float* x, std::int64_t rows, std::int64_t width, const Tensor& w, float eps, float* scale = nullptr) {
  for (std::int64_t i = 0; i < rows; ++i) {
    float* r = x + i * width;
    double sum = 0.0;
    for (std::int64_t j = 0; j < width; ++j) sum += double(r[j]) * r[j];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum / double(width) + eps));
    for (std::int64_t j = 0; j < width; ++j) r[j] = r[j] * inv * w.data[j];
    if (scale) scale[i] = inv;
  }
}

// RoPE, rotate-half, in place on x [heads, n, hd]: row i sits at position p0 + i. Pairs (j, j + half) of the
// first 2 · half = rotary dims turn, scaled by `factor`; the dims past them pass as they are (partial rotary).
void rope(float* x, std::int64_t heads, std::int64_t n, std::int64_t hd, std::int64_t p0,
          const std::vector<double>& inv_freq, double factor) {
  const std::int64_t half = static_cast<std::int64_t>(inv_freq.size());
  std::vector<float> cos(static_cast<std::size_t>(n * half)), sin(cos.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < half; ++j) {
      const double angle = double(p0 + i) * inv_freq[j];
      cos[i * half + j] = static_cast<float>(std::cos(angle) * factor);
      sin[i * half + j] = static_cast<float>(std::sin(angle) * factor);
    }
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < n; ++i) {
      float* r = x + (h * n + i) * hd;
      const float* c = cos.data() + i * half;
      const float* s = sin.data() + i * half;
      for (std::int64_t j = 0; j < half; ++j) {
        const float a = r[j], b = r[j + half];
        r[j] = a * c[j] - b * s[j];
        r[j + half] = b * c[j] + a * s[j];
      }
    }
}

void activate(Activation act, Eigen::Ref<Matrix> x) {
  switch (act) {
    case Activation::silu:
      ops::silu(x);
      break;
    case Activation::gelu_tanh:
      ops::gelu_tanh(x);
      break;
    case Activation::gelu:
      ops::gelu(x);
      break;
    case Activation::relu:
      ops::relu(x);
      break;
    case Activation::quick_gelu:
      ops::quick_gelu(x);
      break;
  }
}

// x = x ⊙ γ, row by row: layer scale.
void scale_columns(Matrix& x, const Tensor& gamma) {
  x.array().rowwise() *= Eigen::Map<const Eigen::RowVectorXf>(gamma.data.data(), x.cols()).array();
}

// Zeroes the columns of the heads of layer `layer` that `ablate` names, in the concatenated head outputs
// [n, heads·d_v].
void ablate_heads(const std::vector<std::pair<std::int64_t, std::int64_t>>& ablate, std::int64_t layer,
                  std::int64_t heads, Tensor& concatenated) {
  const std::int64_t n = concatenated.rows(), width = concatenated.cols(), d = width / heads;
  for (const auto& [l, h] : ablate) {
    if (l != layer) continue;
    for (std::int64_t i = 0; i < n; ++i) std::fill_n(concatenated.data.begin() + i * width + h * d, d, 0.0f);
  }
}

}  // namespace

std::int64_t relative_bucket(std::int64_t distance, bool bidirectional, std::int64_t buckets,
                             std::int64_t max_distance) {
  std::int64_t bucket = 0, n = 0;
  if (bidirectional) {
    buckets /= 2;
    if (distance > 0) bucket = buckets;
    n = distance < 0 ? -distance : distance;
  } else {
    n = distance < 0 ? -distance : 0;
  }
  const std::int64_t exact = buckets / 2;
  if (n < exact) return bucket + n;
  // float32 throughout, the ratio of logarithms rounded where T5's float32 tensors round it
  const float log_ratio = std::log(static_cast<float>(n) / static_cast<float>(exact)) /
                          static_cast<float>(std::log(double(max_distance) / double(exact)));
  const auto large = exact + static_cast<std::int64_t>(log_ratio * static_cast<float>(buckets - exact));
  return bucket + std::min(large, buckets - 1);
}

std::vector<std::uint8_t> padding_mask(const std::vector<std::uint8_t>& attention_mask, std::size_t n) {
  if (attention_mask.empty()) return {};
  if (attention_mask.size() < n)
    throw Error("run: attentionMask has " + std::to_string(attention_mask.size()) + " entries but there are " +
                std::to_string(n) + " tokens");
  std::vector<std::uint8_t> keep(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) keep[i * n + j] = attention_mask[j] ? 1 : 0;
  return keep;
}

std::vector<float*> Pass::every_layer(float* base, std::int64_t layers, std::int64_t per_layer) {
  std::vector<float*> maps(static_cast<std::size_t>(layers));
  for (std::int64_t l = 0; l < layers; ++l) maps[l] = base + l * per_layer;
  return maps;
}

Cache::Cache(const Config& c, bool queries)
    : k(static_cast<std::size_t>(c.layers)),
      v(static_cast<std::size_t>(c.layers)),
      q(queries ? static_cast<std::size_t>(c.layers) : 0) {}

void Cache::reserve(const Config& c, std::int64_t rows) {
  if (rows <= capacity) return;
  const std::int64_t grown = std::max(rows, std::min(c.max_tokens, 2 * capacity));
  for (auto [per_layer, heads] : {std::pair{&k, c.kv_heads}, {&v, c.kv_heads}, {&q, c.heads}})
    for (std::size_t l = 0; l < per_layer->size(); ++l) {  // [heads, capacity, hd] → [heads, grown, hd]
      std::vector<float>& t = (*per_layer)[l];
      const std::int64_t hd = c.head_dim_of(static_cast<std::int64_t>(l));
      std::vector<float> wider(static_cast<std::size_t>(heads * grown * hd));
      for (std::int64_t h = 0; h < heads && length > 0; ++h)
        std::copy_n(t.begin() + h * capacity * hd, length * hd, wider.begin() + h * grown * hd);
      t = std::move(wider);
    }
  capacity = grown;
}

void Cache::take_prefix(const Config& c, const Cache& from, std::int64_t rows) {
  reserve(c, std::min(c.max_tokens, 2 * rows));  // room for the generation to come, without a copy at its first token
  for (std::size_t l = 0; l < k.size(); ++l) {
    const std::int64_t hd = c.head_dim_of(static_cast<std::int64_t>(l));
    for (auto [to, of] : {std::pair{&k[l], &from.k[l]}, {&v[l], &from.v[l]}})
      for (std::int64_t h = 0; h < c.kv_heads; ++h)  // [KV, capacity, hd] each, capacities apart
        std::copy_n(of->begin() + h * from.capacity * hd, rows * hd, to->begin() + h * capacity * hd);
  }
  length = rows;
}

Stack::Stack(Config config, Weights weights) : c_(std::move(config)), w_(std::move(weights)) {}

MultiHeadParams Stack::attention_weights(std::int64_t layer) const {
  const Block& b = w_.blocks.at(static_cast<std::size_t>(layer));
  // The packed matrices unpacked to float32 on first request; the views stay valid while the stack lives.
  auto& u = unpacked_[layer];
  if (u.empty())
    for (const Weight* w : {&b.wq, &b.wk, &b.wv, &b.wo}) u.push_back((*w)->unpack());
  return {u[0].view(), u[1].view(), u[2].view(), u[3].view(), b.bq.view(), b.bk.view(), b.bv.view(), b.bo.view()};
}

Matrix Stack::linear(const Runtime& rt, const Matrix& x, const Weight& w, const Tensor& b) {
  Matrix out(x.rows(), w->n());
  kernels::gemm(rt.pool(), ConstMatrixMap(x.data(), x.rows(), x.cols()), ConstMatrixMap(w->matrix(), w->k(), w->n()),
                b.empty() ? nullptr : b.data.data(), MatrixMap(out.data(), out.rows(), out.cols()), w.get());
  return out;
}

void Stack::norm(const Runtime& rt, Matrix& x, const Tensor& w, const Tensor& b, NormScales* scales) const {
  if (w.empty()) return;  // a model without this norm (BERT's final, post-normed blocks)
  if (scales) {
    scales->scale.resize(static_cast<std::size_t>(x.rows()));
    if (c_.norm == Norm::layer) scales->mean.resize(scales->scale.size());
  }
  rt.parallel_rows(x.rows(), [&](std::int64_t begin, std::int64_t end) {
    if (c_.norm == Norm::rms) {
      rms_norm(x.row(begin).data(), end - begin, x.cols(), w, c_.eps, scales ? scales->scale.data() + begin : nullptr);
    } else {
      Matrix rows = x.middleRows(begin, end - begin);
      for (std::int64_t i = begin; scales && i < end; ++i) {  // as ops::layer_norm computes them
        const float mean = x.row(i).mean();
        const float var = (x.row(i).array() - mean).square().mean();
        scales->mean[i] = mean;
        scales->scale[i] = 1.0f / std::sqrt(var + c_.eps);
      }
      x.middleRows(begin, end - begin) = ops::layer_norm(rows, w, b, c_.eps);
    }
  });
}

void Stack::final_norm(const Runtime& rt, Matrix& x, NormScales* scales) const {
  norm(rt, x, w_.final_norm, w_.final_norm_bias, scales);
}

Matrix Stack::run(const Runtime& rt, Cache& cache, Matrix x, const Pass& pass) const {
  const Config& c = c_;
  const std::int64_t n = x.rows(), p0 = cache.length, total = p0 + n;
  if (x.cols() != c.width_of(0))
    throw Error("the stack's input must be [n, " + std::to_string(c.width_of(0)) + "], got [" + std::to_string(n) +
                ", " + std::to_string(x.cols()) + "]");
  if (c.cross_attention && !pass.memory) throw Error("a stack with cross-attention needs the memory it attends to");
  cache.reserve(c, total);
  ThreadPool& pool = rt.pool();
  std::vector<float> bias;  // relative positions' [H, n, total], the same for every layer
  const Mask mask = self_mask(p0, n, pass.mask, bias);
  LayerTap* tap = pass.tap;
  LayerScales scales;
  LayerScales* s = tap && tap->scales() ? &scales : nullptr;
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const Block& b = w_.blocks[static_cast<std::size_t>(l)];
    const std::int64_t hd = c.head_dim_of(l);
    const Matrix input = tap ? x : Matrix();  // the tap's view of the layer's input
    Matrix h = x;
    if (c.placement != Placement::post) norm(rt, h, b.attn_norm, b.attn_norm_bias, s ? &s->attn : nullptr);
    const Matrix normed = tap ? h : Matrix();  // the tap's view of what the projections multiply
    Tensor q({c.heads, n, hd}), k({c.kv_heads, n, hd}), v({c.kv_heads, n, hd});
    const auto projection = [&](std::int64_t heads, const Weight& w, const Tensor& bias, Tensor& out) {
      return kernels::HeadProjection{heads,
                                     ConstMatrixMap(h.data(), h.rows(), h.cols()),
                                     ConstMatrixMap(w->matrix(), w->k(), w->n()),
                                     bias.empty() ? nullptr : bias.data.data(),
                                     w.get(),
                                     out.data.data()};
    };
    kernels::project_heads(pool, {projection(c.heads, b.wq, b.bq, q), projection(c.kv_heads, b.wk, b.bk, k),
                                  projection(c.kv_heads, b.wv, b.bv, v)});
    if (c.qk_norm) {
      if (s) {
        s->q.scale.resize(static_cast<std::size_t>(c.heads * n));
        s->k.scale.resize(static_cast<std::size_t>(c.kv_heads * n));
      }
      rms_norm(q.data.data(), c.heads * n, hd, b.q_norm, c.eps, s ? s->q.scale.data() : nullptr);
      rms_norm(k.data.data(), c.kv_heads * n, hd, b.k_norm, c.eps, s ? s->k.scale.data() : nullptr);
    }
    if (c.positions == Positions::rope) {
      const std::vector<double>& inv_freq = c.window[l] ? c.inv_freq_local : c.inv_freq_global;
      rope(q.data.data(), c.heads, n, hd, p0, inv_freq, c.rope_attention_factor);
      rope(k.data.data(), c.kv_heads, n, hd, p0, inv_freq, c.rope_attention_factor);
    }
    for (std::int64_t g = 0; g < c.kv_heads; ++g) {  // rows p0 .. p0+n of the cache
      std::copy_n(k.data.begin() + g * n * hd, n * hd, cache.k[l].begin() + (g * cache.capacity + p0) * hd);
      std::copy_n(v.data.begin() + g * n * hd, n * hd, cache.v[l].begin() + (g * cache.capacity + p0) * hd);
    }
    if (!cache.q.empty())
      for (std::int64_t g = 0; g < c.heads; ++g)
        std::copy_n(q.data.begin() + g * n * hd, n * hd, cache.q[l].begin() + (g * cache.capacity + p0) * hd);
    Tensor concat({n, c.heads * hd});  // the heads side by side, as W_O multiplies them
    attend(pool, cache, l, q.view(), p0, mask, concat.data.data(), pass.maps.empty() ? nullptr : pass.maps[l]);
    if (pass.maps_ready) pass.maps_ready(l);
    if (pass.ablate) ablate_heads(*pass.ablate, l, c.heads, concat);
    Matrix a = linear(rt, concat.matrix(), b.wo, b.bo);
    if (c.placement == Placement::sandwich) norm(rt, a, b.post_attn_norm, {}, s ? &s->attn_out : nullptr);
    if (c.layer_scale) scale_columns(a, b.attn_scale);
    if (b.w_residual) x = linear(rt, x, b.w_residual, b.b_residual);  // the stream widens (USE-lite's first block)
    x += a;
    if (c.placement == Placement::post) norm(rt, x, b.attn_norm, b.attn_norm_bias, s ? &s->attn : nullptr);
    Matrix crossed;
    Tensor cq;
    if (c.cross_attention) {
      h = x;
      if (c.placement != Placement::post) norm(rt, h, b.cross_norm, b.cross_norm_bias, s ? &s->cross : nullptr);
      cq = Tensor({c.heads, n, hd});
      kernels::project_heads(pool, {projection(c.heads, b.wcq, b.bcq, cq)});
      // Its heads apart from the self-attention's, which the tap still shows.
      Tensor cross_heads({n, c.heads * hd});
      cross_attend(pool, *pass.memory, l, cq.view(), cross_heads.data.data(),
                   pass.cross_maps.empty() ? nullptr : pass.cross_maps[l]);
      crossed = linear(rt, cross_heads.matrix(), b.wco, b.bco);
      x += crossed;
      if (c.placement == Placement::post) norm(rt, x, b.cross_norm, b.cross_norm_bias, s ? &s->cross : nullptr);
    }
    h = x;
    if (c.placement != Placement::post) norm(rt, h, b.ffn_norm, b.ffn_norm_bias, s ? &s->ffn : nullptr);
    Matrix f = linear(rt, h, b.w_up, b.b_up);
    if (c.gated) {
      Matrix gate = linear(rt, h, b.w_gate, b.b_gate);
      rt.parallel_rows(n, [&](std::int64_t begin, std::int64_t end) {
        activate(c.act, gate.middleRows(begin, end - begin));
        f.middleRows(begin, end - begin) =
            f.middleRows(begin, end - begin).cwiseProduct(gate.middleRows(begin, end - begin));
      });
    } else {
      rt.parallel_rows(
          n, [&](std::int64_t begin, std::int64_t end) { activate(c.act, f.middleRows(begin, end - begin)); });
    }
    Matrix down = linear(rt, f, b.w_down, b.b_down);
    if (c.placement == Placement::sandwich) norm(rt, down, b.post_ffn_norm, {}, s ? &s->mlp_out : nullptr);
    if (c.layer_scale) scale_columns(down, b.ffn_scale);
    x += down;
    if (c.placement == Placement::post) norm(rt, x, b.ffn_norm, b.ffn_norm_bias, s ? &s->ffn : nullptr);
    if (tap) {
      // Post-LN stacks normalize the sums after the sublayers: their scales say by how much.
      LayerView view;
      view.stack = pass.stack;
      view.layer = l;
      view.p0 = p0;
      view.input = &input;
      view.normed = &normed;
      view.q = &q, view.k = &k, view.v = &v;
      view.heads = &concat;
      view.attention = &a;
      view.cross = c.cross_attention ? &crossed : nullptr;
      view.cross_q = c.cross_attention ? &cq : nullptr;
      view.mlp = &down;
      view.output = &x;
      view.scales = s;
      tap->layer(view);
    }
  }
  cache.length = total;
  if (!tap) {
    final_norm(rt, x);
    return x;
  }
  const Matrix before = x;
  NormScales end_scales;
  final_norm(rt, x, &end_scales);
  StackEnd end;
  end.stack = pass.stack;
  end.p0 = p0;
  end.output = &before;
  end.normed = &x;
  end.scales = &end_scales;
  tap->end(end);
  return x;
}

void Stack::attend(ThreadPool& pool, const Cache& cache, std::int64_t l, const TensorView& q, std::int64_t p0,
                   const Mask& mask, float* concat, float* weights) const {
  const Config& c = c_;
  const std::int64_t n = q.shape[1], total = p0 + n, hd = c.head_dim_of(l);
  AttentionDims dims{c.heads, n, total, hd, hd, true};
  dims.group = c.heads / c.kv_heads;
  dims.kv_capacity = cache.capacity;
  kernels::ScoreRule rule;
  rule.scale = c.scale_of(l);
  rule.causal = c.causal;
  rule.offset = p0;
  rule.window = c.window[l];
  rule.softcap = c.attn_softcap;
  rule.mask = mask;
  kernels::attention(pool, q, TensorView(cache.k[l].data(), {c.kv_heads, cache.capacity, hd}),
                     TensorView(cache.v[l].data(), {c.kv_heads, cache.capacity, hd}), dims, rule, concat,
                     kernels::OutputLayout::side_by_side(dims), weights);
}

Mask Stack::self_mask(std::int64_t p0, std::int64_t n, const Mask& padding, std::vector<float>& storage) const {
  const Config& c = c_;
  if (c.positions != Positions::relative) return padding;
  const std::int64_t total = p0 + n, heads = c.heads;
  // bias by distance j − i, from −(total − 1) to n − 1, per head: [H, total + n − 1]
  const std::int64_t span = total + n - 1;
  std::vector<float> by_distance(static_cast<std::size_t>(heads * span));
  for (std::int64_t t = 0; t < span; ++t) {
    const std::int64_t bucket =
        relative_bucket(t - (total - 1), !c.causal, c.relative_buckets, c.relative_max_distance);
    for (std::int64_t h = 0; h < heads; ++h) by_distance[h * span + t] = w_.relative_bias.data[bucket * heads + h];
  }
  storage.resize(static_cast<std::size_t>(heads * n * total));
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < n; ++i) {
      float* row = storage.data() + (h * n + i) * total;
      // key j's distance j − (p0 + i) sits at t = j − p0 − i + total − 1
      std::copy_n(by_distance.data() + h * span + (total - 1 - p0 - i), total, row);
      if (padding.kind == Mask::Kind::keep) {
        const std::uint8_t* keep = padding.keep + i * total;
        for (std::int64_t j = 0; j < total; ++j)
          if (!keep[j]) row[j] = -std::numeric_limits<float>::infinity();
      }
    }
  return Mask::additive_mask(storage.data(), {heads, n, total});
}

void Stack::cross_attend(ThreadPool& pool, const Memory& memory, std::int64_t l, const TensorView& q, float* concat,
                         float* weights) const {
  const Config& c = c_;
  const std::int64_t n = q.shape[1], m = memory.length, hd = c.head_dim_of(l);
  AttentionDims dims{c.heads, n, m, hd, hd, true};
  kernels::ScoreRule rule;
  rule.scale = c.scale_of(l);
  kernels::attention(pool, q, TensorView(memory.k[l].data(), {c.heads, m, hd}),
                     TensorView(memory.v[l].data(), {c.heads, m, hd}), dims, rule, concat,
                     kernels::OutputLayout::side_by_side(dims), weights);
}

Memory Stack::memory(const Runtime& rt, const Matrix& encoded) const {
  const Config& c = c_;
  if (!c.cross_attention) throw Error("this stack has no cross-attention to give a memory to");
  if (encoded.cols() != c.d_model)
    throw Error("the memory must be [m, " + std::to_string(c.d_model) + "], got [" + std::to_string(encoded.rows()) +
                ", " + std::to_string(encoded.cols()) + "]");
  Memory memory;
  memory.length = encoded.rows();
  const std::int64_t m = memory.length;
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const Block& b = w_.blocks[static_cast<std::size_t>(l)];
    const std::int64_t size = c.heads * m * c.head_dim_of(l);
    std::vector<float>& k = memory.k.emplace_back(static_cast<std::size_t>(size));
    std::vector<float>& v = memory.v.emplace_back(static_cast<std::size_t>(size));
    const auto projection = [&](const Weight& w, const Tensor& bias, float* out) {
      return kernels::HeadProjection{c.heads,
                                     ConstMatrixMap(encoded.data(), m, encoded.cols()),
                                     ConstMatrixMap(w->matrix(), w->k(), w->n()),
                                     bias.empty() ? nullptr : bias.data.data(),
                                     w.get(),
                                     out};
    };
    kernels::project_heads(rt.pool(), {projection(b.wck, b.bck, k.data()), projection(b.wcv, b.bcv, v.data())});
  }
  return memory;
}

void Stack::layer_maps(const Runtime& rt, const Cache& cache, std::int64_t l, const Mask& mask, float* out) const {
  const Config& c = c_;
  const std::int64_t n = cache.length, hd = c.head_dim_of(l);
  Tensor q({c.heads, n, hd});  // the cached queries [H, capacity, hd], packed to n rows
  for (std::int64_t g = 0; g < c.heads; ++g)
    std::copy_n(cache.q[l].begin() + g * cache.capacity * hd, n * hd, q.data.begin() + g * n * hd);
  Tensor concat({n, c.heads * hd});
  std::vector<float> bias;
  attend(rt.pool(), cache, l, q.view(), 0, self_mask(0, n, mask, bias), concat.data.data(), out);
}

}  // namespace attnscope::transformer
