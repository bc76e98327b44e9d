// The only file that sees Emscripten. It turns JS tensors ({ data, shape }) into
// views, calls the Runtime, and returns plain JS objects whose typed arrays are
// fresh copies, so nothing a caller holds points into the wasm heap.
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
#include <emscripten/heap.h>
#include <malloc.h>

#include <cmath>
#include <functional>

#include "../src/gemm.hpp"
#include "attnscope/attnscope.hpp"
#include "attnscope/model.hpp"
#include "convert.hpp"

namespace attnscope {
namespace {

using emscripten::val;
using namespace bindings;

constexpr const char* kParamNames[8] = {"wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"};

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
  // opts { heads, causal, mask, context, returnWeights, returnProjections }
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
            for (auto& t : w) load(t);
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
    check_budget(op, 2.0 * multi_head_bytes(xs.shape, weights(false), o, runtime_.threads()));

    load(xs);
    load_weights();
    load(context);
    mask.load_data();
    o.mask = mask.mask();
    o.context = context.view();
    const MultiHeadResult r = runtime_.multi_head_attention(xs.view(), weights(true), o);
    val out = val::object();
    out.set("output", to_js(r.output));
    if (o.return_weights) out.set("weights", to_js(r.weights));
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

  // The SIMD128 micro-kernel's GFLOPS on one thread, operands in L1: the GEMM's ceiling here.
  double kernelPeak() const { return kernels::micro_kernel_gflops(0.3); }

  // Live heap figures, for leak checks and the benchmark's peak-heap column.
  val memory() const {
    const struct mallinfo mi = mallinfo();
    val m = val::object();
    m.set("heapBytes", static_cast<double>(emscripten_get_heap_size()));
    m.set("allocatedBytes", static_cast<double>(mi.uordblks));
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

    load(qs);
    load(ks);
    load(vs);
    mask.load_data();
    o.mask = mask.mask();
    const AttentionResult r =
        self ? runtime_.self_attention(qs.view(), o) : runtime_.attention(qs.view(), ks.view(), vs.view(), o);
    val out = val::object();
    out.set("output", to_js(r.output));
    if (o.return_weights) out.set("weights", to_js(r.weights));
    return out;
  }

  Runtime runtime_;
};

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
        if (i < 4) kernels::prepare_weight(weights_[i]);
      }
      heads_ = o.heads;
      return val::object();
    });
  }

  // x [n, d_model]; opts { causal, mask, context, returnWeights, returnProjections }
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
      kernels::prepare_weight(w_);
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

// Most bytes of model files one load may copy into the heap: room for bert-base in
// F32 (440 MB) and its converted weights beside it within the 2 GiB heap.
constexpr double kMaxModelBytes = 1024.0 * 1024 * 1024;

// Copies { name: Uint8Array } into the heap, refusing more than kMaxModelBytes first.
ModelFiles copy_files(const char* op, const val& files) {
  const val names = val::global("Object").call<val>("keys", files);
  const int count = names["length"].as<int>();
  double total = 0;
  for (int i = 0; i < count; ++i) total += files[names[i]]["byteLength"].as<double>();
  if (total > kMaxModelBytes)
    throw Error(std::string(op) + ": the files hold " + std::to_string(static_cast<long long>(total / (1 << 20))) +
                " MiB, above the limit of 1024 MiB");
  ModelFiles copy;
  for (int i = 0; i < count; ++i) {
    const val bytes = files[names[i]];
    std::string& data = copy[names[i].as<std::string>()];
    data.resize(bytes["byteLength"].as<std::size_t>());
    val(emscripten::typed_memory_view(data.size(), reinterpret_cast<std::uint8_t*>(data.data())))
        .call<void>("set", bytes);
  }
  return copy;
}

val encoding_to_js(const Encoding& e) {
  val out = val::object();
  val tokens = val::array();
  for (const auto& t : e.tokens) tokens.call<void>("push", t);
  out.set("tokens", tokens);
  out.set("ids", val::global("Int32Array").new_(val(emscripten::typed_memory_view(e.ids.size(), e.ids.data()))));
  return out;
}

// A tokenizer on its own, from a model's tokenizer files.
class TokenizerHandle {
 public:
  val load(val files) {
    return guard("loadTokenizer", [&] {
      tokenizer_ = make_tokenizer(copy_files("loadTokenizer", files));
      if (!tokenizer_)
        throw Error(
            "loadTokenizer: no tokenizer files AttnScope reads (vocab.json + merges.txt, or a SentencePiece "
            "vocab.json)");
      return val::object();
    });
  }
  val info() const {
    val i = val::object();
    i.set("vocabSize", static_cast<double>(tokenizer_ ? tokenizer_->vocab_size() : 0));
    i.set("normalization", tokenizer_ ? tokenizer_->normalization() : std::string());
    return i;
  }
  val tokenize(const std::string& text) const {
    return guard("tokenize", [&] {
      if (!tokenizer_) throw Error("tokenize: no tokenizer is loaded");
      return encoding_to_js(tokenizer_->encode(text));
    });
  }

 private:
  std::unique_ptr<Tokenizer> tokenizer_;
};

// A loaded model. JS creates an empty handle, then load() fills it or returns
// { error }, so a failed load never crosses into JS as an exception.
class ModelHandle {
 public:
  // files: { "config.json": Uint8Array, "model.safetensors": Uint8Array, ... }
  val load(val files) {
    return guard("loadModel", [&] {
      model_ = Model::load(copy_files("loadModel", files));  // the file copies are freed when this returns
      return val::object();
    });
  }

  val info() const {
    val i = val::object();
    if (!model_) return i;
    const ModelInfo& m = model_->info();
    i.set("name", m.name);
    i.set("architecture", m.architecture);
    i.set("layers", static_cast<double>(m.layers));
    i.set("heads", static_cast<double>(m.heads));
    i.set("dModel", static_cast<double>(m.d_model));
    i.set("maxTokens", static_cast<double>(m.max_tokens));
    i.set("vocabSize", static_cast<double>(m.vocab_size));
    i.set("normalization", model_->tokenizer() ? model_->tokenizer()->normalization() : std::string());
    return i;
  }

  // Layer `layer`'s { wq, wk, wv, wo, bq?, bk?, bv?, bo? }, copied out.
  val attentionWeights(double layer) const {
    return guard("attentionWeights", [&] {
      if (!model_) throw Error("attentionWeights: no model is loaded");
      const std::int64_t layers = model_->info().layers;
      if (!(layer >= 0 && layer < double(layers)) || std::floor(layer) != layer)
        throw Error("attentionWeights: layer must be a whole number from 0 to " + std::to_string(layers - 1) +
                    ", got " + js_string(val(layer)));
      const MultiHeadParams p = model_->attention_weights(static_cast<std::int64_t>(layer));
      val out = val::object();
      const auto put = [&](const char* name, const TensorView& t) {
        if (!t.empty()) out.set(name, to_js(t.data, t.shape));
      };
      put("wq", p.wq), put("wk", p.wk), put("wv", p.wv), put("wo", p.wo);
      put("bq", p.bq), put("bk", p.bk), put("bv", p.bv), put("bo", p.bo);
      return out;
    });
  }

  // text: already normalized as info().normalization says → { tokens, ids }
  val tokenize(const std::string& text) const {
    return guard("tokenize", [&] {
      if (!model_) throw Error("tokenize: no model is loaded");
      if (!model_->tokenizer()) throw Error("tokenize: this model's files hold no tokenizer AttnScope reads");
      return encoding_to_js(model_->tokenizer()->encode(text));
    });
  }

  // input: text (already normalized as info().normalization says) or an Int32Array of ids;
  // opts: { returnProjections }
  val run(const Engine& engine, val input, val opts) const {
    return guard("run", [&] {
      if (!model_) throw Error("run: no model is loaded");
      RunOptions o;
      o.return_projections = flag(opts, "returnProjections", false);
      if (!opts["attentionMask"].isUndefined()) {
        const val m = opts["attentionMask"];
        o.attention_mask.resize(m["length"].as<std::size_t>());
        val(emscripten::typed_memory_view(o.attention_mask.size(), o.attention_mask.data())).call<void>("set", m);
      }
      if (!opts["ablateHeads"].isUndefined()) {
        const val list = opts["ablateHeads"];
        if (!val::global("Array").call<bool>("isArray", list))
          throw Error("run: ablateHeads must be an array of [layer, head] pairs");
        for (int i = 0; i < list["length"].as<int>(); ++i) {
          const std::string name = "ablateHeads[" + std::to_string(i) + "]";
          const std::vector<std::int64_t> lh = integers_arg("run", name.c_str(), list[i], 0, kMaxDimension);
          if (lh.size() != 2) throw Error("run: " + name + " must be a [layer, head] pair");
          o.ablate_heads.emplace_back(lh[0], lh[1]);
        }
      }
      ModelRun r;
      if (input.isString()) {
        r = model_->run(engine.runtime(), input.as<std::string>(), o);
      } else {
        std::vector<std::int32_t> ids(input["length"].as<std::size_t>());
        val(emscripten::typed_memory_view(ids.size(), ids.data())).call<void>("set", input);
        r = model_->run_ids(engine.runtime(), std::move(ids), o);
      }
      val out = val::object();
      val tokens = val::array();
      for (const auto& t : r.tokens) tokens.call<void>("push", t);
      out.set("tokens", tokens);
      val special = val::array();
      for (auto s : r.special) special.call<void>("push", s != 0);
      out.set("special", special);
      out.set("ids", val::global("Int32Array").new_(val(emscripten::typed_memory_view(r.ids.size(), r.ids.data()))));
      out.set("attentions", to_js(r.attentions));
      out.set("hidden", to_js(r.hidden));
      if (!r.embedding.empty()) out.set("embedding", to_js(r.embedding)["data"]);
      out.set("totalTokens", static_cast<double>(r.total_tokens));
      out.set("truncated", r.truncated);
      if (o.return_projections) {
        for (const auto& [name, list] : {std::pair{"q", &r.q}, {"k", &r.k}, {"v", &r.v}, {"inputs", &r.inputs}}) {
          val layers = val::array();
          for (const Tensor& t : *list) layers.call<void>("push", to_js(t));
          out.set(name, layers);
        }
      }
      return out;
    });
  }

 private:
  std::unique_ptr<Model> model_;
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
  return info;
}

}  // namespace
}  // namespace attnscope

EMSCRIPTEN_BINDINGS(attnscope) {
  using attnscope::Engine;
  // The web wrapper checks `threads` (1 to 64) before constructing.
  emscripten::class_<Engine>("Engine")
      .constructor<int>()
      .function("attention", &Engine::attention)
      .function("selfAttention", &Engine::selfAttention)
      .function("multiHeadAttention", &Engine::multiHeadAttention)
      .function("linear", &Engine::linear)
      .function("kernelPeak", &Engine::kernelPeak)
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
  using attnscope::ModelHandle;
  emscripten::class_<ModelHandle>("ModelHandle")
      .constructor<>()
      .function("load", &ModelHandle::load)
      .function("info", &ModelHandle::info)
      .function("tokenize", &ModelHandle::tokenize)
      .function("attentionWeights", &ModelHandle::attentionWeights)
      .function("run", &ModelHandle::run);
  using attnscope::TokenizerHandle;
  emscripten::class_<TokenizerHandle>("TokenizerHandle")
      .constructor<>()
      .function("load", &TokenizerHandle::load)
      .function("info", &TokenizerHandle::info)
      .function("tokenize", &TokenizerHandle::tokenize);
  emscripten::function("buildInfo", &attnscope::build_info);
}
