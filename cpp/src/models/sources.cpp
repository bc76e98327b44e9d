#include "models/sources.hpp"

#include <cmath>

#include "models/stack.hpp"

namespace attnscope::transformer {

namespace {

// Row `row` of head-major [heads, n, hd] as [heads, hd].
std::vector<float> head_rows(const Tensor& t, std::int64_t row) {
  const std::int64_t heads = t.shape[0], n = t.shape[1], hd = t.shape[2];
  std::vector<float> out(static_cast<std::size_t>(heads * hd));
  for (std::int64_t h = 0; h < heads; ++h) std::copy_n(t.data.begin() + (h * n + row) * hd, hd, out.begin() + h * hd);
  return out;
}

// Each of `rows` [count, width] through a norm with its scale frozen (no bias: the caller adds it once).
void scale_rows(double* rows, std::int64_t count, std::int64_t width, Norm norm, float scale, const Tensor& w) {
  for (std::int64_t a = 0; a < count; ++a) {
    double* r = rows + a * width;
    double mean = 0;
    if (norm == Norm::layer) {
      for (std::int64_t k = 0; k < width; ++k) mean += r[k];
      mean /= double(width);
    }
    for (std::int64_t k = 0; k < width; ++k) r[k] = (r[k] - mean) * double(scale) * double(w.data[k]);
  }
}

void scale_columns(double* rows, std::int64_t count, std::int64_t width, const Tensor& gamma) {
  for (std::int64_t a = 0; a < count; ++a)
    for (std::int64_t k = 0; k < width; ++k) rows[a * width + k] *= gamma.data[k];
}

}  // namespace

std::vector<double> Stream::sum() const {
  std::vector<double> total(static_cast<std::size_t>(width), 0.0);
  for (std::int64_t a = 0; a < size(); ++a)
    for (std::int64_t k = 0; k < width; ++k) total[k] += row(a)[k];
  return total;
}

void freeze_norm(Stream& s, Norm norm, float scale, const Tensor& w, const Tensor& b, const Source& bias) {
  if (w.empty()) return;
  scale_rows(s.values.data(), s.size(), s.width, norm, scale, w);
  if (norm == Norm::layer && !b.empty()) s.add(bias, b.data.data());
}

float norm_scale(Norm norm, const std::vector<double>& x, float eps) {
  const double n = double(x.size());
  double mean = 0, square = 0;
  if (norm == Norm::layer)
    for (double v : x) mean += v / n;
  for (double v : x) square += (v - mean) * (v - mean) / n;
  return static_cast<float>(1.0 / std::sqrt(square + eps));
}

std::vector<double> project(const Stream& s, const Weight& w, std::int64_t first, std::int64_t count) {
  const std::int64_t width = s.width;
  std::vector<double> columns(static_cast<std::size_t>(count * width));  // W's columns first .. first + count
  std::vector<float> column(static_cast<std::size_t>(width));
  for (std::int64_t t = 0; t < count; ++t) {
    w->column(first + t, column.data());
    std::copy(column.begin(), column.end(), columns.begin() + t * width);
  }
  std::vector<double> out(static_cast<std::size_t>(s.size() * count));
  for (std::int64_t a = 0; a < s.size(); ++a)
    for (std::int64_t t = 0; t < count; ++t) out[a * count + t] = dot(s.row(a), columns.data() + t * width, width);
  return out;
}

StreamTracker::StreamTracker(const Stack& stack, std::int64_t stack_index, std::int64_t position, Stream start,
                             std::int64_t stop, bool through_attention)
    : stream(std::move(start)),
      stack_(stack),
      stack_index_(stack_index),
      position_(position),
      stop_(stop),
      through_attention_(through_attention) {}

bool StreamTracker::follows(const LayerView& view) const {
  return !done() && view.stack == stack_index_ && view.layer <= stop_ && position_ >= view.p0 &&
         position_ < view.p0 + view.output->rows();
}

bool StreamTracker::wants_heads(const LayerView& view) const {
  return follows(view) && (view.layer < stop_ || through_attention_);
}

void StreamTracker::layer(const LayerView& view, const Matrix& heads) {
  if (!follows(view)) return;
  const Config& c = stack_.config();
  const Block& b = stack_.weights().blocks[static_cast<std::size_t>(view.layer)];
  const LayerScales& s = *view.scales;
  const std::int64_t l = view.layer, r = position_ - view.p0, n = view.output->rows(), d = c.d_model;
  const auto source = [&](Source::Kind kind, std::int64_t head = -1) {
    return source_of(kind, stack_index_, l, head, position_);
  };
  if (l == stop_) {
    if (!s.attn.empty()) at.attn_scale = s.attn.scale[r];
    at.q = head_rows(*view.q, r);
    at.k = head_rows(*view.k, r);
    for (std::int64_t h = 0; c.qk_norm && h < c.heads; ++h) at.q_scales.push_back(s.q.scale[h * n + r]);
    for (std::int64_t g = 0; c.qk_norm && g < c.kv_heads; ++g) at.k_scales.push_back(s.k.scale[g * n + r]);
    if (!through_attention_) {
      stopped_ = true;
      return;
    }
  }
  // The attention sublayer: each head's output through its rows of W_O and W_O's bias, each through the sandwich's
  // post-norm and the layer scale as the sum of them goes.
  const std::int64_t heads_count = heads.rows();
  std::vector<double> added(static_cast<std::size_t>((heads_count + 1) * d), 0.0);
  for (std::int64_t h = 0; h < heads_count; ++h)
    for (std::int64_t k = 0; k < d; ++k) added[h * d + k] = heads(h, k);
  const bool bias = !b.bo.empty();
  for (std::int64_t k = 0; bias && k < d; ++k) added[heads_count * d + k] = b.bo.data[k];
  if (c.placement == Placement::sandwich)
    scale_rows(added.data(), heads_count + 1, d, c.norm, s.attn_out.scale[r], b.post_attn_norm);
  if (c.layer_scale) scale_columns(added.data(), heads_count + 1, d, b.attn_scale);
  if (b.w_residual) {  // the stream widens: each source through W_r, and W_r's bias a source of its own
    Stream wider(d);
    wider.sources = stream.sources;
    wider.values = project(stream, b.w_residual, 0, d);
    if (!b.b_residual.empty()) wider.add(source(Source::Kind::widen_bias), b.b_residual.data.data());
    stream = std::move(wider);
  }
  for (std::int64_t h = 0; h < heads_count; ++h) stream.add(source(Source::Kind::head, h), added.data() + h * d);
  if (bias) stream.add(source(Source::Kind::attention_bias), added.data() + heads_count * d);
  if (c.placement == Placement::post)
    freeze_norm(stream, c.norm, s.attn.scale[r], b.attn_norm, b.attn_norm_bias, source(Source::Kind::norm_bias, 0));
  if (l == stop_) {  // through_attention: what the cross-attention reads
    if (!s.cross.empty() && c.placement != Placement::post) at.cross_scale = s.cross.scale[r];
    at.cross_q = head_rows(*view.cross_q, r);
    stopped_ = true;
    return;
  }
  if (view.cross) {
    stream.add(source(Source::Kind::cross), view.cross->row(r).data());
    if (c.placement == Placement::post)
      freeze_norm(stream, c.norm, s.cross.scale[r], b.cross_norm, b.cross_norm_bias,
                  source(Source::Kind::norm_bias, 1));
  }
  stream.add(source(Source::Kind::mlp), view.mlp->row(r).data());
  if (c.placement == Placement::post)
    freeze_norm(stream, c.norm, s.ffn.scale[r], b.ffn_norm, b.ffn_norm_bias, source(Source::Kind::norm_bias, 2));
}

void StreamTracker::end(const StackEnd& end) {
  if (done() || end.stack != stack_index_ || stop_ != stack_.config().layers) return;
  const std::int64_t r = position_ - end.p0;
  if (r < 0 || r >= end.normed->rows()) return;
  if (!end.scales->empty()) final_scale = end.scales->scale[r];
  hidden.assign(end.normed->row(r).data(), end.normed->row(r).data() + end.normed->cols());
  ended_ = true;
}

void TrackerTap::layer(const LayerView& view) {
  std::vector<StreamTracker*> reading;
  for (StreamTracker* t : trackers_)
    if (t->follows(view)) reading.push_back(t);
  if (reading.empty()) return;
  const Stack& stack = *stacks_[static_cast<std::size_t>(view.stack)];
  const Config& c = stack.config();
  const std::int64_t hd = c.head_dim_of(view.layer), d = c.d_model;
  const Weight& wo = stack.weights().blocks[static_cast<std::size_t>(view.layer)].wo;
  for (StreamTracker* t : reading) {
    Matrix through;
    if (t->wants_heads(view)) {
      through = Matrix(c.heads, d);
      const std::int64_t r = t->position() - view.p0;
      wo->block_rows(view.heads->data.data() + r * c.heads * hd, hd, through.data());
    }
    t->layer(view, through);
  }
}

void TrackerTap::end(const StackEnd& end) {
  for (StreamTracker* t : trackers_) t->end(end);
}

}  // namespace attnscope::transformer
