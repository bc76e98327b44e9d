// Front ends: what turns a run's input into the rows a stack reads (spec.hpp has their formulas). A model's first
// stack has one, of the kind its row names; an encoder-decoder's decoder reads tokens. A new kind of input (audio:
// log-mel features through two convolutions) is a new front end; the stacks, the heads and the run stay as they are.
#pragma once

#include <cstdint>
#include <string>

#include "attnscope/model.hpp"
#include "audio/features.hpp"
#include "models/sources.hpp"
#include "models/spec.hpp"
#include "vision/image.hpp"

namespace attnscope::transformer {

// What a front end made of one input: the sequence it stands for, and what embed() turns into rows.
struct Reading {
  Sequence sequence;
  Tensor pixels;    // an image's model input [channels, H, W]
  Tensor features;  // a voice's: log-mel [mel_bins, frames]
};

// What a front end's read() needs of the model: its names (for errors), its tokenizer, and the stack's limit.
struct ReadContext {
  const ModelInfo* info = nullptr;
  const Tokenizer* tokenizer = nullptr;
  std::string name;  // the sequence's: "text", "source", "target", "image", "audio"
  std::int64_t max_tokens = 0;
};

class FrontEnd {
 public:
  virtual ~FrontEnd() = default;
  // Reads `input` into its sequence (a text tokenized, ids checked, either truncated to max_tokens; an image
  // preprocessed), or throws an Error saying what this model reads.
  virtual Reading read(const SequenceInput& input, const ReadContext& context) const = 0;
  // Throws that Error for an input of a form this front end does not read; else nothing.
  virtual void check_form(const SequenceInput& input, const ModelInfo& info) const = 0;
  // The stack's input rows for the reading's tokens from position `p0` on: [n − p0, width].
  virtual Matrix embed(const Runtime& rt, const Reading& reading, std::int64_t p0) const = 0;
  // The row embed() makes for the reading's token `position`, by its sources (explain.hpp): what the stack `stack`'s
  // stream of that token starts with.
  virtual Stream decompose(const Runtime& rt, const Reading& reading, std::int64_t position,
                           std::int64_t stack) const = 0;
};

class TokenEmbedding final : public FrontEnd {
 public:
  TokenEmbedding(TokenConfig config, TokenWeights weights);
  Reading read(const SequenceInput& input, const ReadContext& context) const override;
  void check_form(const SequenceInput& input, const ModelInfo& info) const override;
  Matrix embed(const Runtime& rt, const Reading& reading, std::int64_t p0) const override;
  // Tokens ids[0 .. n) at positions p0 … embedded: [n, width].
  Matrix embed(const std::int32_t* ids, std::int64_t n, std::int64_t p0) const;
  Stream decompose(const Runtime& rt, const Reading& reading, std::int64_t position, std::int64_t stack) const override;
  // Token `id` at `position`, by its sources.
  Stream decompose(std::int32_t id, std::int64_t position, std::int64_t stack) const;

  const TokenConfig& config() const { return c_; }
  const TokenWeights& weights() const { return w_; }

 private:
  TokenConfig c_;
  TokenWeights w_;
};

class PatchEmbedding final : public FrontEnd {
 public:
  // `preprocess`: preprocessor_config.json's steps (or their defaults at the model's image size).
  PatchEmbedding(VisionConfig config, PatchWeights weights, vision::Preprocess preprocess, std::int64_t d_model);
  Reading read(const SequenceInput& input, const ReadContext& context) const override;
  void check_form(const SequenceInput& input, const ModelInfo& info) const override;
  Matrix embed(const Runtime& rt, const Reading& reading, std::int64_t p0) const override;
  Stream decompose(const Runtime& rt, const Reading& reading, std::int64_t position, std::int64_t stack) const override;

  const vision::Preprocess& preprocess() const { return preprocess_; }

 private:
  // The position table's patch rows [rows · cols, d] for a grid: as trained, or interpolated to it.
  std::vector<float> patch_positions(std::int64_t rows, std::int64_t cols) const;
  // Patch `patch` (row-major in the grid) of the image's pixels, its values in the order the projection reads them.
  void cut(const Tensor& pixels, std::int64_t cols, std::int64_t patch, float* out) const;

  VisionConfig c_;
  PatchWeights w_;
  vision::Preprocess preprocess_;
  std::int64_t d_;
};

class AudioEmbedding final : public FrontEnd {
 public:
  // `features`: preprocessor_config.json's feature extractor, whose window's frames are twice config.positions.
  AudioEmbedding(AudioConfig config, AudioWeights weights, audio::Features features, std::int64_t d_model);
  Reading read(const SequenceInput& input, const ReadContext& context) const override;
  void check_form(const SequenceInput& input, const ModelInfo& info) const override;
  Matrix embed(const Runtime& rt, const Reading& reading, std::int64_t p0) const override;
  Stream decompose(const Runtime& rt, const Reading& reading, std::int64_t position, std::int64_t stack) const override;

  const audio::Features& features() const { return features_; }

 private:
  // The two convolutions with their GELUs, for the encoder's positions [first, first + count): [count, d].
  Matrix convolve(const Runtime& rt, const Tensor& features, std::int64_t first, std::int64_t count) const;

  AudioConfig c_;
  AudioWeights w_;
  audio::Features features_;
  std::int64_t d_;
};

}  // namespace attnscope::transformer
