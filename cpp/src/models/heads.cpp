#include "models/heads.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <numeric>

#include "kernels/gemm.hpp"
#include "models/ops.hpp"
#include "models/sampling.hpp"
#include "models/stack.hpp"

namespace attnscope::transformer {

namespace {

constexpr std::int64_t kTopLabels = 5;

}  // namespace

Heads::Heads(HeadConfig config, HeadWeights weights, Weight embed, std::int64_t d_model)
    : c_(std::move(config)), w_(std::move(weights)), embed_(std::move(embed)), d_(d_model) {}

Matrix Heads::logits(const Runtime& rt, const Matrix& normed) const {
  Matrix out = c_.head_scale == 1.0f ? Stack::linear(rt, normed, head(), w_.logits_bias)
                                     : Stack::linear(rt, normed * c_.head_scale, head(), w_.logits_bias);
  if (c_.final_softcap > 0.0f) out = (out.array() / c_.final_softcap).tanh() * c_.final_softcap;
  return out;
}

std::int64_t Heads::greedy(const Runtime& rt, const Matrix& normed, const std::vector<std::int32_t>& excluded) const {
  // Natively Eigen multiplies the head, in an order the screen's panels do not repeat.
  if (!kernels::kPacksB || c_.final_softcap > 0.0f || head()->precision() != kernels::Precision::f32 ||
      head()->n() != c_.vocab)  // every column of the head a token's logit
    return -1;
  const float* bias = w_.logits_bias.empty() ? nullptr : w_.logits_bias.data.data();
  std::call_once(screen_once_, [&] {
    try {
      screen_ = std::make_unique<kernels::ScreenedArgmax>(rt.pool(), *head(), bias);
    } catch (const std::bad_alloc&) {  // no room for the 8-bit copy: every greedy step takes the whole logits
    }
  });
  if (!screen_) return -1;
  if (c_.head_scale == 1.0f) return screen_->argmax(rt.pool(), normed.data(), excluded);
  const Matrix scaled = normed * c_.head_scale;  // as logits() scales it
  return screen_->argmax(rt.pool(), scaled.data(), excluded);
}

void Heads::top_k(const Runtime& rt, const Matrix& normed, std::int64_t k, std::int32_t* ids, float* probs) const {
  const std::int64_t n = normed.rows();
  const std::int64_t block = std::max<std::int64_t>(16, kLogitBlockBytes / (4 * c_.vocab));
  for (std::int64_t b = 0; b < n; b += block) {
    const std::int64_t rows = std::min(block, n - b);
    top_k_of(rt, logits(rt, normed.middleRows(b, rows)), 0, rows, k, ids + b * k, probs + b * k);
  }
}

void Heads::top_k_of(const Runtime& rt, const Matrix& logits, std::int64_t first, std::int64_t rows, std::int64_t k,
                     std::int32_t* ids, float* probs) {
  rt.parallel_rows(rows, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      sampling::top_k_probabilities(logits.row(first + i).data(), logits.cols(), k, ids + i * k, probs + i * k);
  });
}

void Heads::read_out(const Runtime& rt, const Matrix& hidden, RunResult& r) const {
  // The pooler: tanh(x[0]·W + b) (BERT, ViT), or l2_normalize(tanh(mean_rows(x)·W + b)) (USE-lite). BERT
  // checkpoints may leave it out.
  if (c_.pooler != Pooler::none && w_.pool) {
    const Matrix reduced =
        c_.pooler == Pooler::first_tanh ? Matrix(hidden.topRows(1)) : Matrix(hidden.colwise().mean());
    Matrix e = Stack::linear(rt, reduced, w_.pool, w_.pool_bias).array().tanh().matrix();
    if (c_.pooler == Pooler::mean_tanh_l2) e /= std::sqrt(std::max(e.squaredNorm(), 1e-12f));
    r.embedding = ops::to_tensor(e);
    r.embedding.shape = {e.cols()};
  } else if (!w_.pool_norm.empty()) {  // CLIP: post_layernorm(x[0]), and the image embedding projected from it
    const Matrix pooled = ops::layer_norm(hidden.topRows(1), w_.pool_norm, w_.pool_norm_bias, c_.pool_eps);
    r.embedding = ops::to_tensor(pooled);
    r.embedding.shape = {d_};
    if (w_.projection) {
      r.image_embedding = ops::to_tensor(Stack::linear(rt, pooled, w_.projection, {}));
      r.image_embedding.shape = {c_.projection};
    }
  }
  if (c_.classifier == Classifier::none) return;
  const Matrix first = hidden.topRows(1);
  Matrix logits = Stack::linear(rt, first, w_.classifier, w_.classifier_bias);
  if (c_.classifier == Classifier::cls_distillation)  // DeiT with its teacher: the two heads' mean
    logits = (logits +
              Stack::linear(rt, hidden.middleRows(1, 1), w_.distillation_classifier, w_.distillation_classifier_bias)) /
             2.0f;
  r.label_logits = ops::to_tensor(logits);
  r.label_logits.shape = {logits.cols()};
  // Softmax in double, then the most likely, best first (ties by id).
  const std::int64_t labels = logits.cols();
  const double top = logits.maxCoeff();
  std::vector<double> p(static_cast<std::size_t>(labels));
  double sum = 0.0;
  for (std::int64_t i = 0; i < labels; ++i) sum += p[i] = std::exp(double(logits(0, i)) - top);
  std::vector<std::int32_t> order(static_cast<std::size_t>(labels));
  std::iota(order.begin(), order.end(), 0);
  const std::int64_t k = std::min(kTopLabels, labels);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](std::int32_t a, std::int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  for (std::int64_t i = 0; i < k; ++i) {
    const std::int32_t id = order[i];
    r.labels.push_back({id, c_.labels[static_cast<std::size_t>(id)], static_cast<float>(p[id] / sum)});
  }
}

}  // namespace attnscope::transformer
