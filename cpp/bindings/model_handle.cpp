#include "model_handle.hpp"

#include <emscripten/bind.h>

#include <cmath>

#include "attnscope/audio.hpp"
#include "convert.hpp"
#include "engine.hpp"
#include "maps_out.hpp"
#include "model_files.hpp"
#include "results.hpp"
#include "tokens.hpp"

namespace attnscope {

SequenceInput bindings::audio_source(const char* op, const val& input, std::vector<float>& samples) {
  if (!input["features"].isUndefined()) {
    JsTensor f = tensor_arg(op, "features", input["features"]);
    if (f.shape.size() != 2 || f.shape[0] * f.shape[1] > (std::int64_t{1} << 24))
      throw Error(std::string(op) + ": features must be [mel bins, frames], got " + format_shape(f.shape));
    load(f);
    Tensor t(f.shape);
    t.data = std::move(f.data);
    return SequenceInput::of_features(std::move(t));
  }
  const val a = input["audio"];
  const double length = a["length"].as<double>();
  if (length > static_cast<double>(audio::kMaxSamples))
    throw Error(std::string(op) + ": the audio has more than an hour of samples at 16 kHz");
  samples.resize(static_cast<std::size_t>(length));
  val(emscripten::typed_memory_view(samples.size(), samples.data())).call<void>("set", a);
  return SequenceInput::of_audio({samples.data(), static_cast<std::int64_t>(samples.size())});
}

namespace {

using namespace bindings;

// The most pixels an image may have (width × height): its RGBA copy in the heap stays under 200 MB. Larger images
// are for the caller to scale down (the page does, and says so).
constexpr std::int64_t kMaxImagePixels = 50'000'000;

// Text (already normalized) or an Int32Array of ids.
SequenceInput tokens_arg(const val& v) {
  return v.isString() ? SequenceInput::of_text(v.as<std::string>()) : SequenceInput::of_ids(ids_arg(v));
}

// { image: { rgba, width, height } } or { pixels: { data, shape } }: checked, then copied into `rgba` (an image) or
// the input's pixels.
SequenceInput image_arg(const val& input, std::vector<std::uint8_t>& rgba) {
  if (!input["pixels"].isUndefined()) {
    JsTensor p = tensor_arg("run", "pixels", input["pixels"]);
    if (p.shape.size() != 3) throw Error("run: pixels must be [channels, H, W], got " + format_shape(p.shape));
    if (double(p.shape[1]) * double(p.shape[2]) > double(kMaxImagePixels))
      throw Error("run: pixels of " + std::to_string(p.shape[1]) + " × " + std::to_string(p.shape[2]) +
                  " are more than the " + std::to_string(kMaxImagePixels / 1'000'000) +
                  " megapixels an image may have");
    bindings::load(p);
    Tensor t;
    t.shape = p.shape;
    t.data = std::move(p.data);
    return SequenceInput::of_pixels(std::move(t));
  }
  const val image = input["image"];
  const std::int64_t width = whole_number("run", "image.width", image["width"], 1, 1e9);
  const std::int64_t height = whole_number("run", "image.height", image["height"], 1, 1e9);
  if (double(width) * double(height) > double(kMaxImagePixels))
    throw Error("run: the image is " + std::to_string(width) + " × " + std::to_string(height) + ", more than the " +
                std::to_string(kMaxImagePixels / 1'000'000) + " megapixels an image may have; scale it down first");
  const double length = image["rgba"]["length"].as<double>();
  if (length != 4.0 * double(width) * double(height))
    throw Error("run: the image's data has " + std::to_string(static_cast<long long>(length)) +
                " bytes, not width × height × 4 = " + std::to_string(4 * width * height) + " (RGBA)");
  rgba.resize(static_cast<std::size_t>(length));
  val(emscripten::typed_memory_view(rgba.size(), rgba.data())).call<void>("set", image["rgba"]);
  return SequenceInput::of_image({rgba.data(), width, height});
}

// { residual, rows? } for rollout and flow.
std::optional<AcrossLayers> across_arg(const char* name, const val& v) {
  if (v.isUndefined() || v.isNull()) return std::nullopt;
  AcrossLayers a;
  a.residual = flag(v, "residual", true);
  if (!v["set"].isUndefined()) {
    if (!v["set"].isString()) throw Error(std::string("run: ") + name + ".set must be a map set's name");
    a.set = v["set"].as<std::string>();
  }
  if (!v["rows"].isUndefined())
    for (std::int64_t r : integers_arg("run", (std::string(name) + ".rows").c_str(), v["rows"], 0, 1e9))
      a.rows.push_back(r);
  return a;
}

// What a run reads from the caller's arrays, copied into the heap: it must outlive the run.
struct Held {
  std::vector<std::uint8_t> rgba;  // an image's bytes
  std::vector<float> samples;      // a voice's
};

// { audio, target } or { features, target }: a speech model's source (audio_source) and the target's tokens.
Input audio_arg(const val& input, Held& held) {
  return Input::pair(audio_source("run", input, held.samples), tokens_arg(input["target"]));
}

// The one input of a run: { text } | { ids } | { source, target } | { image } | { pixels } | { audio, target } |
// { features, target }; what it reads of the caller's arrays goes to `held`.
Input input_arg(const val& input, Held& held) {
  Input in;
  if (!input["source"].isUndefined())
    in = Input::pair(tokens_arg(input["source"]), tokens_arg(input["target"]));
  else if (!input["audio"].isUndefined() || !input["features"].isUndefined())
    in = audio_arg(input, held);
  else if (!input["image"].isUndefined() || !input["pixels"].isUndefined())
    in.sequence = image_arg(input, held.rgba);
  else
    in.sequence = tokens_arg(input["text"].isUndefined() ? input["ids"] : input["text"]);
  return in;
}

// run()'s options, each checked (the model checks them against its layers and heads).
RunOptions run_options(val opts) {
  RunOptions o;
  o.return_projections = flag(opts, "returnProjections", false);
  o.token_norms = flag(opts, "tokenNorms", false);
  o.head_summaries = flag(opts, "headSummaries", false);
  o.logit_lens = flag(opts, "logitLens", false);
  o.return_logits = flag(opts, "returnLogits", false);
  o.reuse_prefix = flag(opts, "reusePrefix", true);
  o.rollout = across_arg("rollout", opts["rollout"]);
  o.flow = across_arg("flow", opts["flow"]);
  if (!opts["topK"].isUndefined()) o.top_k = whole_number("run", "topK", opts["topK"], 1, 1'000'000);
  if (!opts["mapLayers"].isUndefined())  // the model checks each against its layers
    o.map_layers = integers_arg("run", "mapLayers", opts["mapLayers"], -1e9, 1e9);
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

}  // namespace

ModelHandle::val ModelHandle::load(val files) {
  return guard("loadModel", [&] {
    LargeFiles large;  // the weights, read tensor by tensor from JS: no whole copy of them in the heap
    model_ = Model::load(copy_files("loadModel", files, &large), large);
    return val::object();
  });
}

ModelHandle::val ModelHandle::info() const { return model_ ? info_to_js(*model_) : val::object(); }

ModelHandle::val ModelHandle::attentionWeights(double layer) const {
  return guard("attentionWeights", [&] {
    if (!model_) throw Error("attentionWeights: no model is loaded");
    const std::int64_t layers = model_->info().layers;
    if (!(layer >= 0 && layer < double(layers)) || std::floor(layer) != layer)
      throw Error("attentionWeights: layer must be a whole number from 0 to " + std::to_string(layers - 1) + ", got " +
                  js_string(val(layer)));
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

ModelHandle::val ModelHandle::logits(const Engine& engine, val hidden) const {
  return guard("logits", [&] {
    if (!model_) throw Error("logits: no model is loaded");
    if (!model_->info().language_model)
      throw Error("logits: " + model_->info().name + " is an encoder; logits needs a language model");
    JsTensor h = tensor_arg("logits", "hidden", hidden);
    if (!h.present()) throw Error("logits: hidden must be a tensor { data, shape }");
    const std::int64_t d = model_->info().d_model;
    if (h.shape.size() != 2 || h.shape[0] < 1 || h.shape[1] != d)
      throw Error("logits: hidden must be [rows, " + std::to_string(d) + "] (rows ≥ 1), got " + format_shape(h.shape));
    check_budget("logits", 4.0 * double(h.shape[0]) * double(model_->info().vocab_size + d));
    bindings::load(h);
    Tensor t;
    t.shape = h.shape;
    t.data = std::move(h.data);
    return to_js(model_->logits(engine.runtime(), t));
  });
}

ModelHandle::val ModelHandle::decode(val ids, bool skip_special) const {
  return guard("decode", [&] {
    if (!model_) throw Error("decode: no model is loaded");
    const Tokenizer* t = model_->tokenizer();
    if (!t) throw Error("decode: this model's files hold no tokenizer AttnScope reads");
    return decoded(*t, ids_arg(ids), skip_special);
  });
}

ModelHandle::val ModelHandle::labels(val ids) const {
  return guard("labels", [&] {
    if (!model_) throw Error("labels: no model is loaded");
    const Tokenizer* t = model_->tokenizer();
    if (!t) throw Error("labels: this model's files hold no tokenizer AttnScope reads");
    return labelled(*t, ids_arg(ids));
  });
}

ModelHandle::val ModelHandle::tokenize(const std::string& text, bool target) const {
  return guard("tokenize", [&] {
    if (!model_) throw Error("tokenize: no model is loaded");
    const Tokenizer* t = model_->tokenizer();
    if (!t) throw Error("tokenize: this model's files hold no tokenizer AttnScope reads");
    return encoding_to_js(target ? t->encode_target(text) : t->encode(text));
  });
}

ModelHandle::val ModelHandle::run(const Engine& engine, val input, val opts) const {
  return guard("run", [&] {
    if (!model_) throw Error("run: no model is loaded");
    RunOptions o = run_options(opts);
    Held held;  // an image's bytes or a voice's samples, read during the run
    const Input in = input_arg(input, held);
    // The first map set's maps leave during the run, unless the caller gave an array for them: a model of one
    // stack's ("self"; causal ones as their lower triangles).
    const bool causal = !model_->info().encoder_decoder && model_->info().causal;
    MapsOut maps(engine.runtime(), causal, opts);
    if (!model_->info().encoder_decoder) maps.attach(o);
    const RunResult r = model_->run(engine.runtime(), in, o);
    const MapSet& first = r.maps.front();
    val attentions =
        model_->info().encoder_decoder ? weights_to_js(first.attentions, first.causal) : maps.finish(first.attentions);
    return run_to_js(*model_, r, o, attentions);
  });
}

ModelHandle::val ModelHandle::explainScore(const Engine& engine, val input, val opts, val query) const {
  const char* op = "explainScore";
  return guard(op, [&] {
    if (!model_) throw Error("explainScore: no model is loaded");
    Held held;
    const Input in = input_arg(input, held);
    ScoreQuery q;
    if (query["set"].isString()) q.set = query["set"].as<std::string>();
    q.layer = whole_number(op, "layer", query["layer"], 0, kMaxDimension);
    q.head = whole_number(op, "head", query["head"], 0, kMaxDimension);
    q.query = whole_number(op, "query", query["query"], 0, 1e9);
    q.key = whole_number(op, "key", query["key"], 0, 1e9);
    return score_explanation_to_js(model_->explain_score(engine.runtime(), in, run_options(opts), q));
  });
}

ModelHandle::val ModelHandle::explainLogit(const Engine& engine, val input, val opts, val query) const {
  const char* op = "explainLogit";
  return guard(op, [&] {
    if (!model_) throw Error("explainLogit: no model is loaded");
    Held held;
    const Input in = input_arg(input, held);
    LogitQuery q;
    q.position = whole_number(op, "position", query["position"], 0, 1e9);
    q.token = static_cast<std::int32_t>(whole_number(op, "token", query["token"], 0, 2147483647.0));
    return logit_explanation_to_js(model_->explain_logit(engine.runtime(), in, run_options(opts), q));
  });
}

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
      .function("explainScore", &ModelHandle::explainScore)
      .function("explainLogit", &ModelHandle::explainLogit)
      .function("logits", &ModelHandle::logits)
      .function("decode", &ModelHandle::decode)
      .function("labels", &ModelHandle::labels);
}
