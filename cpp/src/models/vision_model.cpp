#include "models/vision_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attnscope/error.hpp"
#include "models/ops.hpp"
#include "vision/interpolate.hpp"

namespace attnscope::transformer {

namespace {

constexpr std::int64_t kTopLabels = 5;

}  // namespace

VisionModel::VisionModel(Config config, Weights weights, vision::Preprocess preprocess)
    : stack_(std::make_unique<TransformerModel>(std::move(config), std::move(weights), nullptr)),
      preprocess_(std::move(preprocess)) {
  const VisionConfig& v = stack_->config().vision;
  info_ = stack_->info();
  info_.vision = true;
  info_.image_height = v.image_height;
  info_.image_width = v.image_width;
  info_.patch_size = v.patch;
  info_.channels = v.channels;
  info_.prefix_tokens = v.prefix;
  info_.registers = v.registers;
  info_.labels = v.labels;
}

void VisionModel::forward(const Runtime&, ModelRun&, const RunOptions&) const { refuse_text(); }

ImageRun VisionModel::run_image(const Runtime& rt, const ImageInput& image, const RunOptions& o) const {
  if (!image.rgba) throw Error("run: no image was given");
  return run_pixels(rt, vision::preprocess(preprocess_, image.rgba, image.width, image.height).pixels, o);
}

std::vector<float> VisionModel::patch_positions(std::int64_t rows, std::int64_t cols) const {
  const VisionConfig& v = stack_->config().vision;
  const Tensor& table = stack_->weights().position;
  const std::int64_t d = stack_->config().d_model;
  const std::int64_t side_h = v.image_height / v.patch, side_w = v.image_width / v.patch;
  const float* trained = table.data.data() + v.prefix * d;  // [side_h, side_w, d]
  // At the trained grid the interpolation is the identity (Hugging Face skips it for square images): the table.
  if (rows == side_h && cols == side_w) return std::vector<float>(trained, trained + rows * cols * d);
  vision::BicubicCall call;
  call.scale_y = double(side_h) / double(rows);
  call.scale_x = double(side_w) / double(cols);
  call.antialias = v.antialias;
  return vision::bicubic(trained, side_h, side_w, d, rows, cols, call);
}

Matrix VisionModel::embed(const Runtime& rt, const Tensor& pixels, std::int64_t rows, std::int64_t cols) const {
  const Config& c = stack_->config();
  const VisionConfig& v = c.vision;
  const Weights& w = stack_->weights();
  const std::int64_t d = c.d_model, p = v.patch, height = pixels.shape[1], width = pixels.shape[2];
  const std::int64_t patches = rows * cols, values = v.channels * p * p;
  // Each patch's values in (channel, row, column) order, as the Conv2d's weight flattens: [patches, channels · p²].
  Matrix cut(patches, values);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t q = 0; q < cols; ++q) {
      float* out = cut.row(r * cols + q).data();
      for (std::int64_t ch = 0; ch < v.channels; ++ch)
        for (std::int64_t y = 0; y < p; ++y)
          std::copy_n(pixels.data.data() + (ch * height + r * p + y) * width + q * p, p, out + (ch * p + y) * p);
    }
  const Matrix embedded = stack_->linear(rt, cut, w.patch, w.patch_bias);
  const std::vector<float> positions = patch_positions(rows, cols);
  const std::int64_t first_patch = v.prefix + v.registers;
  Matrix x(first_patch + patches, d);
  for (std::int64_t i = 0; i < v.prefix; ++i) x.row(i) = w.prefix.head(0).row(i) + w.position.head(0).row(i);
  for (std::int64_t i = 0; i < v.registers; ++i) x.row(v.prefix + i) = w.registers.head(0).row(i);  // no position
  x.bottomRows(patches) = embedded + ConstMatrixMap(positions.data(), patches, d);
  stack_->norm(rt, x, w.embed_norm, w.embed_norm_bias);  // CLIP's pre_layrnorm
  return x;
}

ImageRun VisionModel::run_pixels(const Runtime& rt, Tensor pixels, const RunOptions& o) const {
  const Config& c = stack_->config();
  const VisionConfig& v = c.vision;
  check_layers(o);
  if (o.top_k || o.logit_lens || o.return_logits || o.return_projections || !o.attention_mask.empty())
    throw Error(
        "run: an image takes mapLayers and ablateHeads; topK, logitLens, returnLogits, returnProjections "
        "and attentionMask are for text");
  if (pixels.rank() != 3 || pixels.shape[0] != v.channels || pixels.shape[1] < v.patch || pixels.shape[2] < v.patch)
    throw Error("run: pixels must be [" + std::to_string(v.channels) + ", H, W] with H and W at least the patch size " +
                std::to_string(v.patch) + ", got " + format_shape(pixels.shape));
  for (std::size_t i = 0; i < pixels.data.size(); ++i)
    if (!std::isfinite(pixels.data[i]))
      throw Error("run: pixels hold " + std::to_string(pixels.data[i]) + " at index " + std::to_string(i));
  ImageRun r;
  r.rows = pixels.shape[1] / v.patch;  // a Conv2d of stride patch: the last partial patch of each side is dropped
  r.cols = pixels.shape[2] / v.patch;
  const std::int64_t n = v.prefix + v.registers + r.rows * r.cols;
  check_budget("run", 4.0 * double(c.layers * c.heads) * double(n) * double(n) + 8.0 * double(n) * double(c.ffn));

  ModelRun& run = r.run;
  run.tokens.push_back("[CLS]");
  if (v.prefix == 2) run.tokens.push_back("distillation");
  for (std::int64_t i = 0; i < v.registers; ++i) run.tokens.push_back("register " + std::to_string(i + 1));
  run.special.assign(run.tokens.size(), 1);
  for (std::int64_t y = 0; y < r.rows; ++y)
    for (std::int64_t x = 0; x < r.cols; ++x)
      run.tokens.push_back("patch " + std::to_string(y) + "," + std::to_string(x));
  run.special.resize(run.tokens.size(), 0);
  run.total_tokens = n;
  for (std::int64_t h = 0; h < c.heads; ++h) run.kv_head.push_back(static_cast<std::int32_t>(h));

  Matrix x = embed(rt, pixels, r.rows, r.cols);
  run.attentions = Tensor::unfilled({c.layers, c.heads, n, n});
  r.token_norms = Tensor({c.layers + 1, n});
  Cache cache(c);
  Extras e;
  e.weights = run.attentions.data.data();
  e.norms = r.token_norms.data.data();
  e.options = &o;
  if (o.maps_ready && !o.map_layers) e.maps_ready = [&](std::int64_t layer) { o.maps_ready(run.attentions, layer); };
  const Matrix hidden = stack_->stack(rt, cache, std::move(x), e);
  run.hidden = ops::to_tensor(hidden);
  keep_layers(run, o);
  heads(rt, hidden, r);
  r.pixels = std::move(pixels);
  return r;
}

void VisionModel::heads(const Runtime& rt, const Matrix& hidden, ImageRun& r) const {
  const Config& c = stack_->config();
  const VisionConfig& v = c.vision;
  const Weights& w = stack_->weights();
  const Matrix first = hidden.topRows(1);
  if (w.pool) {  // ViT's and DeiT's pooler: tanh(x[0]·W + b)
    r.pooled = ops::to_tensor(stack_->linear(rt, first, w.pool, w.pool_bias).array().tanh().matrix());
  } else if (!w.pool_norm.empty()) {  // CLIP: post_layernorm(x[0])
    Matrix pooled = first;
    stack_->norm(rt, pooled, w.pool_norm, w.pool_norm_bias);
    r.pooled = ops::to_tensor(pooled);
    if (w.projection) r.image_embedding = ops::to_tensor(stack_->linear(rt, pooled, w.projection, {}));
  }
  if (!r.pooled.empty()) r.pooled.shape = {c.d_model};
  if (!r.image_embedding.empty()) r.image_embedding.shape = {v.projection};
  if (v.head == VisionHead::none) return;
  Matrix logits = stack_->linear(rt, first, w.classifier, w.classifier_bias);
  if (v.head == VisionHead::cls_distillation)  // DeiT with its teacher: the two heads' mean
    logits = (logits +
              stack_->linear(rt, hidden.middleRows(1, 1), w.distillation_classifier, w.distillation_classifier_bias)) /
             2.0f;
  r.logits = ops::to_tensor(logits);
  r.logits.shape = {logits.cols()};
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
    r.labels.push_back({id, v.labels[static_cast<std::size_t>(id)], static_cast<float>(p[id] / sum)});
  }
}

}  // namespace attnscope::transformer
