// A vision transformer (ViT, DeiT, DINOv2, CLIP's vision tower): the one block's stack, run on an image's patches.
// The front end (Config::vision) turns the image into the stack's input rows; the stack is the same TransformerModel
// the text encoders run, bidirectional, with no positions of its own.
#pragma once

#include <memory>

#include "models/transformer_model.hpp"
#include "vision/image.hpp"

namespace attnscope::transformer {

class VisionModel final : public Model {
 public:
  // `preprocess`: preprocessor_config.json's steps (or their defaults at the model's image size).
  VisionModel(Config config, Weights weights, vision::Preprocess preprocess);

  ImageRun run_image(const Runtime& runtime, const ImageInput& image, const RunOptions& options) const override;
  ImageRun run_pixels(const Runtime& runtime, Tensor pixels, const RunOptions& options) const override;
  MultiHeadParams attention_weights(std::int64_t layer) const override { return stack_->attention_weights(layer); }

  const TransformerModel& stack() const { return *stack_; }

 protected:
  // Text has no place in a vision model: run() and run_ids() refuse it first (Model::refuse_text).
  void forward(const Runtime& runtime, ModelRun& r, const RunOptions& options) const override;

 private:
  // The stack's input [n, d] for pixels [channels, H, W] cut into a rows × cols grid (see VisionConfig).
  Matrix embed(const Runtime& rt, const Tensor& pixels, std::int64_t rows, std::int64_t cols) const;
  // The position table's patch rows [rows · cols, d] for a grid: as trained, or interpolated to it.
  std::vector<float> patch_positions(std::int64_t rows, std::int64_t cols) const;
  // pooled, image_embedding, logits and labels from the stack's output.
  void heads(const Runtime& rt, const Matrix& hidden, ImageRun& r) const;

  std::unique_ptr<TransformerModel> stack_;
  vision::Preprocess preprocess_;
};

}  // namespace attnscope::transformer
