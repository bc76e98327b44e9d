// A token's residual stream as the sum of what wrote it (explain.hpp): its sources, one row each, in float64. The
// front end starts it (FrontEnd::decompose), each layer adds its heads (each through its rows of W_O), its MLP and
// their biases, and each norm the stream passes through is applied with the run's own per-token scale frozen, which
// makes the norm linear: LayerNorm centres and scales each source on its own, and its bias becomes a source.
#pragma once

#include <cstdint>
#include <vector>

#include "attnscope/explain.hpp"
#include "attnscope/taps.hpp"
#include "models/transformer.hpp"

namespace attnscope::transformer {

class Stack;

struct Stream {
  std::int64_t width = 0;
  std::vector<Source> sources;
  std::vector<double> values;  // [sources, width]

  explicit Stream(std::int64_t w = 0) : width(w) {}
  std::int64_t size() const { return static_cast<std::int64_t>(sources.size()); }
  double* row(std::int64_t i) { return values.data() + i * width; }
  const double* row(std::int64_t i) const { return values.data() + i * width; }
  template <typename T>
  void add(const Source& s, const T* v) {
    sources.push_back(s);
    values.insert(values.end(), v, v + width);
  }
  // The stream itself: every source summed.
  std::vector<double> sum() const;
};

// The norm applied with `scale` frozen: each source centred (LayerNorm) and multiplied by scale ⊙ w; LayerNorm's
// bias b, where it has one, added as the source `bias`. Nothing where w is empty (no such norm).
void freeze_norm(Stream& s, Norm norm, float scale, const Tensor& w, const Tensor& b, const Source& bias);

// The scale a norm divides a row by, as Stack::norm computes it: 1 / √(mean(x²) + eps) (RMS), 1 / √(var + eps)
// (LayerNorm). For the rows a front end normalizes, which no layer view shows.
float norm_scale(Norm norm, const std::vector<double>& x, float eps);

// A source of the stream of token `position` in stack `stack`: the front end's (`layer` -1) or layer `layer`'s.
inline Source source_of(Source::Kind kind, std::int64_t stack, std::int64_t layer, std::int64_t head,
                        std::int64_t position) {
  Source s;
  s.kind = kind;
  s.stack = stack;
  s.layer = layer;
  s.head = head;
  s.position = position;
  return s;
}

// Σ a[i] · b[i] in float64, in four running sums (which the compiler keeps in SIMD lanes): plain loops for the
// explanations' few products, rather than a second GEMM (Eigen's, for float64) in every build's binary.
inline double dot(const double* a, const double* b, std::int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    s0 += a[i] * b[i], s1 += a[i + 1] * b[i + 1], s2 += a[i + 2] * b[i + 2], s3 += a[i + 3] * b[i + 3];
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

// A stream's sources through the columns [first, first + count) of W (x·W, W [width, ·]): [sources, count].
std::vector<double> project(const Stream& s, const Weight& w, std::int64_t first, std::int64_t count);

// What the tracked token's row of its stop layer holds: the norms' scales and the engine's own projections.
struct LayerRow {
  float attn_scale = 0, cross_scale = 0;  // the pre-norms' scales (0 where the layer normalizes after the sums)
  std::vector<float> q_scales, k_scales;  // QK-norm's, per query head and per key/value head
  std::vector<float> q, k;                // the engine's q [H, hd] and k [KV, hd], after QK-norm and RoPE
  std::vector<float> cross_q;             // the cross-attention's q [H, hd]
};

// Follows one token's stream through its stack's layers, from its front end's start: every layer before `stop`
// adds to it. At layer `stop` it keeps the stream as the layer reads it, with the row's scales and projections; with
// `through_attention`, it goes on through that layer's self-attention sublayer, to the stream its cross-attention
// reads. With stop = the stack's layers it runs to the stack's end, where it keeps the stream before the final norm,
// that norm's scale and the engine's final-normed row.
class StreamTracker {
 public:
  StreamTracker(const Stack& stack, std::int64_t stack_index, std::int64_t position, Stream start, std::int64_t stop,
                bool through_attention = false);

  std::int64_t stack_index() const { return stack_index_; }
  std::int64_t position() const { return position_; }
  // Whether the view is of a layer this tracker still reads, with the token in its rows.
  bool follows(const LayerView& view) const;
  // Whether it reads that layer's heads: it adds them to the stream.
  bool wants_heads(const LayerView& view) const;
  // A layer of its stack, with each head's output at the token through its rows of W_O ([H, d]; empty unless
  // wants_heads).
  void layer(const LayerView& view, const Matrix& heads);
  void end(const StackEnd& end);
  // Whether it reached its stop.
  bool done() const { return stopped_ || ended_; }

  Stream stream;
  LayerRow at;                // at `stop`
  float final_scale = 0;      // at the end
  std::vector<float> hidden;  // the engine's final-normed row, at the end

 private:
  const Stack& stack_;
  std::int64_t stack_index_, position_, stop_;
  bool through_attention_;
  bool stopped_ = false, ended_ = false;
};

// A tap that hands each layer view to the trackers that follow one of its rows, with that row's heads through W_O
// (read in its packed form, each head through its own rows).
class TrackerTap final : public LayerTap {
 public:
  // `stacks`: the model's, by index.
  TrackerTap(std::vector<const Stack*> stacks, std::vector<StreamTracker*> trackers)
      : stacks_(std::move(stacks)), trackers_(std::move(trackers)) {}
  void layer(const LayerView& view) override;
  void end(const StackEnd& end) override;
  bool scales() const override { return true; }

 private:
  std::vector<const Stack*> stacks_;
  std::vector<StreamTracker*> trackers_;
};

}  // namespace attnscope::transformer
