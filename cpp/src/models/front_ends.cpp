#include "models/front_ends.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attnscope/error.hpp"
#include "models/ops.hpp"
#include "models/stack.hpp"
#include "vision/interpolate.hpp"

namespace attnscope::transformer {

namespace {

// "Name (Architecture)", as errors name the model.
std::string named(const ModelInfo& info) { return info.name + " (" + info.architecture + ")"; }

}  // namespace

TokenEmbedding::TokenEmbedding(TokenConfig config, TokenWeights weights)
    : c_(std::move(config)), w_(std::move(weights)) {}

void TokenEmbedding::check_form(const SequenceInput& input, const ModelInfo& info) const {
  if (input.form == SequenceInput::Form::image || input.form == SequenceInput::Form::pixels)
    throw Error("run: " + named(info) + " is not a vision model; an image needs one such as ViT, DeiT, DINOv2 or CLIP");
}

Reading TokenEmbedding::read(const SequenceInput& input, const ReadContext& context) const {
  const std::string& what = context.name;
  check_form(input, *context.info);
  const Tokenizer* t = context.tokenizer;
  Encoding e;
  if (input.form == SequenceInput::Form::text) {
    if (!t) throw Error("run: this model's files hold no tokenizer AttnScope reads; run it on token ids instead");
    e = t->encode(input.text);
  } else {
    e.ids = input.ids;
    for (auto id : e.ids) {
      const bool known = t && id >= 0 && id < t->vocab_size();
      e.tokens.push_back(known ? t->token(id) : "#" + std::to_string(id));
    }
  }
  Reading r;
  Sequence& s = r.sequence;
  s.name = what;
  s.total_tokens = static_cast<std::int64_t>(e.ids.size());
  if (e.ids.empty()) throw Error("run: the " + what + " has no tokens; give it some text");
  if (s.total_tokens > context.max_tokens) {
    s.truncated = true;
    e.ids.resize(static_cast<std::size_t>(context.max_tokens));
    e.tokens.resize(static_cast<std::size_t>(context.max_tokens));
  }
  for (std::size_t i = 0; i < e.ids.size(); ++i)
    if (e.ids[i] < 0 || e.ids[i] >= c_.vocab)
      throw Error("run: id " + std::to_string(e.ids[i]) + " at position " + std::to_string(i) +
                  (what == "text" ? "" : " of the " + what) + " is outside the vocabulary [0, " +
                  std::to_string(c_.vocab) + ")");
  s.ids = std::move(e.ids);
  s.tokens = std::move(e.tokens);
  for (std::int32_t id : s.ids) s.special.push_back(t && t->is_special(id) ? 1 : 0);
  return r;
}

Matrix TokenEmbedding::embed(const Runtime&, const Reading& reading, std::int64_t p0) const {
  const std::vector<std::int32_t>& ids = reading.sequence.ids;
  return embed(ids.data() + p0, static_cast<std::int64_t>(ids.size()) - p0, p0);
}

Matrix TokenEmbedding::embed(const std::int32_t* ids, std::int64_t n, std::int64_t p0) const {
  Matrix x(n, c_.width);
  const std::int64_t half = static_cast<std::int64_t>(w_.inv_timescales.data.size());
  for (std::int64_t i = 0; i < n; ++i) {
    w_.embed->column(ids[i], x.row(i).data());  // token ids[i]'s embedding: a column of Eᵀ
    x.row(i) *= c_.embed_scale;
    if (c_.positions == TokenPositions::learned) x.row(i) += w_.position.head(0).row(p0 + i);
    for (std::int64_t j = 0; c_.positions == TokenPositions::sinusoidal && j < half; ++j) {
      const float t = static_cast<float>(p0 + i) * w_.inv_timescales.data[j];
      x(i, j) += std::sin(t);
      x(i, half + j) += std::cos(t);
    }
  }
  if (!w_.norm.empty()) x = ops::layer_norm(x, w_.norm, w_.norm_bias, c_.eps);
  return x;
}

Stream TokenEmbedding::decompose(const Runtime&, const Reading& reading, std::int64_t position,
                                 std::int64_t stack) const {
  return decompose(reading.sequence.ids[static_cast<std::size_t>(position)], position, stack);
}

Stream TokenEmbedding::decompose(std::int32_t id, std::int64_t position, std::int64_t stack) const {
  Stream s(c_.width);
  const auto source = [&](Source::Kind kind) { return source_of(kind, stack, -1, -1, position); };
  std::vector<float> row(static_cast<std::size_t>(c_.width));
  w_.embed->column(id, row.data());
  for (float& x : row) x *= c_.embed_scale;
  s.add(source(Source::Kind::token), row.data());
  if (c_.positions == TokenPositions::learned)
    s.add(source(Source::Kind::position), w_.position.data.data() + position * c_.width);
  if (c_.positions == TokenPositions::sinusoidal) {
    const std::int64_t half = static_cast<std::int64_t>(w_.inv_timescales.data.size());
    std::fill(row.begin(), row.end(), 0.0f);
    for (std::int64_t j = 0; j < half; ++j) {
      const float t = static_cast<float>(position) * w_.inv_timescales.data[j];
      row[j] = std::sin(t);
      row[half + j] = std::cos(t);
    }
    s.add(source(Source::Kind::position), row.data());
  }
  if (!w_.norm.empty())
    freeze_norm(s, Norm::layer, norm_scale(Norm::layer, s.sum(), c_.eps), w_.norm, w_.norm_bias,
                source(Source::Kind::norm_bias));
  return s;
}

PatchEmbedding::PatchEmbedding(VisionConfig config, PatchWeights weights, vision::Preprocess preprocess,
                               std::int64_t d_model)
    : c_(std::move(config)), w_(std::move(weights)), preprocess_(std::move(preprocess)), d_(d_model) {}

void PatchEmbedding::check_form(const SequenceInput& input, const ModelInfo& info) const {
  if (input.form == SequenceInput::Form::text || input.form == SequenceInput::Form::ids)
    throw Error("run: " + named(info) + " is a vision model: run it on an image, run({ image })");
}

Reading PatchEmbedding::read(const SequenceInput& input, const ReadContext& context) const {
  check_form(input, *context.info);
  Reading r;
  if (input.form == SequenceInput::Form::image) {
    if (!input.image.rgba) throw Error("run: no image was given");
    r.pixels = vision::preprocess(preprocess_, input.image.rgba, input.image.width, input.image.height).pixels;
  } else {
    r.pixels = input.pixels;
  }
  const Tensor& pixels = r.pixels;
  if (pixels.rank() != 3 || pixels.shape[0] != c_.channels || pixels.shape[1] < c_.patch || pixels.shape[2] < c_.patch)
    throw Error("run: pixels must be [" + std::to_string(c_.channels) +
                ", H, W] with H and W at least the patch size " + std::to_string(c_.patch) + ", got " +
                format_shape(pixels.shape));
  for (std::size_t i = 0; i < pixels.data.size(); ++i)
    if (!std::isfinite(pixels.data[i]))
      throw Error("run: pixels hold " + std::to_string(pixels.data[i]) + " at index " + std::to_string(i));
  Sequence& s = r.sequence;
  s.name = context.name;
  s.rows = pixels.shape[1] / c_.patch;  // a Conv2d of stride patch: the last partial patch of each side is dropped
  s.cols = pixels.shape[2] / c_.patch;
  s.tokens.push_back("[CLS]");
  if (c_.prefix == 2) s.tokens.push_back("distillation");
  for (std::int64_t i = 0; i < c_.registers; ++i) s.tokens.push_back("register " + std::to_string(i + 1));
  s.special.assign(s.tokens.size(), 1);
  for (std::int64_t y = 0; y < s.rows; ++y)
    for (std::int64_t x = 0; x < s.cols; ++x)
      s.tokens.push_back("patch " + std::to_string(y) + "," + std::to_string(x));
  s.special.resize(s.tokens.size(), 0);
  s.total_tokens = static_cast<std::int64_t>(s.tokens.size());
  return r;
}

std::vector<float> PatchEmbedding::patch_positions(std::int64_t rows, std::int64_t cols) const {
  const std::int64_t side_h = c_.image_height / c_.patch, side_w = c_.image_width / c_.patch;
  const float* trained = w_.position.data.data() + c_.prefix * d_;  // [side_h, side_w, d]
  // At the trained grid the interpolation is the identity (Hugging Face skips it for square images): the table.
  if (rows == side_h && cols == side_w) return std::vector<float>(trained, trained + rows * cols * d_);
  vision::BicubicCall call;
  call.scale_y = double(side_h) / double(rows);
  call.scale_x = double(side_w) / double(cols);
  call.antialias = c_.antialias;
  return vision::bicubic(trained, side_h, side_w, d_, rows, cols, call);
}

Matrix PatchEmbedding::embed(const Runtime& rt, const Reading& reading, std::int64_t p0) const {
  if (p0 != 0) throw Error("an image's patches run whole");
  const Tensor& pixels = reading.pixels;
  const std::int64_t rows = reading.sequence.rows, cols = reading.sequence.cols;
  const std::int64_t d = d_, p = c_.patch;
  const std::int64_t patches = rows * cols, values = c_.channels * p * p;
  Matrix patched(patches, values);
  for (std::int64_t t = 0; t < patches; ++t) cut(pixels, cols, t, patched.row(t).data());
  const Matrix embedded = Stack::linear(rt, patched, w_.patch, w_.patch_bias);
  const std::vector<float> positions = patch_positions(rows, cols);
  const std::int64_t first_patch = c_.prefix + c_.registers;
  Matrix x(first_patch + patches, d);
  for (std::int64_t i = 0; i < c_.prefix; ++i) x.row(i) = w_.prefix.head(0).row(i) + w_.position.head(0).row(i);
  for (std::int64_t i = 0; i < c_.registers; ++i) x.row(c_.prefix + i) = w_.registers.head(0).row(i);  // no position
  x.bottomRows(patches) = embedded + ConstMatrixMap(positions.data(), patches, d);
  if (!w_.norm.empty()) x = ops::layer_norm(x, w_.norm, w_.norm_bias, c_.eps);  // CLIP's pre_layrnorm
  return x;
}

void PatchEmbedding::cut(const Tensor& pixels, std::int64_t cols, std::int64_t patch, float* out) const {
  // The patch's values in (channel, row, column) order, as the Conv2d's weight flattens: [channels · p²].
  const std::int64_t p = c_.patch, height = pixels.shape[1], width = pixels.shape[2];
  const std::int64_t r = patch / cols, q = patch % cols;
  for (std::int64_t ch = 0; ch < c_.channels; ++ch)
    for (std::int64_t y = 0; y < p; ++y)
      std::copy_n(pixels.data.data() + (ch * height + r * p + y) * width + q * p, p, out + (ch * p + y) * p);
}

Stream PatchEmbedding::decompose(const Runtime& rt, const Reading& reading, std::int64_t position,
                                 std::int64_t stack) const {
  Stream s(d_);
  const auto source = [&](Source::Kind kind) { return source_of(kind, stack, -1, -1, position); };
  const std::int64_t first_patch = c_.prefix + c_.registers;
  if (position < c_.prefix) {
    s.add(source(Source::Kind::prefix), w_.prefix.data.data() + position * d_);
    s.add(source(Source::Kind::position), w_.position.data.data() + position * d_);
  } else if (position < first_patch) {
    s.add(source(Source::Kind::register_token), w_.registers.data.data() + (position - c_.prefix) * d_);
  } else {
    const std::int64_t rows = reading.sequence.rows, cols = reading.sequence.cols, t = position - first_patch;
    Matrix values(1, c_.channels * c_.patch * c_.patch);
    cut(reading.pixels, cols, t, values.row(0).data());
    const Matrix projected = Stack::linear(rt, values, w_.patch, Tensor());
    s.add(source(Source::Kind::patch), projected.data());
    if (!w_.patch_bias.empty()) s.add(source(Source::Kind::patch_bias), w_.patch_bias.data.data());
    s.add(source(Source::Kind::position), patch_positions(rows, cols).data() + t * d_);
  }
  if (!w_.norm.empty())
    freeze_norm(s, Norm::layer, norm_scale(Norm::layer, s.sum(), c_.eps), w_.norm, w_.norm_bias,
                source(Source::Kind::norm_bias));
  return s;
}

AudioEmbedding::AudioEmbedding(AudioConfig config, AudioWeights weights, audio::Features features, std::int64_t d_model)
    : c_(std::move(config)), w_(std::move(weights)), features_(std::move(features)), d_(d_model) {}

void AudioEmbedding::check_form(const SequenceInput& input, const ModelInfo& info) const {
  if (input.form != SequenceInput::Form::audio && input.form != SequenceInput::Form::features)
    throw Error("run: " + named(info) + " is a speech model: run it on audio (mono, " +
                std::to_string(features_.sampling_rate) + " Hz) and a target, run({ audio, target })");
}

Reading AudioEmbedding::read(const SequenceInput& input, const ReadContext& context) const {
  check_form(input, *context.info);
  const std::int64_t mels = features_.feature_size, frames = features_.frames(), rate = features_.sampling_rate;
  Reading r;
  Sequence& s = r.sequence;
  s.name = context.name;
  if (input.form == SequenceInput::Form::audio) {
    const AudioInput& a = input.audio;
    if (a.n <= 0 || !a.samples) throw Error("run: the audio is empty: give it some sound");
    if (a.n > audio::kMaxSamples)
      throw Error("run: the audio has " + std::to_string(a.n) + " samples, more than an hour at 16 kHz");
    for (std::int64_t i = 0; i < a.n; ++i)
      if (!std::isfinite(a.samples[i]))
        throw Error("run: the audio holds " + std::to_string(a.samples[i]) + " at sample " + std::to_string(i));
    // One window: what is past it is another window's (the package reads long audio window by window).
    const std::int64_t n = std::min(a.n, features_.n_samples());
    s.truncated = a.n > n;
    s.seconds = static_cast<double>(n) / static_cast<double>(rate);
    r.features = audio::log_mel(features_, a.samples, n);
  } else {
    const Tensor& f = input.features;
    if (f.shape != Shape{mels, frames})
      throw Error("run: features must be [" + std::to_string(mels) + ", " + std::to_string(frames) +
                  "] (mel bins × a window's frames), got " + format_shape(f.shape));
    for (std::size_t i = 0; i < f.data.size(); ++i)
      if (!std::isfinite(f.data[i]))
        throw Error("run: features hold " + std::to_string(f.data[i]) + " at index " + std::to_string(i));
    r.features = f;
    s.seconds = static_cast<double>(features_.n_samples()) / static_cast<double>(rate);
  }
  // Each position is 2 frames of hop_length samples: 20 ms for Whisper.
  const double step = 2.0 * static_cast<double>(features_.hop_length) / static_cast<double>(rate);
  for (std::int64_t i = 0; i < c_.positions; ++i) {
    char label[32];
    std::snprintf(label, sizeof label, "%.2f s", static_cast<double>(i) * step);
    s.tokens.push_back(label);
  }
  s.special.assign(s.tokens.size(), 0);
  s.total_tokens = c_.positions;
  return r;
}

Matrix AudioEmbedding::convolve(const Runtime& rt, const Tensor& features, std::int64_t first,
                                std::int64_t count) const {
  const std::int64_t mels = c_.mel_bins, frames = features.shape[1], d = d_;
  // conv2's output t reads conv1's frames 2t − 1 … 2t + 1; conv1's frame f reads the features' f − 1 … f + 1. Both
  // pad with zeros: conv2 pads conv1's GELU output, not the features.
  const std::int64_t f0 = std::max<std::int64_t>(0, 2 * first - 1);
  const std::int64_t f1 = std::min<std::int64_t>(frames, 2 * (first + count));
  // Both windows are filled through row pointers: Eigen's (row, column) here was a call per value, through the wasm
  // build's exception trampoline (JS), and took a tenth of a 30 s window's encoding.
  Matrix windows = Matrix::Zero(f1 - f0, mels * 3);  // [frames, mel_bins · 3], (mel, tap) order as conv1's weight
  for (std::int64_t f = f0; f < f1; ++f) {
    float* row = windows.data() + (f - f0) * mels * 3;
    for (std::int64_t k = 0; k < 3; ++k) {
      const std::int64_t at = f + k - 1;
      if (at < 0 || at >= frames) continue;
      for (std::int64_t c = 0; c < mels; ++c) row[c * 3 + k] = features.data[static_cast<std::size_t>(c * frames + at)];
    }
  }
  Matrix h = Stack::linear(rt, windows, w_.conv1, w_.conv1_bias);  // [f1 − f0, d]
  ops::gelu(h);
  Matrix strided = Matrix::Zero(count, d * 3);  // [count, d · 3]
  for (std::int64_t t = 0; t < count; ++t)
    for (std::int64_t k = 0; k < 3; ++k) {
      const std::int64_t at = 2 * (first + t) + k - 1;
      if (at < 0 || at >= frames) continue;
      const float* from = h.data() + (at - f0) * d;
      float* to = strided.data() + t * d * 3 + k;
      for (std::int64_t c = 0; c < d; ++c) to[c * 3] = from[c];
    }
  Matrix x = Stack::linear(rt, strided, w_.conv2, w_.conv2_bias);
  ops::gelu(x);
  return x;
}

Matrix AudioEmbedding::embed(const Runtime& rt, const Reading& reading, std::int64_t p0) const {
  if (p0 != 0) throw Error("a window of audio runs whole");
  Matrix x = convolve(rt, reading.features, 0, c_.positions);
  x += w_.position.head(0);
  return x;
}

Stream AudioEmbedding::decompose(const Runtime& rt, const Reading& reading, std::int64_t position,
                                 std::int64_t stack) const {
  Stream s(d_);
  const Matrix sound = convolve(rt, reading.features, position, 1);
  s.add(source_of(Source::Kind::audio, stack, -1, -1, position), sound.data());
  s.add(source_of(Source::Kind::position, stack, -1, -1, position), w_.position.data.data() + position * d_);
  return s;
}

}  // namespace attnscope::transformer
