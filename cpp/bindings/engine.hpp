// The engine object JS holds: a Runtime and the calls on tensors (attention, multi-head
// attention, linear). Shared by the bindings files; embind.cpp registers it.
#pragma once

#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>

#include "attnscope/attnscope.hpp"
#include "convert.hpp"

namespace attnscope::bindings {

inline constexpr const char* kParamNames[8] = {"wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"};

// A one-shot call's weight matrix [k, n], read from its JS array a block of rows at a time while it is
// multiplied (StreamedWeight): the GEMMs pack each block and multiply it while it is in cache, so the call
// reads the weight once and writes no panels of it to memory, where copying the whole weight in, checking it
// and packing it would be three passes over memory.
class JsRows : public RowSource {
 public:
  // `data` is read through a plain Float32Array over its memory, made here: the reads below then run the
  // built-in methods, which cannot throw, never a subclass's or a proxy's own. (A JS exception passes through
  // C++ without unwinding it, and with threads the reads run inside a parallel loop: for_each_block reads
  // the next block while the workers pack this one.)
  JsRows(const char* op, const char* name, const val& data, std::int64_t n)
      : op_(op),
        name_(name),
        data_(val::global("Float32Array").new_(data["buffer"], data["byteOffset"], data["length"])),
        n_(n) {}
  void read(std::int64_t first, std::int64_t count, float* out) const override {
    val(emscripten::typed_memory_view(static_cast<std::size_t>(count * n_), out))
        .call<void>("set", data_.call<val>("subarray", static_cast<double>(first * n_),
                                           static_cast<double>((first + count) * n_)));
  }
  void reject(std::int64_t first, std::int64_t count, const float* rows) const override {
    check_finite(op_, name_, rows, count * n_, false, first * n_);
  }

 private:
  const char* op_;
  const char* name_;
  val data_;
  std::int64_t n_;
};

inline void stream_from_js(const char* op, const char* name, JsTensor& w) {
  const std::int64_t k = w.shape[0], n = w.shape[1];
  w.streamed = std::make_unique<StreamedWeight>(k, n, std::make_unique<JsRows>(op, name, w.js["data"], n));
}

// Bytes malloc has handed out. mallinfo's fields are int; dlmalloc counts in size_t and the field keeps its low 32
// bits, which read unsigned are the count up to the 4 GiB heap.
inline double allocated_bytes() { return static_cast<double>(static_cast<unsigned>(mallinfo().uordblks)); }

// The wasm heap's limit (-sMAXIMUM_MEMORY=4GB: Emscripten stops a page short, so that a heap size fits in size_t), and
// what a model's weights must leave free of it for running.
inline constexpr double kMaxHeapBytes = 4096.0 * 1024 * 1024 - 65536;
inline constexpr double kRunningRoom = 256.0 * 1024 * 1024;

// The heap buffer attention writes its weights into on more than one thread (see WeightsOut) before they are
// copied out to JS, uninitialized (the kernels write every value, and at n = 4096 it is 805 MB to zero). Kept
// between calls that copy into the caller's arrays (options.into), which repeat with the same shapes; released
// after any other call, so that the heap it held is free for models.
class WeightsBuffer {
 public:
  // `count` floats for one call (none when no weights are returned); `keep`: leave them for the next call.
  class Lease {
   public:
    Lease(WeightsBuffer& buffer, std::int64_t count, bool keep) : buffer_(buffer), keep_(keep) {
      if (count <= 0) return;
      if (buffer.capacity_ < count) {
        buffer.data_.reset();  // the old one first, so that the heap need not hold both
        buffer.capacity_ = 0;  // (and none, should the new one not fit)
        buffer.data_.reset(new float[static_cast<std::size_t>(count)]);
        buffer.capacity_ = count;
      }
      data_ = buffer.data_.get();
    }
    ~Lease() {
      if (!keep_) buffer_.data_.reset(), buffer_.capacity_ = 0;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    float* data() const { return data_; }

   private:
    WeightsBuffer& buffer_;
    bool keep_;
    float* data_ = nullptr;
  };

 private:
  std::unique_ptr<float[]> data_;
  std::int64_t capacity_ = 0;
};

// Where a call's attention weights go on their way to JS. On one thread, straight into the JS array the call
// returns (the caller's options.into.weights, or a new one), a block of rows at a time from the kernel's buffer of
// one block (WeightsSink): each value written once, and no heap buffer of them all ([heads, n_q, n_k], 805 MB at
// n = 4096) to copy out again. With more threads into the heap buffer, then copied out: the pool's workers cannot
// reach JS objects.
//
// Causal weights are zero after key i in row i, so into a new array, whose values are zeros already, only keys 0..i
// of each row are copied (copy_causal_rows, from kCausalRowsFrom keys): the pages that would hold only zeros are
// never touched, and each first touch of a page is a page fault. Into a caller's array every value is copied: one
// copy per block of rows is faster there than a copy and a fill per row.
class WeightsOut {
 public:
  WeightsOut(WeightsBuffer& buffer, int threads, bool returned, Shape shape, const val& into, bool causal)
      : shape_(std::move(shape)),
        into_(into),
        n_q_(shape_[shape_.size() - 2]),
        n_k_(shape_.back()),
        causal_(causal && into.isUndefined()) {
    if (!returned) {
      lease_.emplace(buffer, 0, false);  // releases the buffer, so that the heap it held is free for models
      return;
    }
    if (threads == 1) {
      array_ = into.isUndefined() ? val::global("Float32Array").new_(static_cast<double>(element_count(shape_))) : into;
      sink_ = [this](std::int64_t head, std::int64_t row, std::int64_t rows, const float* values) {
        const std::int64_t at = head * n_q_ * n_k_ + row * n_k_;
        if (causal_)
          copy_causal_rows(array_, values, at, row, rows, n_k_);
        else
          array_.call<void>("set", val(emscripten::typed_memory_view(static_cast<std::size_t>(rows * n_k_), values)),
                            static_cast<double>(at));
      };
      return;
    }
    lease_.emplace(buffer, element_count(shape_), !into.isUndefined());
  }
  WeightsOut(const WeightsOut&) = delete;
  WeightsOut& operator=(const WeightsOut&) = delete;

  // Sets where the kernel puts them: o.weights_sink or o.weights_out.
  template <typename Options>
  void direct(Options& o) const {
    if (sink_) o.weights_sink = sink_;
    if (lease_ && lease_->data()) o.weights_out = lease_->data();
  }

  // The weights as a JS tensor; `weights` is the result's own Tensor, used when neither sink nor buffer was.
  val result(const Tensor& weights) const {
    if (sink_) return js_tensor(array_, shape_);
    const float* data = lease_ && lease_->data() ? lease_->data() : weights.data.data();
    return causal_ ? weights_to_js(data, shape_, true) : to_js(data, shape_, into_);
  }

 private:
  Shape shape_;
  val into_;
  std::int64_t n_q_, n_k_;
  bool causal_;  // causal weights into a new array: copy_causal_rows
  val array_ = val::undefined();
  WeightsSink sink_;
  std::optional<WeightsBuffer::Lease> lease_;
};

class Engine {
 public:
  explicit Engine(int threads) : runtime_(threads) {}

  // q, k, v: { data: Float32Array, shape }; opts: { causal, scale, mask, returnWeights }
  val attention(val q, val k, val v, val opts) {
    return guard("attention", [&] { return run_attention("attention", q, k, v, opts); });
  }

  // x: { data, shape }; opts: { scale, causal, mask, returnWeights }
  val selfAttention(val x, val opts) {
    return guard("selfAttention", [&] { return run_attention("selfAttention", x, x, x, opts); });
  }

  // x [n, d_model]; params { wq, wk, wv, wo, bq?, bk?, bv?, bo? };
  // opts { heads, causal, mask, context, returnWeights, returnProjections, into }
  val multiHeadAttention(val x, val params, val opts) {
    const char* op = "multiHeadAttention";
    return guard(op, [&] {
      JsTensor w[8];
      for (int i = 0; i < 8; ++i) w[i] = tensor_arg(op, kParamNames[i], params[kParamNames[i]]);
      if (!w[3].present()) throw Error(std::string(op) + ": params.wo is missing");
      return multi_head(
          op, x, opts, heads_of(op, opts),
          [&](bool data) {
            return data ? params_of(w, [](const JsTensor& t) { return t.view(); }) : params_of(w, shape_view);
          },
          [&] {
            // Weights the GEMMs can read as panels: each head's columns start on a whole panel.
            const std::int64_t heads = heads_of(op, opts);
            for (int i = 0; i < 8; ++i) {
              const bool panels = i == 3 || (i < 3 && heads_on_whole_panels(w[i].shape[1], heads));
              if (w[i].present() && panels)
                stream_from_js(op, kParamNames[i], w[i]);
              else
                load(w[i]);
            }
          });
    });
  }

  // The body of multiHeadAttention, for weights given per call or held by a MultiHeadLayer.
  // `weights(false)` gives shape-only views for checking, `weights(true)` the data, after `load_weights()`.
  val multi_head(const char* op, const val& x, const val& opts, std::int64_t heads,
                 const std::function<MultiHeadParams(bool)>& weights, const std::function<void()>& load_weights) {
    JsTensor xs = tensor_arg(op, "x", x);
    JsTensor context = tensor_arg(op, "context", opts["context"]);
    JsMask mask(op, opts["mask"]);
    MultiHeadOptions o;
    o.heads = heads;
    o.causal = flag(opts, "causal", false);
    o.return_weights = flag(opts, "returnWeights", true);
    o.return_projections = flag(opts, "returnProjections", false);
    o.mask = mask.mask();
    o.context = shape_view(context);
    check_multi_head_shapes(op, xs.shape, weights(false), o);
    const std::int64_t n = xs.shape[0], n_k = context.present() ? context.shape[0] : n;
    const val into_output = into_array(op, opts, "output", {n, weights(false).wo.shape[1]}, true, "");
    const val into_weights =
        into_array(op, opts, "weights", {heads, n, n_k}, o.return_weights, "returnWeights is false");
    // The count holds x and the weights, which are copied (or streamed as panels) into the heap once, and
    // every output; the copies out are JS arrays, outside the heap. So n = 4096 with weights (875 MiB) runs.
    check_budget(op, multi_head_bytes(xs.shape, weights(false), o, runtime_.threads()));

    load(xs);
    load_weights();
    load(context);
    mask.load_data();
    o.mask = mask.mask();
    o.context = context.view();
    WeightsOut weights_out(weights_buffer_, runtime_.threads(), o.return_weights, {heads, n, n_k}, into_weights,
                           o.causal);
    weights_out.direct(o);
    const MultiHeadResult r = runtime_.multi_head_attention(xs.view(), weights(true), o);
    val out = val::object();
    out.set("output", to_js(r.output, into_output));
    if (o.return_weights) out.set("weights", weights_out.result(r.weights));
    if (o.return_projections) {
      out.set("q", to_js(r.q));
      out.set("k", to_js(r.k));
      out.set("v", to_js(r.v));
    }
    return out;
  }

  static std::int64_t heads_of(const char* op, const val& opts) {
    const double heads = opts["heads"].as<double>();
    if (!(heads >= 1 && heads <= 4096) || std::floor(heads) != heads)
      throw Error(std::string(op) + ": heads must be an integer from 1 to 4096, got " + js_string(opts["heads"]));
    return static_cast<std::int64_t>(heads);
  }

  // x [n, k] · w [k, m] (+ b [m]) → { output [n, m] }: the packed SIMD128 matrix multiply.
  val linear(val x, val w, val b) {
    const char* op = "linear";
    return guard(op, [&] {
      JsTensor xs = tensor_arg(op, "x", x), ws = tensor_arg(op, "w", w), bs = tensor_arg(op, "b", b);
      check_shape(op, "x", xs.shape, 2, 2);
      check_shape(op, "w", ws.shape, 2, 2);
      if (bs.present()) check_shape(op, "b", bs.shape, 1, 1);
      const double values = double(element_count(xs.shape)) + double(element_count(ws.shape)) +
                            double(xs.shape[0]) * double(ws.shape[1]) * 2.0;
      check_budget(op, 4.0 * values + (bs.present() ? 4.0 * double(bs.shape[0]) : 0.0));
      for (JsTensor* t : {&xs, &ws, &bs}) load(*t);
      check_finite(op, "x", xs.data.data(), element_count(xs.shape));
      check_finite(op, "w", ws.data.data(), element_count(ws.shape));
      if (bs.present()) check_finite(op, "b", bs.data.data(), element_count(bs.shape));
      val r = val::object();
      r.set("output", to_js(runtime_.linear(xs.view(), ws.view(), bs.view())));
      return r;
    });
  }

  // Live heap figures, for leak checks and the benchmark's peak-heap column.
  val memory() const {
    val m = val::object();
    m.set("heapBytes", static_cast<double>(emscripten_get_heap_size()));
    m.set("allocatedBytes", allocated_bytes());
    return m;
  }

  int threads() const { return runtime_.threads(); }
  const Runtime& runtime() const { return runtime_; }

 private:
  val run_attention(const char* op, const val& q, const val& k, const val& v, const val& opts) {
    const bool self = std::string(op) == "selfAttention";
    JsTensor qs = tensor_arg(op, self ? "x" : "q", q);
    JsTensor ks, vs;
    if (!self) {
      ks = tensor_arg(op, "k", k);
      vs = tensor_arg(op, "v", v);
    }
    JsMask mask(op, opts["mask"]);
    AttentionOptions o;
    o.causal = flag(opts, "causal", false);
    o.return_weights = flag(opts, "returnWeights", true);
    if (!opts["scale"].isUndefined()) o.scale = static_cast<float>(opts["scale"].as<double>());
    o.mask = mask.mask();
    // Shapes only (shape views share one dummy pointer, so name x explicitly).
    if (self) check_shape(op, "x", qs.shape, 2, 3);
    const AttentionDims d =
        check_attention_shapes(op, qs.shape, (self ? qs : ks).shape, (self ? qs : vs).shape, o.mask);
    // Inputs are copied into the heap once more than the kernel counts.
    check_budget(op, 2.0 * attention_bytes(d, o, runtime_.threads()));
    const Shape rows = d.heads_axis ? Shape{d.heads, d.n_q} : Shape{d.n_q};
    const auto with = [&](std::int64_t last) {
      Shape s = rows;
      s.push_back(last);
      return s;
    };
    const val into_output = into_array(op, opts, "output", with(d.d_v), true, "");
    const val into_weights = into_array(op, opts, "weights", with(d.n_k), o.return_weights, "returnWeights is false");

    load(qs);
    load(ks);
    load(vs);
    mask.load_data();
    o.mask = mask.mask();
    WeightsOut weights_out(weights_buffer_, runtime_.threads(), o.return_weights, with(d.n_k), into_weights, o.causal);
    weights_out.direct(o);
    const AttentionResult r =
        self ? runtime_.self_attention(qs.view(), o) : runtime_.attention(qs.view(), ks.view(), vs.view(), o);
    val out = val::object();
    out.set("output", to_js(r.output, into_output));
    if (o.return_weights) out.set("weights", weights_out.result(r.weights));
    return out;
  }

  Runtime runtime_;
  WeightsBuffer weights_buffer_;
};

}  // namespace attnscope::bindings
