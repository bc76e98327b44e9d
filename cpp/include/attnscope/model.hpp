// Whole transformer models: tokenizer, embeddings, blocks, every layer's and
// head's attention weights.
//
//   auto model = Model::load(files);          // file name → bytes: config.json, model.safetensors, vocab...
//   ModelRun r = model->run(runtime, text);   // r.attentions [layers, heads, n, n]
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnscope/attention.hpp"
#include "attnscope/tokenizer.hpp"

namespace attnscope {

struct ModelInfo {
  std::string name;          // e.g. "Universal Sentence Encoder lite"
  std::string architecture;  // config.json's architectures[0]
  std::int64_t layers = 0, heads = 0, d_model = 0, max_tokens = 0, vocab_size = 0;
};

struct RunOptions {
  bool return_projections = false;  // keep every layer's per-head q, k, v
  // One entry per token, 1 = real, 0 = padding: padding keys are hidden from every
  // query in every layer (with causality too, in decoders). Empty: all real.
  std::vector<std::uint8_t> attention_mask;
  // Heads (layer, head) whose output is zeroed before the output projection: head ablation.
  std::vector<std::pair<std::int64_t, std::int64_t>> ablate_heads;
};

struct ModelRun {
  std::vector<std::int32_t> ids;
  std::vector<std::string> tokens;    // special tokens included
  std::vector<std::uint8_t> special;  // 1 where the token is a special token ([CLS], [SEP], ...)
  std::int64_t total_tokens = 0;      // before truncation to max_tokens
  bool truncated = false;
  Tensor attentions;            // [layers, heads, n, n]
  Tensor hidden;                // last hidden state [n, d_model]
  Tensor embedding;             // pooled sentence embedding [d] where the model defines one, else empty
  std::vector<Tensor> q, k, v;  // per layer: [heads, n, d_k], [heads, n, d_k], [heads, n, d_v]
  std::vector<Tensor> inputs;   // per layer: X [n, d_in], the matrix the projections multiply
};

// A model's files, by name: "config.json", "model.safetensors", "vocab.json", ...
using ModelFiles = std::map<std::string, std::string>;

// The [n, n] keep mask (row-major) hiding the padding keys of `options.attention_mask`
// from every query; empty when there is no mask. Throws if the mask is too short.
std::vector<std::uint8_t> padding_mask(const RunOptions& options, std::size_t n);

// Zeroes the columns of the heads of layer `layer` that `options.ablate_heads` names, in
// the concatenated head outputs [n, heads·d_v]; true if there were any.
bool ablate_heads(const RunOptions& options, std::int64_t layer, std::int64_t heads, Tensor& concatenated);

class Model {
 public:
  virtual ~Model() = default;

  // Reads config.json and builds the architecture it names. Throws Error naming
  // the file, tensor or field that is missing or wrong, or the unsupported architecture.
  static std::unique_ptr<Model> load(const ModelFiles& files);

  const ModelInfo& info() const { return info_; }
  // The tokenizer read from the model's files, or nullptr when they hold none
  // AttnScope reads (such a model runs on ids only).
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }

  // Tokenizes (text already normalized as tokenizer()->normalization() says),
  // truncates to max_tokens, and runs.
  ModelRun run(const Runtime& runtime, std::string_view text, const RunOptions& options = {}) const;
  // Layer `layer`'s attention weights, x·W layout: wq, wk [d_in, heads·d_k], wv [d_in, heads·d_v],
  // wo [heads·d_v, d_out] and their biases. Views into the model: valid while it lives.
  virtual MultiHeadParams attention_weights(std::int64_t layer) const = 0;

  // Runs on token ids, truncated to max_tokens; each id must be in the vocabulary.
  ModelRun run_ids(const Runtime& runtime, std::vector<std::int32_t> ids, const RunOptions& options = {}) const;

 protected:
  // Checks what `options` name against the model, flags special tokens, and runs forward().
  void finish_and_forward(const Runtime& runtime, ModelRun& r, const RunOptions& options) const;
  // Fills attentions, hidden, embedding and projections for the tokens in `r`.
  virtual void forward(const Runtime& runtime, ModelRun& r, const RunOptions& options) const = 0;

  ModelInfo info_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace attnscope
