// AttnScope's attention operations on row-major Eigen matrices.
//
//   attention            softmax(q kᵀ · scale + mask) v            q [heads?, n_q, d_k]
//   self_attention       softmax(x xᵀ · scale) x, scale = 1        x [heads?, n, d]
//   multi_head_attention concat_h(attention(x W_Q,h, c W_K,h, c W_V,h)) W_O
//
// `Runtime` owns the thread pool and runs the optimized kernels; namespace
// `reference` holds plain-loop implementations of the same operations that the
// tests hold the kernels to.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "attnscope/error.hpp"
#include "attnscope/tensor.hpp"

namespace attnscope {

// Which keys each query may see, beyond causality. Shape [n_q, n_k] (shared by
// every head) or [heads, n_q, n_k].
struct Mask {
  enum class Kind { none, keep, additive };
  Kind kind = Kind::none;
  const std::uint8_t* keep = nullptr;  // kind == keep: 1 = attend, 0 = hidden.
  const float* additive = nullptr;     // kind == additive: added to the scores; -inf hides.
  Shape shape;

  static Mask none() { return {}; }
  static Mask keep_mask(const std::uint8_t* data, Shape shape) { return {Kind::keep, data, nullptr, std::move(shape)}; }
  static Mask additive_mask(const float* data, Shape shape) {
    return {Kind::additive, nullptr, data, std::move(shape)};
  }
};

// Attention weights handed over a block of query rows at a time, instead of written into one buffer of them
// all: rows [row, row + rows) of head `head` (0 without a heads axis), rows × n_k floats, final, valid only
// during the call. Called on the runtime's threads, at once from several when it has more than one. What the
// wasm bindings do with them: WeightsOut in cpp/bindings/engine.hpp.
using WeightsSink = std::function<void(std::int64_t head, std::int64_t row, std::int64_t rows, const float* values)>;

struct AttentionOptions {
  bool causal = false;         // query i sees keys 0..i (aligned at the start).
  std::optional<float> scale;  // default 1/√d_k (attention) or 1 (self_attention).
  Mask mask;
  bool return_weights = true;  // false skips the [heads, n_q, n_k] weights output.
  // Where the weights go instead of a new Tensor, which then stays empty: every one of the [heads,] n_q × n_k
  // floats is written, so the memory need not be zeroed. The bindings' buffer on more than one thread, kept
  // between calls that copy into the caller's arrays (rather than a new zeroed Tensor each call, 805 MB at
  // n = 4096), or a layer's place in a model run's maps.
  float* weights_out = nullptr;
  // Or where each block of rows of the weights goes (then weights_out is not used and no Tensor is made).
  WeightsSink weights_sink;
};

struct AttentionResult {
  Tensor output;   // [n_q, d_v] or [heads, n_q, d_v]
  Tensor weights;  // [n_q, n_k] or [heads, n_q, n_k]; empty when not requested or written to weights_out.
};

// Projection weights for multi-head attention; projections are x·W (+ b).
struct MultiHeadParams {
  TensorView wq, wk;  // [d_model, heads·d_k]
  TensorView wv;      // [d_model, heads·d_v]
  TensorView wo;      // [heads·d_v, d_model]; optional in C++: without it the output is the
                      // concatenated heads [n, heads·d_v] (the JS API requires it)
  TensorView bq, bk;  // optional [heads·d_k]
  TensorView bv;      // optional [heads·d_v]
  TensorView bo;      // optional [d_model]
};

struct MultiHeadOptions {
  std::int64_t heads = 1;
  bool causal = false;
  Mask mask;           // [n, n_k] or [heads, n, n_k]
  TensorView context;  // optional [m, d_model]: cross-attention keys and values.
  bool return_weights = true;
  bool return_projections = false;
  // Where the weights go instead of a new Tensor, which then stays empty: every one of the [heads,] n_q × n_k
  // floats is written, so the memory need not be zeroed. The bindings' buffer on more than one thread, kept
  // between calls that copy into the caller's arrays (rather than a new zeroed Tensor each call, 805 MB at
  // n = 4096), or a layer's place in a model run's maps.
  float* weights_out = nullptr;
  // Or where each block of rows of the weights goes (then weights_out is not used and no Tensor is made).
  WeightsSink weights_sink;
};

struct MultiHeadResult {
  Tensor output;   // [n, d_model], or [n, heads·d_v] without wo
  Tensor weights;  // [heads, n, n_k]; empty when not requested or written to weights_out.
  Tensor q, k, v;  // [heads, n, d_k], [heads, n_k, d_k], [heads, n_k, d_v] on request.
};

// The dimensions of one attention call, after validation.
struct AttentionDims {
  std::int64_t heads, n_q, n_k, d_k, d_v;
  bool heads_axis;               // inputs were rank 3
  std::int64_t group = 1;        // query heads per key/value head (grouped-query attention): k and v have heads / group
  std::int64_t kv_capacity = 0;  // rows each key/value head has room for in k and v (a KV cache); 0: n_k

  std::int64_t kv_rows() const { return kv_capacity ? kv_capacity : n_k; }
};

// Validates shapes (not data) and returns the dimensions; throws Error naming
// the argument and shapes. Cheap: the bindings call it before copying inputs.
AttentionDims check_attention_shapes(const char* op, const Shape& q, const Shape& k, const Shape& v, const Mask& mask);
// check_attention_shapes on views; when q, k and v are one tensor (self-attention)
// it is named "x". Reads no data: call it, then check the budget, then the values.
AttentionDims check_attention_inputs(const char* op, const TensorView& q, const TensorView& k, const TensorView& v,
                                     const Mask& mask);
// Every value finite (an additive mask may hold -inf); self-attention's x is scanned once.
void check_attention_values(const char* op, const TensorView& q, const TensorView& k, const TensorView& v,
                            const Mask& mask);
void check_multi_head_shapes(const char* op, const Shape& x, const MultiHeadParams& p, const MultiHeadOptions& o);

// Bytes of inputs, outputs and scratch one call needs; compared with kMaxCallBytes.
double attention_bytes(const AttentionDims& d, const AttentionOptions& o, int threads);
double multi_head_bytes(const Shape& x, const MultiHeadParams& p, const MultiHeadOptions& o, int threads);

class ThreadPool;

// Runs the optimized kernels, splitting work across `threads` threads (the
// calling thread included) by heads and blocks of query rows.
class Runtime {
 public:
  explicit Runtime(int threads = 1);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int threads() const;

  AttentionResult attention(const TensorView& q, const TensorView& k, const TensorView& v,
                            const AttentionOptions& options = {}) const;
  AttentionResult self_attention(const TensorView& x, AttentionOptions options = {}) const;
  MultiHeadResult multi_head_attention(const TensorView& x, const MultiHeadParams& params,
                                       const MultiHeadOptions& options) const;
  // x·w + b, split across threads by row blocks. x [n, k], w [k, m], b [m] (optional) → [n, m]
  Matrix linear(const TensorView& x, const TensorView& w, const TensorView& b = {}) const;
  // Calls fn(begin, end) on blocks of [0, rows) across the threads: for row-wise work
  // such as activations, which would otherwise run on one thread between the GEMMs.
  void parallel_rows(std::int64_t rows, const std::function<void(std::int64_t, std::int64_t)>& fn) const;
  // The thread pool, for models that call the kernels themselves.
  ThreadPool& pool() const { return *pool_; }
  // Work only the calling thread can do (copying results out to JavaScript), run beside the next loops' tasks
  // while workers are busy with them (ThreadPool::set_aside); what is left runs in run_set_aside.
  void set_aside(std::function<void()> piece) const;
  void run_set_aside() const;
  void drop_set_aside() const;

 private:
  std::unique_ptr<ThreadPool> pool_;
};

// Plain loops, one element at a time, in the order the formulas read. Slow and
// obviously right: the yardstick for the kernels. Same validation and results.
namespace reference {
AttentionResult attention(const TensorView& q, const TensorView& k, const TensorView& v,
                          const AttentionOptions& options = {});
AttentionResult self_attention(const TensorView& x, AttentionOptions options = {});
MultiHeadResult multi_head_attention(const TensorView& x, const MultiHeadParams& params,
                                     const MultiHeadOptions& options);
}  // namespace reference

}  // namespace attnscope
