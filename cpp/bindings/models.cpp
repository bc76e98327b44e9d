// Bindings of models, tokenizers and generation: the handles JS holds for each. Same rules
// as embind.cpp: inputs checked before they are copied, results copied out, every failure
// returned as { error }.
#include <emscripten/bind.h>
#include <malloc.h>

#include <cmath>

#include "attnscope/analysis.hpp"
#include "attnscope/model.hpp"
#include "convert.hpp"
#include "engine.hpp"

namespace attnscope {
namespace {

using emscripten::val;
using namespace bindings;

val int32_array(const std::vector<std::int32_t>& v) {
  return val::global("Int32Array").new_(val(emscripten::typed_memory_view(v.size(), v.data())));
}

val float32_array(const std::vector<float>& v) {
  return val::global("Float32Array").new_(val(emscripten::typed_memory_view(v.size(), v.data())));
}

// An Int32Array of token ids, copied into the heap (the web wrapper made it one).
std::vector<std::int32_t> ids_arg(const val& ids) {
  std::vector<std::int32_t> out(ids["length"].as<std::size_t>());
  val(emscripten::typed_memory_view(out.size(), out.data())).call<void>("set", ids);
  return out;
}

// A run's maps copied out to a new JS array layer by layer while the run goes on (RunOptions::maps_ready). Each
// layer's maps, in pieces of at most kPieceFloats, are set aside on the engine's pool and copied on this thread
// beside the next layers' loops (ThreadPool::set_aside): with workers, the copy and the first touch of the new
// array's pages (DINOv2-S/14 at 518²: 541 MB) overlap the arithmetic instead of following it. The array is
// written as weights_to_js writes it. A caller's options.into array is written after the run, as before: a run
// that fails part way then leaves it as it was.
class MapsOut {
 public:
  // opts: the call's, for options.into.attentions.
  MapsOut(const Runtime& rt, bool causal, const val& opts) : rt_(rt), causal_(causal), opts_(opts) {}
  ~MapsOut() { rt_.drop_set_aside(); }  // a run that failed: its pieces point into freed maps
  MapsOut(const MapsOut&) = delete;
  MapsOut& operator=(const MapsOut&) = delete;

  // Has the run report its maps as each layer finishes them, unless they go into the caller's array.
  void attach(RunOptions& o) {
    if (into_given(opts_, "attentions").isUndefined())
      o.maps_ready = [this](const Tensor& maps, std::int64_t layer) { ready(maps, layer); };
  }

  // RunOptions::maps_ready: layer `layer` of `maps` [layers, heads, n_q, n_k] is final. Its values stay where they
  // are until finish: the run made them before its first layer, and the ModelRun it returns holds them.
  void ready(const Tensor& maps, std::int64_t layer) {
    const std::int64_t heads = maps.shape[1], n_q = maps.shape[2], n_k = maps.shape[3];
    if (array_.isUndefined()) array_ = val::global("Float32Array").new_(static_cast<double>(element_count(maps.shape)));
    const std::int64_t rows = std::max<std::int64_t>(1, kPieceFloats / std::max<std::int64_t>(n_k, 1));
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t first = 0; first < n_q; first += rows) {
        const std::int64_t at = ((layer * heads + h) * n_q + first) * n_k, count = std::min(rows, n_q - first);
        const float* values = maps.data.data() + at;
        rt_.set_aside([this, values, at, first, count, n_k] {
          if (causal_)
            copy_causal_rows(array_, values, at, first, count, n_k);
          else
            array_.call<void>("set", val(emscripten::typed_memory_view(static_cast<std::size_t>(count * n_k), values)),
                              static_cast<double>(at));
        });
      }
    ++layers_;
  }

  // The maps as a JS tensor: the pieces not copied yet now, or the whole of them (into the caller's array when
  // given) when the run reported fewer than all its layers. It never does so part way: a run into the caller's
  // array, one that keeps rows or one that returns some layers reports none.
  val finish(const Tensor& maps) {
    if (array_.isUndefined() || layers_ != maps.shape[0]) {
      rt_.drop_set_aside();
      return weights_to_js("run", maps, causal_, opts_);
    }
    rt_.run_set_aside();
    return js_tensor(array_, maps.shape);
  }

 private:
  static constexpr std::int64_t kPieceFloats = 1 << 20;  // 4 MB: a piece short beside a loop's tasks
  const Runtime& rt_;
  const bool causal_;
  const val opts_;
  val array_ = val::undefined();
  std::int64_t layers_ = 0;
};

void check_vocabulary(const char* op, const Tokenizer& t, const std::vector<std::int32_t>& ids) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= t.vocab_size())
      throw Error(std::string(op) + ": id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                  " is outside the vocabulary [0, " + std::to_string(t.vocab_size()) + ")");
}

// Each id's label (Tokenizer::label), each checked against the vocabulary → string[]
val labelled(const Tokenizer& t, const std::vector<std::int32_t>& ids) {
  check_vocabulary("labels", t, ids);
  val out = val::array();
  for (std::int32_t id : ids) out.call<void>("push", t.label(id));
  return out;
}

// { utf8 } of ids, each checked against the vocabulary.
val decoded(const Tokenizer& t, const std::vector<std::int32_t>& ids, bool skip_special) {
  check_vocabulary("decode", t, ids);
  // As bytes: embind hands strings to JS through a TextDecoder that drops a leading U+FEFF.
  const std::string text = t.decode(ids, skip_special);
  val out = val::object();
  out.set(
      "utf8",
      val::global("Uint8Array")
          .new_(val(emscripten::typed_memory_view(text.size(), reinterpret_cast<const std::uint8_t*>(text.data())))));
  return out;
}

// A whole number option in [lo, hi], or an Error naming it.
std::int64_t whole_number(const char* op, const char* name, const val& v, double lo, double hi) {
  const double x = v.isNumber() ? v.as<double>() : NAN;
  if (!(x >= lo && x <= hi) || std::floor(x) != x)
    throw Error(messages::format("whole_number", {{"op", op},
                                                  {"name", name},
                                                  {"lo", std::to_string(std::int64_t(lo))},
                                                  {"hi", std::to_string(std::int64_t(hi))},
                                                  {"got", js_string(v)}}));
  return static_cast<std::int64_t>(x);
}

// The most pixels an image may have (width × height): its RGBA copy in the heap stays under 200 MB. Larger images
// are for the caller to scale down (the page does, and says so).
constexpr std::int64_t kMaxImagePixels = 50'000'000;

// Most bytes of small model files (configs, tokenizers) one load may copy into the heap.
constexpr double kMaxSmallFileBytes = 512.0 * 1024 * 1024;

// A weight file that stays a JS Uint8Array: tensors are copied into the heap one at a time.
class JsFileBytes final : public FileBytes {
 public:
  explicit JsFileBytes(val bytes) : bytes_(std::move(bytes)), size_(bytes_["byteLength"].as<double>()) {}
  std::uint64_t size() const override { return static_cast<std::uint64_t>(size_); }
  void read(std::uint64_t offset, std::uint64_t count, std::uint8_t* dest) const override {
    val(emscripten::typed_memory_view(static_cast<std::size_t>(count), dest))
        .call<void>("set",
                    bytes_.call<val>("subarray", static_cast<double>(offset), static_cast<double>(offset + count)));
  }

 private:
  val bytes_;
  double size_;
};

// { name: Uint8Array }: safetensors files stay in JS (`large`), read tensor by tensor; the others are
// copied into the heap. Refuses weights that cannot fit the heap beside what it holds, before any is read.
ModelFiles copy_files(const char* op, const val& files, LargeFiles* large = nullptr) {
  const val names = val::global("Object").call<val>("keys", files);
  const int count = names["length"].as<int>();
  double small = 0, weights = 0;
  for (int i = 0; i < count; ++i) {
    const std::string name = names[i].as<std::string>();
    const bool big = large && name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0;
    (big ? weights : small) += files[names[i]]["byteLength"].as<double>();
  }
  const auto mib = [](double bytes) { return std::to_string(static_cast<long long>(bytes / (1 << 20))); };
  if (small > kMaxSmallFileBytes)
    throw Error(std::string(op) + ": the files besides the weights hold " + mib(small) + " MiB, above the limit of " +
                mib(kMaxSmallFileBytes) + " MiB");
  const double in_use = static_cast<double>(mallinfo().uordblks);
  if (weights + small + in_use + kRunningRoom > kMaxHeapBytes)
    throw Error(std::string(op) + ": the weights need " + mib(weights) + " MiB of the engine's " + mib(kMaxHeapBytes) +
                " MiB heap, which holds " + mib(in_use) + " MiB already and keeps " + mib(kRunningRoom) +
                " MiB for running: the model is too large for this engine (dispose of other models first)");
  ModelFiles copy;
  for (int i = 0; i < count; ++i) {
    const std::string name = names[i].as<std::string>();
    const val bytes = files[names[i]];
    if (large && name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0) {
      (*large)[name] = std::make_shared<JsFileBytes>(bytes);
      continue;
    }
    std::string& data = copy[name];
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
  // ids (Int32Array) → { utf8: Uint8Array }
  val decode(val ids, bool skip_special) const {
    return guard("decode", [&] {
      if (!tokenizer_) throw Error("decode: no tokenizer is loaded");
      return decoded(*tokenizer_, ids_arg(ids), skip_special);
    });
  }
  // ids (Int32Array) → string[]
  val labels(val ids) const {
    return guard("labels", [&] {
      if (!tokenizer_) throw Error("labels: no tokenizer is loaded");
      return labelled(*tokenizer_, ids_arg(ids));
    });
  }
  val tokenize(const std::string& text, bool target) const {
    return guard("tokenize", [&] {
      if (!tokenizer_) throw Error("tokenize: no tokenizer is loaded");
      return encoding_to_js(target ? tokenizer_->encode_target(text) : tokenizer_->encode(text));
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
      LargeFiles large;  // the weights, read tensor by tensor from JS: no whole copy of them in the heap
      model_ = Model::load(copy_files("loadModel", files, &large), large);
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
    i.set("kvHeads", static_cast<double>(m.kv_heads));
    i.set("headDim", static_cast<double>(m.head_dim));
    i.set("causal", m.causal);
    i.set("languageModel", m.language_model);
    i.set("weightsDtype", m.weights_dtype);
    val eos = val::array();
    for (std::int32_t id : m.eos) eos.call<void>("push", id);
    i.set("eosTokenIds", eos);
    if (m.encoder_decoder) {
      i.set("encoderDecoder", true);
      i.set("encoderLayers", static_cast<double>(m.encoder_layers));
      i.set("encoderHeads", static_cast<double>(m.encoder_heads));
      i.set("encoderMaxTokens", static_cast<double>(m.encoder_max_tokens));
      i.set("decoderStartTokenId", m.decoder_start);
      if (m.forced_bos >= 0) i.set("forcedBosTokenId", m.forced_bos);
      val search = val::object(), banned = val::array();
      search.set("numBeams", static_cast<double>(m.search.beams));
      search.set("lengthPenalty", m.search.length_penalty);
      search.set("noRepeatNgramSize", static_cast<double>(m.search.no_repeat_ngram));
      search.set("earlyStopping", m.search.early_stopping);
      if (m.search.max_length > 0) search.set("maxLength", static_cast<double>(m.search.max_length));
      for (std::int32_t id : m.search.banned) banned.call<void>("push", id);
      search.set("bannedTokenIds", banned);
      i.set("generation", search);
    }
    if (m.vision) {
      i.set("vision", true);
      val size = val::array(), labels = val::array();
      size.call<void>("push", static_cast<double>(m.image_height));
      size.call<void>("push", static_cast<double>(m.image_width));
      i.set("imageSize", size);
      i.set("patchSize", static_cast<double>(m.patch_size));
      i.set("prefixTokens", static_cast<double>(m.prefix_tokens));
      i.set("registers", static_cast<double>(m.registers));
      for (const std::string& l : m.labels) labels.call<void>("push", l);
      i.set("labels", labels);
    }
    val window = val::array();
    for (std::int64_t w : m.window) window.call<void>("push", static_cast<double>(w));
    i.set("window", window);
    i.set("normalization", model_->tokenizer() ? model_->tokenizer()->normalization() : std::string());
    i.set("tokenizer", model_->tokenizer() != nullptr);
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

  // hidden { data, shape: [rows, dModel] } → { data, shape: [rows, vocab] }: the language-model head.
  val logits(const Engine& engine, val hidden) const {
    return guard("logits", [&] {
      if (!model_) throw Error("logits: no model is loaded");
      if (!model_->info().language_model)
        throw Error("logits: " + model_->info().name + " is an encoder; logits needs a language model");
      JsTensor h = tensor_arg("logits", "hidden", hidden);
      if (!h.present()) throw Error("logits: hidden must be a tensor { data, shape }");
      const std::int64_t d = model_->info().d_model;
      if (h.shape.size() != 2 || h.shape[0] < 1 || h.shape[1] != d)
        throw Error("logits: hidden must be [rows, " + std::to_string(d) + "] (rows ≥ 1), got " +
                    format_shape(h.shape));
      check_budget("logits", 4.0 * double(h.shape[0]) * double(model_->info().vocab_size + d));
      bindings::load(h);
      Tensor t;
      t.shape = h.shape;
      t.data = std::move(h.data);
      return to_js(model_->logits(engine.runtime(), t));
    });
  }

  // ids (Int32Array) → { utf8: Uint8Array }
  val decode(val ids, bool skip_special) const {
    return guard("decode", [&] {
      if (!model_) throw Error("decode: no model is loaded");
      const Tokenizer* t = model_->tokenizer();
      if (!t) throw Error("decode: this model's files hold no tokenizer AttnScope reads");
      return decoded(*t, ids_arg(ids), skip_special);
    });
  }
  // ids (Int32Array) → string[]
  val labels(val ids) const {
    return guard("labels", [&] {
      if (!model_) throw Error("labels: no model is loaded");
      const Tokenizer* t = model_->tokenizer();
      if (!t) throw Error("labels: this model's files hold no tokenizer AttnScope reads");
      return labelled(*t, ids_arg(ids));
    });
  }

  const std::shared_ptr<const Model>& model() const { return model_; }

  // Token strings for rows of ids [rows, k] → string[][]
  val token_rows(const std::vector<std::int32_t>& ids, std::int64_t k) const {
    val rows = val::array();
    const Tokenizer* t = model_->tokenizer();
    for (std::size_t i = 0; i < ids.size(); i += static_cast<std::size_t>(k)) {
      val row = val::array();
      for (std::size_t j = i; j < i + static_cast<std::size_t>(k) && j < ids.size(); ++j)
        row.call<void>("push", t && ids[j] < t->vocab_size() ? t->token(ids[j]) : "#" + std::to_string(ids[j]));
      rows.call<void>("push", row);
    }
    return rows;
  }

  // text: already normalized as info().normalization says; target: as an encoder-decoder's target → { tokens, ids }
  val tokenize(const std::string& text, bool target) const {
    return guard("tokenize", [&] {
      if (!model_) throw Error("tokenize: no model is loaded");
      const Tokenizer* t = model_->tokenizer();
      if (!t) throw Error("tokenize: this model's files hold no tokenizer AttnScope reads");
      return encoding_to_js(target ? t->encode_target(text) : t->encode(text));
    });
  }

  // input: text (already normalized as info().normalization says) or an Int32Array of ids;
  // opts: RunOptions (model-types.ts) → ModelRunResult, attentions [mapLayers.length, heads, n, n]
  val run(const Engine& engine, val input, val opts) const {
    return guard("run", [&] {
      if (!model_) throw Error("run: no model is loaded");
      RunOptions o = run_options(opts);
      const bool causal = model_->info().causal;
      MapsOut maps(engine.runtime(), causal, opts);
      maps.attach(o);
      const ModelRun r = input.isString() ? model_->run(engine.runtime(), input.as<std::string>(), o)
                                          : model_->run_ids(engine.runtime(), ids_arg(input), o);
      return run_to_js(r, o, flag(opts, "headSummaries", false), causal, opts, &maps);
    });
  }

  // An encoder-decoder's source and target, each text or an Int32Array of ids; opts as run()'s →
  // { source, target: ModelRunResult each (the encoder's, the decoder's), cross: { data, shape [L, H, n_t, n_s] } }
  val runPair(const Engine& engine, val source, val target, val opts) const {
    return guard("run", [&] {
      if (!model_) throw Error("run: no model is loaded");
      const RunOptions o = run_options(opts);
      const Tokenizer* t = model_->tokenizer();
      if ((source.isString() || target.isString()) && !t)
        throw Error("run: this model's files hold no tokenizer AttnScope reads; run it on token ids instead");
      std::vector<std::int32_t> s = source.isString() ? t->encode(source.as<std::string>()).ids : ids_arg(source);
      std::vector<std::int32_t> d =
          target.isString() ? model_->decoder_input(target.as<std::string>()) : ids_arg(target);
      const PairRun r = model_->run_pair(engine.runtime(), std::move(s), std::move(d), o);
      const bool summaries = flag(opts, "headSummaries", false);
      val out = val::object();
      out.set("source", run_to_js(r.source, {}, summaries, false, val::object()));
      out.set("target", run_to_js(r.target, o, summaries, true, val::object()));
      out.set("cross", to_js(r.cross));
      return out;
    });
  }

  // A vision model's image: { rgba: Uint8Array | Uint8ClampedArray [height · width · 4], width, height }, or its
  // input { pixels: { data: Float32Array, shape: [channels, H, W] } }; opts: mapLayers, ablateHeads, headSummaries →
  // { tokens, special, grid, pixels, attentions, mapLayers, hidden, tokenNorms, pooled?, imageEmbedding?, logits?,
  //   labels, headSummaries? }
  val runImage(const Engine& engine, val image, val opts) const {
    return guard("run", [&] {
      if (!model_) throw Error("run: no model is loaded");
      if (!model_->info().vision)
        throw Error("run: " + model_->info().name + " (" + model_->info().architecture +
                    ") is not a vision model; an image needs one such as ViT, DeiT, DINOv2 or CLIP");
      RunOptions o = run_options(opts);
      MapsOut maps(engine.runtime(), false, opts);
      maps.attach(o);
      ImageRun r;
      if (!image["pixels"].isUndefined()) {
        JsTensor p = tensor_arg("run", "pixels", image["pixels"]);
        if (p.shape.size() != 3) throw Error("run: pixels must be [channels, H, W], got " + format_shape(p.shape));
        if (double(p.shape[1]) * double(p.shape[2]) > double(kMaxImagePixels))
          throw Error("run: pixels of " + std::to_string(p.shape[1]) + " × " + std::to_string(p.shape[2]) +
                      " are more than the " + std::to_string(kMaxImagePixels / 1'000'000) +
                      " megapixels an image may have");
        bindings::load(p);
        Tensor t;
        t.shape = p.shape;
        t.data = std::move(p.data);
        r = model_->run_pixels(engine.runtime(), std::move(t), o);
      } else {
        const std::int64_t width = whole_number("run", "image.width", image["width"], 1, 1e9);
        const std::int64_t height = whole_number("run", "image.height", image["height"], 1, 1e9);
        if (double(width) * double(height) > double(kMaxImagePixels))
          throw Error("run: the image is " + std::to_string(width) + " × " + std::to_string(height) +
                      ", more than the " + std::to_string(kMaxImagePixels / 1'000'000) +
                      " megapixels an image may have; scale it down first");
        const double length = image["rgba"]["length"].as<double>();
        if (length != 4.0 * double(width) * double(height))
          throw Error("run: the image's data has " + std::to_string(static_cast<long long>(length)) +
                      " bytes, not width × height × 4 = " + std::to_string(4 * width * height) + " (RGBA)");
        std::vector<std::uint8_t> rgba(static_cast<std::size_t>(length));
        val(emscripten::typed_memory_view(rgba.size(), rgba.data())).call<void>("set", image["rgba"]);
        r = model_->run_image(engine.runtime(), {rgba.data(), width, height}, o);
      }
      val out = run_to_js(r.run, o, flag(opts, "headSummaries", false), false, opts, &maps);
      val grid = val::array();
      grid.call<void>("push", static_cast<double>(r.rows));
      grid.call<void>("push", static_cast<double>(r.cols));
      out.set("grid", grid);
      out.set("pixels", to_js(r.pixels));
      out.set("tokenNorms", to_js(r.token_norms));
      if (!r.pooled.empty()) out.set("pooled", to_js(r.pooled)["data"]);
      if (!r.image_embedding.empty()) out.set("imageEmbedding", to_js(r.image_embedding)["data"]);
      val labels = val::array();
      if (!r.logits.empty()) out.set("logits", to_js(r.logits)["data"]);
      for (const ImageLabel& l : r.labels) {
        val label = val::object();
        label.set("id", l.id);
        label.set("label", l.label);
        label.set("probability", l.probability);
        labels.call<void>("push", label);
      }
      out.set("labels", labels);
      return out;
    });
  }

 private:
  // run()'s options, each checked (the model checks them against its layers and heads).
  RunOptions run_options(val opts) const {
    RunOptions o;
    o.return_projections = flag(opts, "returnProjections", false);
    o.logit_lens = flag(opts, "logitLens", false);
    o.return_logits = flag(opts, "returnLogits", false);
    o.reuse_prefix = flag(opts, "reusePrefix", true);
    if (!opts["topK"].isUndefined()) o.top_k = whole_number("run", "topK", opts["topK"], 1, 1'000'000);
    if (!opts["mapLayers"].isUndefined())  // the model checks each against its layers
      o.map_layers = integers_arg("run", "mapLayers", opts["mapLayers"], -1e9, 1e9);
    const bool lm = model_->info().language_model;
    if ((o.top_k || o.logit_lens || o.return_logits) && !lm)
      throw Error("run: topK, logitLens and returnLogits need a language model; " + model_->info().name +
                  " is an encoder");
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
    return o;
  }

  // A run as JS sees it (ModelRunResult); `causal`: its maps are causal, and cross out as their lower triangles.
  // `opts`: the call's options, for options.into.attentions.
  // maps: what copied the maps out during the run (run() and runImage()), or null.
  val run_to_js(const ModelRun& r, const RunOptions& o, bool summaries, bool causal, const val& opts,
                MapsOut* maps = nullptr) const {
    val out = val::object();
    val tokens = val::array();
    for (const auto& t : r.tokens) tokens.call<void>("push", t);
    out.set("tokens", tokens);
    val special = val::array();
    for (auto s : r.special) special.call<void>("push", s != 0);
    out.set("special", special);
    out.set("ids", val::global("Int32Array").new_(val(emscripten::typed_memory_view(r.ids.size(), r.ids.data()))));
    out.set("attentions", maps ? maps->finish(r.attentions) : weights_to_js("run", r.attentions, causal, opts));
    // From the maps where the run left them: no copy of [layers, heads, n, n] back into the heap.
    if (summaries)
      out.set("headSummaries", to_js(head_summaries(r.attentions.data.data(), r.attentions.shape, r.special,
                                                    punctuation_tokens(r.tokens))));
    val map_layers = val::array();
    for (std::int64_t l : r.map_layers) map_layers.call<void>("push", static_cast<double>(l));
    out.set("mapLayers", map_layers);
    out.set("hidden", to_js(r.hidden));
    if (!r.embedding.empty()) out.set("embedding", to_js(r.embedding)["data"]);
    if (!r.kv_head.empty()) out.set("kvHead", int32_array(r.kv_head));
    if (r.predictions.k) {
      val p = val::object();
      p.set("k", static_cast<double>(r.predictions.k));
      p.set("ids", int32_array(r.predictions.ids));
      p.set("probs", float32_array(r.predictions.probs));
      p.set("tokens", token_rows(r.predictions.ids, r.predictions.k));
      out.set("predictions", p);
    }
    if (o.logit_lens) {
      val lens = val::object();
      lens.set("ids", int32_array(r.logit_lens.ids));
      lens.set("probs", float32_array(r.logit_lens.probs));
      lens.set("tokens", token_rows(r.logit_lens.ids, static_cast<std::int64_t>(r.ids.size())));
      out.set("logitLens", lens);
    }
    if (o.return_logits) out.set("logits", to_js(r.logits));
    out.set("totalTokens", static_cast<double>(r.total_tokens));
    if (model_->info().language_model) out.set("reusedTokens", static_cast<double>(r.reused_tokens));
    out.set("truncated", r.truncated);
    if (o.return_projections) {
      for (const auto& [name, list] : {std::pair{"q", &r.q}, {"k", &r.k}, {"v", &r.v}, {"inputs", &r.inputs}}) {
        val layers = val::array();
        for (const Tensor& t : *list) layers.call<void>("push", to_js(t));
        out.set(name, layers);
      }
    }
    return out;
  }

  std::shared_ptr<const Model> model_;  // shared with its generations, which outlive no model
};

// A language model's generation in progress: its KV cache, and the rows of the maps it keeps (GenerationMaps).
class GenerationHandle {
 public:
  // ids: the prompt (Int32Array); seed: a whole number below 2^53; maps: what to keep of the attention maps,
  // "none", "rows" (each new token's) or "all"
  val start(const ModelHandle& model, const Engine& engine, val ids, double seed, const std::string& maps) {
    return guard("generate", [&] {
      const GenerationMaps kept = begin(model, seed, maps);
      generation_ = model_->generate(engine.runtime(), ids_arg(ids), static_cast<std::uint64_t>(seed), kept);
      return val::object();
    });
  }

  // An encoder-decoder's generation: source (Int32Array; the encoder runs once, here), target: the decoder's first
  // tokens (Int32Array), seed and maps as start()'s
  val startPair(const ModelHandle& model, const Engine& engine, val source, val target, double seed,
                const std::string& maps) {
    return guard("generate", [&] {
      const GenerationMaps kept = begin(model, seed, maps);
      generation_ = model_->generate_pair(engine.runtime(), ids_arg(source), ids_arg(target),
                                          static_cast<std::uint64_t>(seed), kept);
      return val::object();
    });
  }

  // An encoder-decoder's beam search (no maps: the winner's come from a teacher-forced run): source (Int32Array),
  // target: its start tokens (the decoder's first, then any forced), options { beams, lengthPenalty,
  // noRepeatNgramSize, earlyStopping, maxLength, banned: Int32Array }
  val startBeams(const ModelHandle& model, const Engine& engine, val source, val target, val options) {
    return guard("generate", [&] {
      begin(model, 0, "none");
      const std::vector<std::int32_t> start = ids_arg(target);
      if (start.empty()) throw Error("generate: the target has no start token");
      BeamOptions o;
      o.beams = whole_number("generate", "beams", options["beams"], 0, 1e9);
      o.length_penalty = static_cast<float>(options["lengthPenalty"].as<double>());
      o.no_repeat_ngram = whole_number("generate", "noRepeatNgramSize", options["noRepeatNgramSize"], 0, 1e9);
      o.early_stopping = options["earlyStopping"].as<bool>();
      o.max_length = whole_number("generate", "maxLength", options["maxLength"], 0, 1e9);
      o.banned = ids_arg(options["banned"]);
      o.eos = model_->info().eos;
      generation_.reset();
      beams_.reset();
      auto g = model_->generate_pair(engine.runtime(), ids_arg(source), {start[0]}, 0, GenerationMaps::none);
      for (std::size_t i = 1; i < start.size(); ++i) g->append(engine.runtime(), start[i]);
      beams_ = std::make_unique<BeamSearch>(std::move(g), std::move(o), model_->info().vocab_size,
                                            model_->info().max_tokens);
      return val::object();
    });
  }

  // One more token on every running beam → { done, ids: Int32Array (the leading beam; once done, the winner),
  // ended: whether the winner ended with an end-of-text token }
  val beamStep(const Engine& engine) {
    return guard("generate", [&] {
      if (!beams_) throw Error("generate: no beam search is running");
      beams_->step(engine.runtime());
      val out = val::object();
      out.set("done", beams_->done());
      out.set("ids", int32_array(beams_->best()));
      out.set("ended", beams_->done() && beams_->ended());
      return out;
    });
  }

  // Appends a given token (a forced one) → { id, token, rows?, crossRows? } as step() gives them
  val append(const Engine& engine, double id) {
    return guard("generate", [&] {
      if (!generation_) throw Error("generate: nothing is being generated");
      if (!(id >= 0 && id < 2147483648.0) || std::floor(id) != id)
        throw Error("generate: a token id must be a whole number from 0, got " + js_string(val(id)));
      generation_->append(engine.runtime(), static_cast<std::int32_t>(id));
      return stepped(static_cast<std::int32_t>(id), val::undefined());
    });
  }

  // sampling { temperature, topK, topP }, into: undefined or a Float32Array of exactly the rows' length
  // → { id, rows: Float32Array [layers, heads, n] } (into itself when given: no array made per token)
  val step(const Engine& engine, val sampling, val into) {
    return guard("generate", [&] {
      if (!generation_) throw Error("generate: nothing is being generated");
      SamplingOptions s;
      s.temperature = static_cast<float>(sampling["temperature"].as<double>());
      s.top_k = whole_number("generate", "topK", sampling["topK"], 0, 1e9);
      s.top_p = static_cast<float>(sampling["topP"].as<double>());
      s.no_repeat_ngram = whole_number("generate", "noRepeatNgramSize", sampling["noRepeatNgramSize"], 0, 1e9);
      s.banned = ids_arg(sampling["banned"]);
      // `into` is checked before the step: a token is never appended without its rows going where they were asked.
      const ModelInfo& info = model_->info();
      const double want =
          static_cast<double>(info.layers * info.heads * (static_cast<std::int64_t>(generation_->ids().size()) + 1));
      if (!into.isUndefined() &&
          (!into.instanceof (val::global("Float32Array")) || into["length"].as<double>() != want))
        throw Error("generate: the rows need a Float32Array of exactly " + js_string(val(want)) + " values, got " +
                    js_string(into["length"]));
      const std::int32_t id = generation_->step(engine.runtime(), s);
      return stepped(id, into);
    });
  }

  // → { ids: Int32Array, tokens, special, attentions?: { data, shape: [layers, heads, n, n] }, source?: the encoder's
  // run (as runPair's source), cross?: { data, shape: [layers, heads, n, source tokens] } }
  val result() const {
    return guard("generate", [&] {
      if (!generation_) throw Error("generate: nothing is being generated");
      val out = val::object();
      val tokens = val::array(), special = val::array();
      const Tokenizer* t = model_->tokenizer();
      for (std::int32_t id : generation_->ids()) {
        tokens.call<void>("push", token_of(id));
        special.call<void>("push", t && t->is_special(id));
      }
      out.set("ids", int32_array(generation_->ids()));
      out.set("reusedTokens", static_cast<double>(generation_->reused_tokens()));
      out.set("tokens", tokens);
      out.set("special", special);
      const Tensor maps = generation_->attentions();
      if (!maps.empty()) out.set("attentions", weights_to_js(maps, model_->info().causal));
      // Encoder-decoders: the source as the encoder ran it, and the cross maps of the whole target.
      if (const ModelRun* source = generation_->source()) {
        val s = val::object(), tokens = val::array(), special = val::array(), layers = val::array();
        for (std::size_t i = 0; i < source->ids.size(); ++i) {
          tokens.call<void>("push", source->tokens[i]);
          special.call<void>("push", i < source->special.size() && source->special[i] != 0);
        }
        for (std::int64_t l : source->map_layers) layers.call<void>("push", static_cast<double>(l));
        s.set("ids", int32_array(source->ids));
        s.set("tokens", tokens);
        s.set("special", special);
        s.set("mapLayers", layers);
        s.set("totalTokens", static_cast<double>(source->total_tokens));
        s.set("truncated", source->truncated);
        if (!source->attentions.empty()) s.set("attentions", weights_to_js(source->attentions, false));
        out.set("source", s);
      }
      const Tensor cross = generation_->cross_attentions();
      if (!cross.empty()) out.set("cross", to_js(cross));
      return out;
    });
  }

 private:
  // start()'s and startPair()'s checks of the model, seed and maps; holds the model for the generation.
  GenerationMaps begin(const ModelHandle& model, double seed, const std::string& maps) {
    if (!model.model()) throw Error("generate: no model is loaded");
    if (!(seed >= 0 && seed < 9007199254740992.0) || std::floor(seed) != seed)
      throw Error("generate: seed must be a whole number from 0 to 2^53 - 1, got " + js_string(val(seed)));
    if (maps != "all" && maps != "rows" && maps != "none")
      throw Error("generate: maps must be \"all\", \"rows\" or \"none\", got \"" + maps + "\"");
    model_ = model.model();
    return maps == "all" ? GenerationMaps::all : maps == "rows" ? GenerationMaps::rows : GenerationMaps::none;
  }

  // The token just added: { id, token, rows: [layers, heads, n] (into itself when given), crossRows: [layers,
  // heads, source tokens] for encoder-decoders }, the rows when the generation keeps them.
  val stepped(std::int32_t id, val into) const {
    val out = val::object();
    out.set("id", id);
    out.set("token", token_of(id));
    const Tensor rows = generation_->last_rows();
    if (!rows.empty()) out.set("rows", to_js(rows, into)["data"]);
    const Tensor cross = generation_->last_cross_rows();
    if (!cross.empty()) out.set("crossRows", to_js(cross)["data"]);
    return out;
  }

  std::string token_of(std::int32_t id) const {
    const Tokenizer* t = model_->tokenizer();
    return t && id < t->vocab_size() ? t->token(id) : "#" + std::to_string(id);
  }

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Generation> generation_;
  std::unique_ptr<BeamSearch> beams_;
};

}  // namespace
}  // namespace attnscope

EMSCRIPTEN_BINDINGS(attnscope_models) {
  using attnscope::ModelHandle;
  emscripten::class_<ModelHandle>("ModelHandle")
      .constructor<>()
      .function("load", &ModelHandle::load)
      .function("info", &ModelHandle::info)
      .function("tokenize", &ModelHandle::tokenize)
      .function("attentionWeights", &ModelHandle::attentionWeights)
      .function("run", &ModelHandle::run)
      .function("runPair", &ModelHandle::runPair)
      .function("runImage", &ModelHandle::runImage)
      .function("logits", &ModelHandle::logits)
      .function("decode", &ModelHandle::decode)
      .function("labels", &ModelHandle::labels);
  using attnscope::TokenizerHandle;
  emscripten::class_<TokenizerHandle>("TokenizerHandle")
      .constructor<>()
      .function("load", &TokenizerHandle::load)
      .function("info", &TokenizerHandle::info)
      .function("tokenize", &TokenizerHandle::tokenize)
      .function("decode", &TokenizerHandle::decode)
      .function("labels", &TokenizerHandle::labels);
  using attnscope::GenerationHandle;
  emscripten::class_<GenerationHandle>("GenerationHandle")
      .constructor<>()
      .function("start", &GenerationHandle::start)
      .function("startPair", &GenerationHandle::startPair)
      .function("startBeams", &GenerationHandle::startBeams)
      .function("beamStep", &GenerationHandle::beamStep)
      .function("append", &GenerationHandle::append)
      .function("step", &GenerationHandle::step)
      .function("result", &GenerationHandle::result);
}
