// What reads the last stack's output (spec.hpp has the formulas): a language model's head, a pooler, CLIP's
// projection, an image classifier. One object holds whichever of them the row names.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "attnscope/model.hpp"
#include "kernels/screened_argmax.hpp"
#include "models/spec.hpp"

namespace attnscope::transformer {

class Heads {
 public:
  // `embed`: the token embedding the LM head reads when tied.
  Heads(HeadConfig config, HeadWeights weights, Weight embed, std::int64_t d_model);

  const HeadConfig& config() const { return c_; }
  const HeadWeights& weights() const { return w_; }
  // The LM head's matrix [d, vocab]: its own, or the tied embedding.
  const Weight& head() const { return w_.lm_head ? w_.lm_head : embed_; }

  // Language models: the next-token logits [rows, vocab] of final-normed hidden rows (soft-capped where the model
  // caps).
  Matrix logits(const Runtime& rt, const Matrix& normed) const;
  // The greedy next token after the final-normed hidden row `normed` [1, d], the ids in `excluded` left out: the
  // first argmax of logits(normed), bit for bit, found by a screen that reads a float32 head at half its bytes
  // (kernels/screened_argmax.hpp; built on first use). −1 where there is none (a 16-bit head, soft-capped logits,
  // natively) or it cannot tell: then compute logits().
  std::int64_t greedy(const Runtime& rt, const Matrix& normed, const std::vector<std::int32_t>& excluded) const;
  // Each row's k most likely next tokens into ids and probs ([rows, k]), from final-normed rows [rows, d]: the
  // predictions, and with k = 1 the logit lens's row of one layer. The logits are taken a block of rows at a time
  // (kLogitBlockBytes each), never [rows, vocab] at once: a 256k vocabulary's at 512 tokens would take 0.5 GB.
  void top_k(const Runtime& rt, const Matrix& normed, std::int64_t k, std::int32_t* ids, float* probs) const;
  static constexpr std::int64_t kLogitBlockBytes = 64 << 20;
  // The same from logits a run keeps: rows [first, first + rows) of `logits`.
  static void top_k_of(const Runtime& rt, const Matrix& logits, std::int64_t first, std::int64_t rows, std::int64_t k,
                       std::int32_t* ids, float* probs);

  // The pooler, CLIP's post-norm and projection, and a classifier on the last hidden state [n, d] (final-normed):
  // RunResult::embedding, image_embedding, label_logits and labels, each where the row has it.
  void read_out(const Runtime& rt, const Matrix& hidden, RunResult& r) const;

 private:
  HeadConfig c_;
  HeadWeights w_;
  Weight embed_;
  std::int64_t d_;
  mutable std::once_flag screen_once_;
  mutable std::unique_ptr<kernels::ScreenedArgmax> screen_;  // greedy(): null until used, or where there is none
};

}  // namespace attnscope::transformer
