// An encoder-decoder model (BART): two stacks of the one block. The source runs through the encoder once; its output
// is projected once into each decoder layer's cross-attention keys and values (Memory), and the decoder runs the
// target, causal, attending to it.
#pragma once

#include <memory>
#include <vector>

#include "models/transformer_model.hpp"

namespace attnscope::transformer {

class EncoderDecoderModel final : public Model {
 public:
  // `config` and `weights` are the decoder's, holding the encoder's (Config::encoder, Weights::encoder).
  EncoderDecoderModel(const Config& config, const Weights& weights, std::unique_ptr<Tokenizer> tokenizer);

  using Model::run_pair;  // and from texts
  PairRun run_pair(const Runtime& runtime, std::vector<std::int32_t> source, std::vector<std::int32_t> target,
                   const RunOptions& options) const override;
  std::unique_ptr<Generation> generate(const Runtime& runtime, const std::vector<std::int32_t>& ids, std::uint64_t seed,
                                       GenerationMaps maps) const override;
  std::unique_ptr<Generation> generate_pair(const Runtime& runtime, std::vector<std::int32_t> source,
                                            const std::vector<std::int32_t>& target, std::uint64_t seed,
                                            GenerationMaps maps) const override;
  // The decoder's self-attention weights of layer `layer`.
  MultiHeadParams attention_weights(std::int64_t layer) const override;
  Tensor logits(const Runtime& runtime, const Tensor& hidden) const override;

  const TransformerModel& encoder() const { return *encoder_; }
  const TransformerModel& decoder() const { return *decoder_; }

 protected:
  // A single text has no target: an Error saying what to call instead.
  void forward(const Runtime& runtime, ModelRun& r, const RunOptions& options) const override;

 private:
  std::unique_ptr<TransformerModel> encoder_, decoder_;
};

}  // namespace attnscope::transformer
