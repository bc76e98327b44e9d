// What a run's options ask of the inside of its stacks, read by taps on the block like any caller's own: each
// layer's projections (the math view's X, q, k, v), each token's norm after each layer (a vision model's outliers),
// and the logit lens (each layer's output through the final norm and the LM head).
#include "models/ops.hpp"
#include "models/transformer_model.hpp"

namespace attnscope::transformer {

RunTaps::RunTaps(const Runtime& rt, const RunOptions& o, RunResult& r, const Heads& heads, const Stack& last,
                 std::int64_t last_index, LogitLens* lens)
    : rt_(rt),
      r_(r),
      heads_(heads),
      last_(last),
      last_index_(last_index),
      projections_(o.return_projections),
      norms_(o.token_norms),
      lens_(lens),
      user_(o.tap) {}

void RunTaps::layer(const LayerView& view) {
  StackRun& s = r_.stacks[static_cast<std::size_t>(view.stack)];
  const std::int64_t n = view.output->rows();
  if (projections_) {
    s.inputs.push_back(ops::to_tensor(*view.normed));
    s.q.push_back(*view.q);
    s.k.push_back(*view.k);
    s.v.push_back(*view.v);
  }
  if (norms_) {  // [layers + 1, n]: row 0 the stack's input, row l + 1 layer l's output
    float* norms = s.token_norms.data.data();
    for (std::int64_t i = 0; view.layer == 0 && i < n; ++i) norms[i] = view.input->row(i).norm();
    for (std::int64_t i = 0; i < n; ++i) norms[(view.layer + 1) * n + i] = view.output->row(i).norm();
  }
  if (lens_ && view.stack == last_index_) {  // [layers, n]
    Matrix normed = *view.output;
    last_.final_norm(rt_, normed);
    heads_.top_k(rt_, normed, 1, lens_->ids.data() + view.layer * n, lens_->probs.data() + view.layer * n);
  }
  if (user_) user_->layer(view);
}

void RunTaps::end(const StackEnd& end) {
  if (user_) user_->end(end);
}

}  // namespace attnscope::transformer
