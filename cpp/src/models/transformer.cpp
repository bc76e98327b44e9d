// The forward pass (see transformer.hpp), run on new tokens after those already in a
// KV cache: a whole prompt (or an encoder's whole text) at once, or one generated token at a time.
#include "models/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "kernels/gemm.hpp"
#include "kernels/kernels.hpp"
#include "models/encoder_decoder.hpp"
#include "models/ops.hpp"
#include "models/sampling.hpp"
#include "models/transformer_model.hpp"
#include "models/vision_model.hpp"
#include "models/weights.hpp"

namespace attnscope::transformer {

namespace {

// y = x / √(mean(x²) + eps) · w, per row of x [rows, width], in place.
void rms_norm(float* x, std::int64_t rows, std::int64_t width, const Tensor& w, float eps) {
  for (std::int64_t i = 0; i < rows; ++i) {
    float* r = x + i * width;
    double sum = 0.0;
    for (std::int64_t j = 0; j < width; ++j) sum += double(r[j]) * r[j];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum / double(width) + eps));
    for (std::int64_t j = 0; j < width; ++j) r[j] = r[j] * inv * w.data[j];
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

TransformerModel::TransformerModel(Config config, Weights weights, std::unique_ptr<Tokenizer> tokenizer)
    : config_(std::move(config)), w_(std::move(weights)) {
  tokenizer_ = std::move(tokenizer);
  info_.name = config_.name;
  info_.architecture = config_.architecture;
  info_.layers = config_.layers;
  info_.heads = config_.heads;
  info_.kv_heads = config_.kv_heads;
  info_.head_dim = config_.head_dim;
  info_.d_model = config_.d_model;
  info_.max_tokens = config_.max_tokens;
  info_.vocab_size = config_.vocab;
  info_.causal = config_.causal;
  info_.language_model = config_.language_model;
  info_.weights_dtype = w_.dtype;
  info_.window = config_.window;
  info_.eos = config_.eos;
}

MultiHeadParams TransformerModel::attention_weights(std::int64_t layer) const {
  const Block& b = w_.blocks.at(static_cast<std::size_t>(layer));
  // The packed matrices unpacked to float32 on first request; the views stay valid while the model lives.
  auto& u = unpacked_[layer];
  if (u.empty())
    for (const Weight* w : {&b.wq, &b.wk, &b.wv, &b.wo}) u.push_back((*w)->unpack());
  return {u[0].view(), u[1].view(), u[2].view(), u[3].view(), b.bq.view(), b.bk.view(), b.bv.view(), b.bo.view()};
}

Matrix TransformerModel::linear(const Runtime& rt, const Matrix& x, const Weight& w, const Tensor& b) const {
  Matrix out(x.rows(), w->n());
  kernels::gemm(rt.pool(), ConstMatrixMap(x.data(), x.rows(), x.cols()), ConstMatrixMap(w->matrix(), w->k(), w->n()),
                b.empty() ? nullptr : b.data.data(), MatrixMap(out.data(), out.rows(), out.cols()), w.get());
  return out;
}

void TransformerModel::norm(const Runtime& rt, Matrix& x, const Tensor& w, const Tensor& b) const {
  if (w.empty()) return;  // a model without this norm (BERT's final, post-normed blocks)
  rt.parallel_rows(x.rows(), [&](std::int64_t begin, std::int64_t end) {
    if (config_.norm == Norm::rms) {
      rms_norm(x.row(begin).data(), end - begin, x.cols(), w, config_.eps);
    } else {
      Matrix rows = x.middleRows(begin, end - begin);
      x.middleRows(begin, end - begin) = ops::layer_norm(rows, w, b, config_.eps);
    }
  });
}

Matrix TransformerModel::logits(const Runtime& rt, const Matrix& normed) const {
  Matrix out = config_.head_scale == 1.0f ? linear(rt, normed, w_.head(), w_.logits_bias)
                                          : linear(rt, normed * config_.head_scale, w_.head(), w_.logits_bias);
  if (config_.final_softcap > 0.0f) out = (out.array() / config_.final_softcap).tanh() * config_.final_softcap;
  return out;
}

std::int64_t TransformerModel::greedy(const Runtime& rt, const Matrix& normed,
                                      const std::vector<std::int32_t>& excluded) const {
  // Natively Eigen multiplies the head, in an order the screen's panels do not repeat.
  if (!kernels::kPacksB || config_.final_softcap > 0.0f || w_.head()->precision() != kernels::Precision::f32 ||
      w_.head()->n() != config_.vocab)  // every column of the head a token's logit
    return -1;
  const float* bias = w_.logits_bias.empty() ? nullptr : w_.logits_bias.data.data();
  std::call_once(screen_once_, [&] {
    try {
      screen_ = std::make_unique<kernels::ScreenedArgmax>(rt.pool(), *w_.head(), bias);
    } catch (const std::bad_alloc&) {  // no room for the 8-bit copy: every greedy step takes the whole logits
    }
  });
  if (!screen_) return -1;
  if (config_.head_scale == 1.0f) return screen_->argmax(rt.pool(), normed.data(), excluded);
  const Matrix scaled = normed * config_.head_scale;  // as logits() scales it
  return screen_->argmax(rt.pool(), scaled.data(), excluded);
}

Tensor TransformerModel::logits(const Runtime& rt, const Tensor& hidden) const {
  if (!config_.language_model) return Model::logits(rt, hidden);  // its error
  const std::int64_t d = config_.d_model;
  if (hidden.shape.size() != 2 || hidden.shape[0] < 1 || hidden.shape[1] != d)
    throw Error("logits: hidden must be [rows, " + std::to_string(d) + "] (rows ≥ 1, the model's width), got " +
                format_shape(hidden.shape));
  check_budget("logits", 4.0 * double(hidden.shape[0]) * double(config_.vocab + d));
  for (float x : hidden.data)
    if (!std::isfinite(x)) throw Error("logits: hidden holds a value that is not finite");
  const Matrix normed = ConstMatrixMap(hidden.data.data(), hidden.shape[0], d);
  return ops::to_tensor(logits(rt, normed));
}

Matrix TransformerModel::extend(const Runtime& rt, Cache& cache, const std::int32_t* ids, std::int64_t n,
                                const Extras& e) const {
  return stack(rt, cache, embed(ids, n, cache.length), e);
}

Matrix TransformerModel::stack(const Runtime& rt, Cache& cache, Matrix x, const Extras& e) const {
  const Config& c = config_;
  const std::int64_t n = x.rows(), p0 = cache.length, total = p0 + n;
  if (x.cols() != c.width_of(0))
    throw Error("the stack's input must be [n, " + std::to_string(c.width_of(0)) + "], got [" + std::to_string(n) +
                ", " + std::to_string(x.cols()) + "]");
  if (c.cross_attention && !e.memory) throw Error("a stack with cross-attention needs the memory it attends to");
  cache.reserve(c, total);
  ThreadPool& pool = rt.pool();
  std::vector<float> bias;  // relative positions' [H, n, total], the same for every layer
  const Mask mask = self_mask(p0, n, e.mask, bias);
  const auto row_norms = [&](std::int64_t layer) {  // [layers + 1, n]: row `layer` of e.norms
    for (std::int64_t i = 0; e.norms && i < n; ++i) e.norms[layer * n + i] = x.row(i).norm();
  };
  row_norms(0);
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const Block& b = w_.blocks[static_cast<std::size_t>(l)];
    const std::int64_t hd = c.head_dim_of(l);
    Matrix h = x;
    if (c.placement != Placement::post) norm(rt, h, b.attn_norm, b.attn_norm_bias);
    const bool projections = e.run && e.options && e.options->return_projections;
    if (projections) e.run->inputs.push_back(ops::to_tensor(h));
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
      rms_norm(q.data.data(), c.heads * n, hd, b.q_norm, c.eps);
      rms_norm(k.data.data(), c.kv_heads * n, hd, b.k_norm, c.eps);
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
    attend(pool, cache, l, q.view(), p0, mask, concat.data.data(),
           e.weights ? e.weights + l * c.heads * n * total : nullptr);
    if (e.maps_ready) e.maps_ready(l);
    if (e.options) ablate_heads(*e.options, l, c.heads, concat);
    Matrix a = linear(rt, concat.matrix(), b.wo, b.bo);
    if (c.placement == Placement::sandwich) norm(rt, a, b.post_attn_norm, {});
    if (c.layer_scale) scale_columns(a, b.attn_scale);
    if (b.w_residual) x = linear(rt, x, b.w_residual, b.b_residual);  // the stream widens (USE-lite's first block)
    x += a;
    if (c.placement == Placement::post) norm(rt, x, b.attn_norm, b.attn_norm_bias);
    if (c.cross_attention) {
      h = x;
      if (c.placement != Placement::post) norm(rt, h, b.cross_norm, b.cross_norm_bias);
      Tensor cq({c.heads, n, hd});
      kernels::project_heads(pool, {projection(c.heads, b.wcq, b.bcq, cq)});
      const std::int64_t m = e.memory->length;
      cross_attend(pool, *e.memory, l, cq.view(), concat.data.data(),
                   e.cross_weights ? e.cross_weights + l * c.heads * n * m : nullptr);
      x += linear(rt, concat.matrix(), b.wco, b.bco);
      if (c.placement == Placement::post) norm(rt, x, b.cross_norm, b.cross_norm_bias);
    }
    h = x;
    if (c.placement != Placement::post) norm(rt, h, b.ffn_norm, b.ffn_norm_bias);
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
    if (c.placement == Placement::sandwich) norm(rt, down, b.post_ffn_norm, {});
    if (c.layer_scale) scale_columns(down, b.ffn_scale);
    x += down;
    if (c.placement == Placement::post) norm(rt, x, b.ffn_norm, b.ffn_norm_bias);
    if (projections) {
      e.run->q.push_back(std::move(q));
      e.run->k.push_back(std::move(k));
      e.run->v.push_back(std::move(v));
    }
    if (e.lens) lens_row(rt, x, l, *e.lens);
    row_norms(l + 1);
  }
  cache.length = total;
  norm(rt, x, w_.final_norm, w_.final_norm_bias);
  return x;
}

Matrix TransformerModel::embed(const std::int32_t* ids, std::int64_t n, std::int64_t p0) const {
  const Config& c = config_;
  Matrix x(n, c.width_of(0));
  for (std::int64_t i = 0; i < n; ++i) {
    w_.embed->column(ids[i], x.row(i).data());  // token ids[i]'s embedding: a column of Eᵀ
    x.row(i) *= c.embed_scale;
    if (c.positions == Positions::learned) x.row(i) += w_.position.head(0).row(p0 + i);
    const std::int64_t half = static_cast<std::int64_t>(w_.inv_timescales.data.size());
    for (std::int64_t j = 0; c.positions == Positions::sinusoidal && j < half; ++j) {
      const float t = static_cast<float>(p0 + i) * w_.inv_timescales.data[j];
      x(i, j) += std::sin(t);
      x(i, half + j) += std::cos(t);
    }
  }
  if (!w_.embed_norm.empty()) x = ops::layer_norm(x, w_.embed_norm, w_.embed_norm_bias, c.eps);
  return x;
}

void TransformerModel::attend(ThreadPool& pool, const Cache& cache, std::int64_t l, const TensorView& q,
                              std::int64_t p0, const Mask& mask, float* concat, float* weights) const {
  const Config& c = config_;
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

Mask TransformerModel::self_mask(std::int64_t p0, std::int64_t n, const Mask& padding,
                                 std::vector<float>& storage) const {
  const Config& c = config_;
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

void TransformerModel::cross_attend(ThreadPool& pool, const Memory& memory, std::int64_t l, const TensorView& q,
                                    float* concat, float* weights) const {
  const Config& c = config_;
  const std::int64_t n = q.shape[1], m = memory.length, hd = c.head_dim_of(l);
  AttentionDims dims{c.heads, n, m, hd, hd, true};
  kernels::ScoreRule rule;
  rule.scale = c.scale_of(l);
  kernels::attention(pool, q, TensorView(memory.k[l].data(), {c.heads, m, hd}),
                     TensorView(memory.v[l].data(), {c.heads, m, hd}), dims, rule, concat,
                     kernels::OutputLayout::side_by_side(dims), weights);
}

Memory TransformerModel::memory(const Runtime& rt, const Matrix& encoded) const {
  const Config& c = config_;
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

void TransformerModel::layer_maps(const Runtime& rt, const Cache& cache, std::int64_t l, const Mask& mask,
                                  float* out) const {
  const Config& c = config_;
  const std::int64_t n = cache.length, hd = c.head_dim_of(l);
  Tensor q({c.heads, n, hd});  // the cached queries [H, capacity, hd], packed to n rows
  for (std::int64_t g = 0; g < c.heads; ++g)
    std::copy_n(cache.q[l].begin() + g * cache.capacity * hd, n * hd, q.data.begin() + g * n * hd);
  Tensor concat({n, c.heads * hd});
  std::vector<float> bias;
  attend(rt.pool(), cache, l, q.view(), 0, self_mask(0, n, mask, bias), concat.data.data(), out);
}

void TransformerModel::lens_row(const Runtime& rt, const Matrix& x, std::int64_t layer, LogitLens& lens) const {
  Matrix normed = x;
  norm(rt, normed, w_.final_norm, w_.final_norm_bias);
  Matrix p = logits(rt, normed);
  const std::int64_t n = x.rows();
  rt.parallel_rows(n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      sampling::top_k_probabilities(p.row(i).data(), config_.vocab, 1, &lens.ids[layer * n + i],
                                    &lens.probs[layer * n + i]);
    }
  });
}

std::unique_ptr<Model> make_model(const std::string& architecture, const Json& config, const ModelFiles& files,
                                  const LargeFiles& large, std::unique_ptr<Tokenizer> tokenizer) {
  const auto generation_file = files.find("generation_config.json");
  const Json generation =
      generation_file == files.end() ? Json() : Json::parse(generation_file->second, "generation_config.json");
  Config c = read_config(architecture, config, &generation);
  if (c.tokenizer_required && !tokenizer) throw Error("loadModel: vocab.json is missing from the model's files");
  Weights w = read_weights(c, WeightStore(files, large));
  if (c.encoder) return std::make_unique<EncoderDecoderModel>(c, w, std::move(tokenizer));
  if (c.vision.patch) {
    const auto file = files.find("preprocessor_config.json");
    const Json preprocessor = file == files.end() ? Json() : Json::parse(file->second, "preprocessor_config.json");
    vision::Preprocess steps = vision::read_preprocess(file == files.end() ? nullptr : &preprocessor,
                                                       c.vision.image_height, c.vision.image_width);
    return std::make_unique<VisionModel>(std::move(c), std::move(w), std::move(steps));
  }
  return std::make_unique<TransformerModel>(std::move(c), std::move(w), std::move(tokenizer));
}

Parts parts_of(const Model& model) {
  const auto* m = dynamic_cast<const TransformerModel*>(&model);
  return m ? Parts{&m->config(), &m->weights()} : Parts{nullptr, nullptr};
}

}  // namespace attnscope::transformer
