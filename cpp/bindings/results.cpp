#include "results.hpp"

#include "convert.hpp"
#include "tokens.hpp"

namespace attnscope::bindings {

namespace {

val numbers(const std::vector<std::int64_t>& v) {
  val out = val::array();
  for (std::int64_t x : v) out.call<void>("push", static_cast<double>(x));
  return out;
}

val doubles(const std::vector<double>& v) {
  val out = val::array();
  for (double x : v) out.call<void>("push", x);
  return out;
}

}  // namespace

val info_to_js(const Model& model) {
  const ModelInfo& m = model.info();
  val i = val::object();
  i.set("name", m.name);
  i.set("architecture", m.architecture);
  i.set("input", m.input == InputKind::image ? "image" : m.input == InputKind::audio ? "audio" : "text");
  val stacks = val::array();
  for (const StackInfo& s : m.stacks) {
    val one = val::object();
    one.set("name", s.name);
    one.set("layers", static_cast<double>(s.layers));
    one.set("heads", static_cast<double>(s.heads));
    one.set("kvHeads", static_cast<double>(s.kv_heads));
    one.set("headDim", static_cast<double>(s.head_dim));
    one.set("maxTokens", static_cast<double>(s.max_tokens));
    one.set("causal", s.causal);
    one.set("window", numbers(s.window));
    stacks.call<void>("push", one);
  }
  i.set("stacks", stacks);
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
  i.set("weights", m.weights);
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
    val n = val::object();
    n.set("processor", m.normalization.processor);
    n.set("fromFile", m.normalization.from_file);
    n.set("rescale", m.normalization.rescale);
    n.set("mean", doubles(m.normalization.mean));
    n.set("std", doubles(m.normalization.std));
    i.set("imageNormalization", n);
  }
  if (m.input == InputKind::audio) {
    const AudioInfo& a = m.audio;
    val audio = val::object();
    audio.set("samplingRate", static_cast<double>(a.sampling_rate));
    audio.set("melBins", static_cast<double>(a.mel_bins));
    audio.set("nFft", static_cast<double>(a.n_fft));
    audio.set("hopLength", static_cast<double>(a.hop_length));
    audio.set("windowSamples", static_cast<double>(a.window_samples));
    audio.set("frames", static_cast<double>(a.frames));
    audio.set("positions", static_cast<double>(a.positions));
    i.set("audio", audio);
  }
  i.set("window", numbers(m.window));
  const Tokenizer* t = model.tokenizer();
  i.set("normalization", t ? t->normalization() : std::string());
  i.set("tokenizer", t != nullptr);
  return i;
}

val sequence_to_js(const Sequence& s) {
  val out = val::object();
  out.set("name", s.name);
  val tokens = val::array(), special = val::array();
  for (const auto& t : s.tokens) tokens.call<void>("push", t);
  for (auto x : s.special) special.call<void>("push", x != 0);
  out.set("tokens", tokens);
  out.set("special", special);
  out.set("ids", int32_array(s.ids));
  out.set("totalTokens", static_cast<double>(s.total_tokens));
  out.set("truncated", s.truncated);
  if (s.rows) out.set("grid", numbers({s.rows, s.cols}));
  if (s.seconds > 0) out.set("seconds", s.seconds);
  return out;
}

val map_set_to_js(const MapSet& set, val attentions) {
  val out = val::object();
  out.set("name", set.name);
  out.set("queries", static_cast<double>(set.queries));
  out.set("keys", static_cast<double>(set.keys));
  out.set("causal", set.causal);
  out.set("attentions", attentions);
  out.set("mapLayers", numbers(set.map_layers));
  out.set("kvHead", int32_array(set.kv_head));
  if (!set.head_summaries.empty()) out.set("headSummaries", to_js(set.head_summaries));
  if (!set.rollout.empty()) out.set("rollout", to_js(set.rollout));
  if (!set.flow.empty()) out.set("flow", to_js(set.flow));
  return out;
}

val run_to_js(const Model& model, const RunResult& r, const RunOptions& o, val first) {
  const Tokenizer* t = model.tokenizer();
  val out = val::object();
  val sequences = val::array(), maps = val::array(), stacks = val::array();
  for (const Sequence& s : r.sequences) sequences.call<void>("push", sequence_to_js(s));
  for (std::size_t i = 0; i < r.maps.size(); ++i) {
    const MapSet& set = r.maps[i];
    maps.call<void>("push", map_set_to_js(set, i == 0 ? first : weights_to_js(set.attentions, set.causal)));
  }
  for (const StackRun& s : r.stacks) {
    val one = val::object();
    one.set("name", s.name);
    one.set("sequence", static_cast<double>(s.sequence));
    one.set("hidden", to_js(s.hidden));
    if (o.return_projections)
      for (const auto& [name, list] : {std::pair{"q", &s.q}, {"k", &s.k}, {"v", &s.v}, {"inputs", &s.inputs}}) {
        val layers = val::array();
        for (const Tensor& x : *list) layers.call<void>("push", to_js(x));
        one.set(name, layers);
      }
    if (!s.token_norms.empty()) one.set("tokenNorms", to_js(s.token_norms));
    stacks.call<void>("push", one);
  }
  out.set("sequences", sequences);
  out.set("maps", maps);
  out.set("stacks", stacks);
  if (!r.embedding.empty()) out.set("embedding", to_js(r.embedding)["data"]);
  if (r.predictions.k) {
    val p = val::object();
    p.set("k", static_cast<double>(r.predictions.k));
    p.set("ids", int32_array(r.predictions.ids));
    p.set("probs", float32_array(r.predictions.probs));
    p.set("tokens", token_rows(t, r.predictions.ids, r.predictions.k));
    out.set("predictions", p);
  }
  if (o.logit_lens) {
    val lens = val::object();
    const std::int64_t n = static_cast<std::int64_t>(r.sequences.back().tokens.size());
    lens.set("ids", int32_array(r.logit_lens.ids));
    lens.set("probs", float32_array(r.logit_lens.probs));
    lens.set("tokens", token_rows(t, r.logit_lens.ids, n));
    out.set("logitLens", lens);
  }
  if (o.return_logits) out.set("logits", to_js(r.logits));
  if (model.info().language_model) out.set("reusedTokens", static_cast<double>(r.reused_tokens));
  if (!r.pixels.empty()) out.set("pixels", to_js(r.pixels));
  if (!r.features.empty()) out.set("features", to_js(r.features));
  if (!r.image_embedding.empty()) out.set("imageEmbedding", to_js(r.image_embedding)["data"]);
  if (!r.label_logits.empty()) out.set("labelLogits", to_js(r.label_logits)["data"]);
  if (model.info().vision) {
    val labels = val::array();
    for (const ImageLabel& l : r.labels) {
      val label = val::object();
      label.set("id", l.id);
      label.set("label", l.label);
      label.set("probability", l.probability);
      labels.call<void>("push", label);
    }
    out.set("labels", labels);
  }
  return out;
}

namespace {

const char* kind_name(Source::Kind k) {
  switch (k) {
    case Source::Kind::token:
      return "token";
    case Source::Kind::position:
      return "position";
    case Source::Kind::prefix:
      return "prefix";
    case Source::Kind::register_token:
      return "register";
    case Source::Kind::patch:
      return "patch";
    case Source::Kind::patch_bias:
      return "patchBias";
    case Source::Kind::audio:
      return "audio";
    case Source::Kind::head:
      return "head";
    case Source::Kind::attention_bias:
      return "attentionBias";
    case Source::Kind::cross:
      return "cross";
    case Source::Kind::mlp:
      return "mlp";
    case Source::Kind::norm_bias:
      return "normBias";
    case Source::Kind::widen_bias:
      return "widenBias";
    case Source::Kind::query_bias:
      return "queryBias";
    case Source::Kind::key_bias:
      return "keyBias";
    case Source::Kind::logit_bias:
      return "logitBias";
  }
  return "";
}

val sources_to_js(const std::vector<Source>& sources) {
  val out = val::array();
  for (const Source& s : sources) {
    val one = val::object();
    one.set("kind", kind_name(s.kind));
    one.set("stack", static_cast<double>(s.stack));
    one.set("layer", static_cast<double>(s.layer));
    one.set("head", static_cast<double>(s.head));
    one.set("position", static_cast<double>(s.position));
    out.call<void>("push", one);
  }
  return out;
}

// A new Float64Array of the values (copied out of the heap).
val float64s(const std::vector<double>& v) {
  return val::global("Float64Array").new_(emscripten::typed_memory_view(v.size(), v.data())).call<val>("slice");
}

}  // namespace

val score_explanation_to_js(const ScoreExplanation& e) {
  val out = val::object();
  out.set("querySources", sources_to_js(e.query_sources));
  out.set("keySources", sources_to_js(e.key_sources));
  out.set("terms", float64s(e.terms));
  out.set("score", e.score);
  out.set("positionBias", e.position_bias);
  out.set("softcap", e.softcap);
  return out;
}

val logit_explanation_to_js(const LogitExplanation& e) {
  val out = val::object();
  out.set("sources", sources_to_js(e.sources));
  out.set("terms", float64s(e.terms));
  out.set("logit", e.logit);
  out.set("softcap", e.softcap);
  return out;
}

}  // namespace attnscope::bindings
