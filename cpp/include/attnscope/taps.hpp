// Taps: what every layer of a run computed, seen as it is computed. A run calls its options' tap once per layer of
// every stack, with views into the layer's own arrays (valid during the call only), and once per stack at its end.
// The analyses that read a model's inside (projections, the logit lens, token norms, a score's decomposition) are
// taps; a run without one builds none of these views.
//
//   per layer l of stack s, rows at positions p0 .. p0 + n:
//     input      x                                        [n, width]
//     normed     h = norm_attn(x) (pre, sandwich) or x    [n, width]   what W_Q, W_K, W_V multiply
//     q, k, v    h·W (+b), then qk-norm and RoPE           [H, n, hd], [KV, n, hd], [KV, n, hd]
//     heads      softmax(q·kᵀ …)·v, head by head            [n, H·hd]    before W_O (after ablation)
//     attention  heads·W_O (+b), post-norm, layer scale    [n, d]       as added to the stream
//     cross      the cross-attention sublayer's output     [n, d]       as added (decoders of encoder-decoders)
//     cross_q    its queries                               [H, n, hd]
//     mlp        the MLP's output                          [n, d]       as added
//     output     x after the layer                         [n, d]
#pragma once

#include <cstdint>
#include <vector>

#include "attnscope/tensor.hpp"

namespace attnscope {

// The per-token numbers a norm divided by and subtracted, so that a caller can apply it as the linear map it is once
// they are frozen: y = (x − mean) · scale ⊙ w (+ b). RMSNorm subtracts nothing (mean empty). [n] each; for the
// per-head q and k norms, [heads, n].
struct NormScales {
  std::vector<float> scale, mean;
  bool empty() const { return scale.empty(); }
};

// A layer's norms' scales, when the tap asks for them (LayerTap::scales). Each is empty where the layer has no such
// norm: post-LN layers (BERT) normalize after the residual sums, so `attn` and `ffn` scale x + attention and
// x + mlp there; sandwich layers (Gemma) also normalize each sublayer's output (`attn_out`, `mlp_out`).
struct LayerScales {
  NormScales attn, attn_out, cross, ffn, mlp_out, q, k;
};

struct LayerView {
  std::int64_t stack = 0;  // 0: the first stack (an encoder-decoder's encoder); 1: an encoder-decoder's decoder
  std::int64_t layer = 0;
  std::int64_t p0 = 0;  // the rows' first position: the tokens before them are in the stack's cache
  const Matrix* input = nullptr;
  const Matrix* normed = nullptr;
  const Tensor *q = nullptr, *k = nullptr, *v = nullptr;
  const Tensor* heads = nullptr;
  const Matrix* attention = nullptr;
  const Matrix* cross = nullptr;    // null without cross-attention
  const Tensor* cross_q = nullptr;  // the cross-attention's queries [H, n, hd], with it
  const Matrix* mlp = nullptr;
  const Matrix* output = nullptr;
  const LayerScales* scales = nullptr;  // null unless the tap asks
};

// The end of a stack: its last layer's output and the final norm's scales over it (empty where the stack has no final
// norm), before and after that norm.
struct StackEnd {
  std::int64_t stack = 0;
  std::int64_t p0 = 0;             // the rows' first position
  const Matrix* output = nullptr;  // [n, d] before the final norm
  const Matrix* normed = nullptr;  // [n, d] after it: the stack's hidden state
  const NormScales* scales = nullptr;
};

class LayerTap {
 public:
  virtual ~LayerTap() = default;
  virtual void layer(const LayerView& view) = 0;
  virtual void end(const StackEnd&) {}
  // Whether layer() wants LayerView::scales (computed for the tap only).
  virtual bool scales() const { return false; }
};

}  // namespace attnscope
