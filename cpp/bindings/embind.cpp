// The engine's embind registrations: attention, layers and the module's entry points (models.cpp and analysis.cpp
// register theirs; convert.hpp holds the JS conversions all of them share). The bindings are the only code that
// sees Emscripten. They turn JS tensors ({ data, shape }) into views, call the Runtime, and return plain JS objects
// whose typed arrays are fresh copies, so nothing a caller holds points into the wasm heap.
//
// Every method returns either its result or { error: "message" }: errors never
// cross into JS as C++ exceptions, and the web wrapper throws a JS Error. All
// wasm memory a call takes is owned by C++ objects on this stack, so an error
// at any point frees it (the tests check the heap over 1,000 mixed calls).
//
// Order inside a call: read shapes → validate shapes and the memory budget →
// only then allocate and copy the data → run. A huge or wrong shape is refused
// before a single byte is allocated for it.
#include <emscripten/bind.h>

#include "engine.hpp"
#include "model_files.hpp"

namespace attnscope {
namespace {

using emscripten::val;
using namespace bindings;

// Multi-head attention weights held in the heap between calls: read and checked once,
// packed for the GEMM on first use, as a model's are. Peers keep their weights as
// session initializers; this is the same for AttnScope's stateless multiHeadAttention.
class MultiHeadLayer {
 public:
  // params { wq, wk, wv, wo, bq?, bk?, bv?, bo? }; opts { heads }
  val load(val params, val opts) {
    const char* op = "multiHeadLayer";
    return guard(op, [&] {
      JsTensor w[8];
      for (int i = 0; i < 8; ++i) w[i] = tensor_arg(op, kParamNames[i], params[kParamNames[i]]);
      for (int i = 0; i < 4; ++i)
        if (!w[i].present()) throw Error(std::string(op) + ": params." + kParamNames[i] + " is missing");
      MultiHeadOptions o;
      o.heads = Engine::heads_of(op, opts);
      const Shape x = {1, w[0].shape.empty() ? 1 : w[0].shape[0]};
      check_multi_head_shapes(op, x, params_of(w, shape_view), o);
      double bytes = 0;
      for (const JsTensor& t : w)
        if (t.present()) bytes += 8.0 * static_cast<double>(element_count(t.shape));
      check_budget(op, bytes);
      for (int i = 0; i < 8; ++i) {
        if (!w[i].present()) continue;
        bindings::load(w[i]);
        check_finite(op, kParamNames[i], w[i].data.data(), element_count(w[i].shape));
        weights_[i].shape = w[i].shape;
        weights_[i].data = std::move(w[i].data);
        if (i < 4) pack_on_first_use(weights_[i]);
      }
      heads_ = o.heads;
      return val::object();
    });
  }

  // x [n, d_model]; opts { causal, mask, context, returnWeights, returnProjections, into }
  val run(Engine& engine, val x, val opts) {
    const char* op = "multiHeadLayer.run";
    return guard(op, [&] {
      if (!heads_) throw Error(std::string(op) + ": the layer holds no weights");
      const auto view = [this](int i) { return weights_[i].shape.empty() ? TensorView() : weights_[i].view(); };
      const auto params = [&](bool) {
        return MultiHeadParams{view(0), view(1), view(2), view(3), view(4), view(5), view(6), view(7)};
      };
      return engine.multi_head(op, x, opts, heads_, params, [] {});
    });
  }

 private:
  Tensor weights_[8];
  std::int64_t heads_ = 0;
};

// A linear map x·w + b whose weights stay in the heap between calls, checked once and
// packed for the GEMM on first use.
class LinearLayer {
 public:
  // w [k, m], b [m] (optional)
  val load(val w, val b) {
    const char* op = "linearLayer";
    return guard(op, [&] {
      JsTensor ws = tensor_arg(op, "w", w), bs = tensor_arg(op, "b", b);
      check_shape(op, "w", ws.shape, 2, 2);
      if (bs.present() && bs.shape != Shape{ws.shape[1]})
        throw Error(std::string(op) + ": b has shape " + format_shape(bs.shape) + " but w has shape " +
                    format_shape(ws.shape));
      check_budget(op, 8.0 * (double(element_count(ws.shape)) + (bs.present() ? double(bs.shape[0]) : 0.0)));
      for (JsTensor* t : {&ws, &bs}) bindings::load(*t);
      check_finite(op, "w", ws.data.data(), element_count(ws.shape));
      if (bs.present()) check_finite(op, "b", bs.data.data(), element_count(bs.shape));
      w_.shape = ws.shape;
      w_.data = std::move(ws.data);
      pack_on_first_use(w_);
      if (bs.present()) {
        b_.shape = bs.shape;
        b_.data = std::move(bs.data);
      }
      return val::object();
    });
  }

  // x [n, k] → { output [n, m] }
  val run(const Engine& engine, val x) const {
    const char* op = "linearLayer.run";
    return guard(op, [&] {
      if (w_.empty()) throw Error(std::string(op) + ": the layer holds no weights");
      JsTensor xs = tensor_arg(op, "x", x);
      check_shape(op, "x", xs.shape, 2, 2);
      check_budget(op, 8.0 * double(element_count(xs.shape)) + 8.0 * double(xs.shape[0]) * double(w_.shape[1]));
      bindings::load(xs);
      check_finite(op, "x", xs.data.data(), element_count(xs.shape));
      val r = val::object();
      r.set("output", to_js(engine.runtime().linear(xs.view(), w_.view(), b_.empty() ? TensorView() : b_.view())));
      return r;
    });
  }

 private:
  Tensor w_, b_;
};

val build_info() {
  val info = val::object();
  info.set("version", std::string(kVersion));
#ifdef __wasm_simd128__
  info.set("simd", true);
#else
  info.set("simd", false);
#endif
#ifdef __wasm_relaxed_simd__
  info.set("relaxedSimd", true);  // the GEMM kernel's f32x4.relaxed_madd
#else
  info.set("relaxedSimd", false);
#endif
#ifdef __EMSCRIPTEN_PTHREADS__
  info.set("pthreads", true);
#else
  info.set("pthreads", false);
#endif
  info.set("maxCallBytes", static_cast<double>(kMaxCallBytes));
  info.set("maxHeapBytes", kMaxHeapBytes);
  info.set("runningRoomBytes", kRunningRoom);
  return info;
}

// The input checks' message table (attnscope/messages.hpp) → { kind: text }, for the package's own checks.
val message_table() {
  val out = val::object();
  for (std::size_t i = 0; i < messages::count(); ++i) out.set(messages::table()[i].kind, messages::table()[i].text);
  return out;
}

}  // namespace
}  // namespace attnscope

EMSCRIPTEN_BINDINGS(attnscope) {
  using attnscope::bindings::Engine;
  // The web wrapper checks `threads` (1 to 64) before constructing.
  emscripten::class_<Engine>("Engine")
      .constructor<int>()
      .function("attention", &Engine::attention)
      .function("selfAttention", &Engine::selfAttention)
      .function("multiHeadAttention", &Engine::multiHeadAttention)
      .function("linear", &Engine::linear)
      .function("memory", &Engine::memory)
      .function("threads", &Engine::threads);
  using attnscope::MultiHeadLayer;
  emscripten::class_<MultiHeadLayer>("MultiHeadLayer")
      .constructor<>()
      .function("load", &MultiHeadLayer::load)
      .function("run", &MultiHeadLayer::run);
  using attnscope::LinearLayer;
  emscripten::class_<LinearLayer>("LinearLayer")
      .constructor<>()
      .function("load", &LinearLayer::load)
      .function("run", &LinearLayer::run);
  emscripten::function("buildInfo", &attnscope::build_info);
  emscripten::function("ggufWeightBytes", &attnscope::bindings::gguf_weight_bytes);
  emscripten::function("messages", &attnscope::message_table);
}
