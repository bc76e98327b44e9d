// Runtime: validation, then the kernels. Names in messages are the JS API's.
#include <algorithm>
#include <cmath>

#include "attnscope/attention.hpp"
#include "kernels/kernels.hpp"

namespace attnscope {

namespace {

float resolve_scale(const char* op, const std::optional<float>& scale, float fallback) {
  const float s = scale.value_or(fallback);
  if (!std::isfinite(s)) throw Error(std::string(op) + ": scale must be a finite number, got " + std::to_string(s));
  return s;
}

Shape result_shape(const AttentionDims& d, std::int64_t cols) {
  return d.heads_axis ? Shape{d.heads, d.n_q, cols} : Shape{d.n_q, cols};
}

// Where the kernel writes the weights: nowhere (not returned, or handed to the options' sink), the options'
// buffer, or `result`, made here with `shape` (not zeroed: the kernel writes every value).
template <typename Options>
float* weights_destination(const Options& o, Tensor& result, Shape shape) {
  if (!o.return_weights || o.weights_sink) return nullptr;
  if (o.weights_out) return o.weights_out;
  result = Tensor::unfilled(std::move(shape));
  return result.data.data();
}

template <typename Options>
const WeightsSink* sink_of(const Options& o) {
  return o.return_weights && o.weights_sink ? &o.weights_sink : nullptr;
}

AttentionResult run_attention(const char* op, ThreadPool& pool, const TensorView& q, const TensorView& k,
                              const TensorView& v, const AttentionOptions& o, float default_scale) {
  const AttentionDims d = check_attention_inputs(op, q, k, v, o.mask);
  check_budget(op, attention_bytes(d, o, pool.size()));
  const float scale = resolve_scale(op, o.scale, default_scale);
  check_attention_values(op, q, k, v, o.mask);

  AttentionResult r;
  r.output = Tensor(result_shape(d, d.d_v));
  float* weights = weights_destination(o, r.weights, result_shape(d, d.n_k));
  kernels::ScoreRule rule;
  rule.scale = scale;
  rule.causal = o.causal;
  rule.mask = o.mask;
  kernels::attention(pool, q, k, v, d, rule, r.output.data.data(), kernels::OutputLayout::stacked(d), weights,
                     sink_of(o));
  return r;
}

}  // namespace

Runtime::Runtime(int threads) {
  if (threads < 1 || threads > 64) throw Error("Runtime: threads must be from 1 to 64, got " + std::to_string(threads));
  pool_ = std::make_unique<ThreadPool>(threads);
}

Runtime::~Runtime() = default;

int Runtime::threads() const { return pool_->size(); }

void Runtime::set_aside(std::function<void()> piece) const { pool_->set_aside(std::move(piece)); }
void Runtime::run_set_aside() const { pool_->run_set_aside(); }
void Runtime::drop_set_aside() const { pool_->drop_set_aside(); }

AttentionResult Runtime::attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                   const AttentionOptions& options) const {
  const float d_k = q.rank() >= 2 ? static_cast<float>(q.cols()) : 1.0f;
  return run_attention("attention", *pool_, q, k, v, options, 1.0f / std::sqrt(d_k));
}

AttentionResult Runtime::self_attention(const TensorView& x, AttentionOptions options) const {
  return run_attention("selfAttention", *pool_, x, x, x, options, 1.0f);
}

MultiHeadResult Runtime::multi_head_attention(const TensorView& x, const MultiHeadParams& p,
                                              const MultiHeadOptions& o) const {
  const char* op = "multiHeadAttention";
  check_multi_head_shapes(op, x.shape, p, o);
  check_budget(op, multi_head_bytes(x.shape, p, o, pool_->size()));
  for (const auto& [name, t] : {std::pair{"x", &x},
                                {"wq", &p.wq},
                                {"wk", &p.wk},
                                {"wv", &p.wv},
                                {"wo", &p.wo},
                                {"bq", &p.bq},
                                {"bk", &p.bk},
                                {"bv", &p.bv},
                                {"bo", &p.bo},
                                {"context", &o.context}})
    if (!t->empty() && !t->packed) check_finite(op, name, t->data, t->size());  // model weights: checked at load
  if (o.mask.kind == Mask::Kind::additive)
    check_finite(op, "mask", o.mask.additive, element_count(o.mask.shape), /*allow_negative_infinity=*/true);

  ThreadPool& pool = *pool_;
  const TensorView& c = o.context.empty() ? x : o.context;
  const std::int64_t n = x.rows(), m = c.rows(), heads = o.heads;
  const AttentionDims d{heads, n, m, p.wq.cols() / heads, p.wv.cols() / heads, true};
  // q, k, v [heads, rows, d] straight from the GEMM: head h is columns h·d … of each projection.
  Tensor q({heads, n, d.d_k}), k({heads, m, d.d_k}), v({heads, m, d.d_v});
  const auto projection = [&](const TensorView& in, const TensorView& w, const TensorView& b, Tensor& out) {
    return kernels::HeadProjection{heads,    in.head(0),     w.head(0), b.empty() ? nullptr : b.data,
                                   w.packed, out.data.data()};
  };
  // W_O goes with them: on more than one thread a one-shot call with many rows reads it from JS while the last
  // projection's GEMMs run.
  kernels::project_heads(pool,
                         {projection(x, p.wq, p.bq, q), projection(c, p.wk, p.bk, k), projection(c, p.wv, p.bv, v)},
                         p.wo.empty() ? nullptr : p.wo.packed, n);

  kernels::ScoreRule rule;
  rule.scale = 1.0f / std::sqrt(static_cast<float>(d.d_k));
  rule.causal = o.causal;
  rule.mask = o.mask;
  MultiHeadResult r;
  float* weights = weights_destination(o, r.weights, {heads, n, m});
  // The heads side by side, [n, heads·d_v]: what W_O multiplies, or the output without it.
  Matrix concat(p.wo.empty() ? 0 : n, heads * d.d_v);
  if (p.wo.empty()) r.output = Tensor({n, heads * d.d_v});
  kernels::attention(pool, q.view(), k.view(), v.view(), d, rule, p.wo.empty() ? r.output.data.data() : concat.data(),
                     kernels::OutputLayout::side_by_side(d), weights, sink_of(o));
  if (!p.wo.empty()) {
    r.output = Tensor({n, x.cols()});
    kernels::gemm(pool, ConstMatrixMap(concat.data(), concat.rows(), concat.cols()), p.wo.head(0),
                  p.bo.empty() ? nullptr : p.bo.data, r.output.head(0), p.wo.packed);
  }
  if (o.return_projections) {
    r.q = std::move(q);
    r.k = std::move(k);
    r.v = std::move(v);
  }
  return r;
}

void Runtime::parallel_rows(std::int64_t rows, const std::function<void(std::int64_t, std::int64_t)>& fn) const {
  const std::int64_t threads = pool_->size();
  const std::int64_t block = std::max<std::int64_t>(8, (rows + 2 * threads - 1) / (2 * threads));
  pool_->parallel_for(static_cast<std::size_t>((rows + block - 1) / block), [&](std::size_t task, int) {
    const std::int64_t begin = static_cast<std::int64_t>(task) * block;
    fn(begin, std::min(rows, begin + block));
  });
}

Matrix Runtime::linear(const TensorView& x, const TensorView& w, const TensorView& b) const {
  const char* op = "linear";
  check_shape(op, "x", x.shape, 2, 2);
  check_shape(op, "w", w.shape, 2, 2);
  if (w.shape[0] != x.shape[1])
    throw Error(std::string(op) + ": w has shape " + format_shape(w.shape) + " but x has shape " +
                format_shape(x.shape));
  if (!b.empty() && b.shape != Shape{w.shape[1]})
    throw Error(std::string(op) + ": b has shape " + format_shape(b.shape) + " but w has shape " +
                format_shape(w.shape));
  Matrix out(x.shape[0], w.shape[1]);
  kernels::gemm(*pool_, x.head(0), w.head(0), b.empty() ? nullptr : b.data,
                MatrixMap(out.data(), out.rows(), out.cols()), w.packed);
  return out;
}

}  // namespace attnscope
