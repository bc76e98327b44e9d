// TransformerModel: its parts put together from a Spec, what it tells of itself (ModelInfo), its options checked,
// an encoder-decoder's run, and the analyses of a run's maps. A model of one stack runs in transformer_run.cpp.
#include "models/transformer_model.hpp"

#include <algorithm>
#include <numeric>

#include "attnscope/analysis.hpp"
#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "models/ops.hpp"
#include "models/sampling.hpp"

namespace attnscope::transformer {

namespace {

std::string named(const ModelInfo& info) { return info.name + " (" + info.architecture + ")"; }

std::vector<std::int64_t> every_layer(std::int64_t layers) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(layers));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

std::vector<std::int32_t> kv_heads_of(const Config& c) {
  std::vector<std::int32_t> kv;
  for (std::int64_t h = 0; h < c.heads; ++h) kv.push_back(static_cast<std::int32_t>(h / (c.heads / c.kv_heads)));
  return kv;
}

ImageNormalization normalization_of(const vision::Preprocess& p, bool from_file) {
  ImageNormalization n;
  n.processor = p.processor;
  n.from_file = from_file;
  n.rescale = p.do_rescale ? p.rescale_factor : 1.0;
  for (int c = 0; c < 3; ++c) {
    n.mean.push_back(p.do_normalize ? p.image_mean[c] : 0.0);
    n.std.push_back(p.do_normalize ? p.image_std[c] : 1.0);
  }
  return n;
}

}  // namespace

TransformerModel::TransformerModel(Spec spec, ModelWeights w, std::unique_ptr<Tokenizer> tokenizer,
                                   Preprocessor preprocessor)
    : spec_(std::move(spec)),
      heads_(spec_.head, std::move(w.head), spec_.encoder_decoder() ? w.target_tokens.embed : w.tokens.embed,
             spec_.last().d_model) {
  tokenizer_ = std::move(tokenizer);
  const bool image = spec_.input == InputKind::image, audio = spec_.input == InputKind::audio;
  const std::int64_t d = spec_.stacks[0].d_model;
  if (image)
    front_ = std::make_unique<PatchEmbedding>(spec_.vision, std::move(w.patches), preprocessor.image, d);
  else if (audio)
    front_ = std::make_unique<AudioEmbedding>(spec_.audio, std::move(w.audio), preprocessor.audio, d);
  else
    front_ = std::make_unique<TokenEmbedding>(spec_.tokens, std::move(w.tokens));
  if (spec_.encoder_decoder())
    target_tokens_ = std::make_unique<TokenEmbedding>(spec_.target_tokens, std::move(w.target_tokens));
  for (std::size_t i = 0; i < spec_.stacks.size(); ++i) stacks_.emplace_back(spec_.stacks[i], std::move(w.stacks[i]));

  const Config& last = spec_.last();
  info_.name = spec_.name;
  info_.architecture = spec_.architecture;
  info_.input = spec_.input;
  for (const Config& c : spec_.stacks)
    info_.stacks.push_back({c.causal ? "decoder" : "encoder", c.layers, c.heads, c.kv_heads, c.head_dim, c.max_tokens,
                            c.causal, c.window});
  info_.layers = last.layers;
  info_.heads = last.heads;
  info_.kv_heads = last.kv_heads;
  info_.head_dim = last.head_dim;
  info_.d_model = last.d_model;
  info_.max_tokens = last.max_tokens;
  info_.vocab_size = image ? 0 : tokens().config().vocab;
  info_.causal = last.causal;
  info_.language_model = spec_.head.language_model;
  info_.weights_dtype = w.dtype;
  info_.window = last.window;
  info_.eos = spec_.generation.eos;
  if (spec_.encoder_decoder()) {
    const Config& encoder = spec_.stacks[0];
    info_.encoder_decoder = true;
    info_.encoder_layers = encoder.layers;
    info_.encoder_heads = encoder.heads;
    info_.encoder_max_tokens = encoder.max_tokens;
    info_.decoder_start = spec_.generation.decoder_start;
    info_.forced_bos = spec_.generation.forced_bos;
    info_.search = spec_.generation.search;
    info_.search.eos = info_.eos;
  }
  if (image) {
    const VisionConfig& v = spec_.vision;
    info_.vision = true;
    info_.image_height = v.image_height;
    info_.image_width = v.image_width;
    info_.patch_size = v.patch;
    info_.channels = v.channels;
    info_.prefix_tokens = v.prefix;
    info_.registers = v.registers;
    info_.labels = spec_.head.labels;
    info_.normalization = normalization_of(preprocessor.image, preprocessor.from_file);
  }
  if (audio) {
    const audio::Features& f = preprocessor.audio;
    info_.audio = {f.sampling_rate, f.feature_size,       f.n_fft, f.hop_length, f.n_samples(),
                   f.frames(),      spec_.audio.positions};
  }
}

const TokenEmbedding& TransformerModel::tokens() const {
  if (target_tokens_) return *target_tokens_;
  // A model of text's front end is its token embedding (the wasm builds have no RTTI to ask it).
  if (spec_.input != InputKind::text)
    throw Error(named(info_) + " reads " + (spec_.input == InputKind::image ? "images" : "audio") + ", not tokens");
  return static_cast<const TokenEmbedding&>(*front_);
}

MultiHeadParams TransformerModel::attention_weights(std::int64_t layer) const {
  if (layer < 0 || layer >= info_.layers)
    throw Error("attentionWeights: layer must be a whole number from 0 to " + std::to_string(info_.layers - 1) +
                ", got " + std::to_string(layer));
  return last().attention_weights(layer);
}

Tensor TransformerModel::logits(const Runtime& rt, const Tensor& hidden) const {
  if (!spec_.head.language_model)
    throw Error("logits: " + named(info_) +
                " is not a language model; logits needs a decoder such as GPT-2, Llama, Qwen or Gemma");
  const std::int64_t d = info_.d_model;
  if (hidden.shape.size() != 2 || hidden.shape[0] < 1 || hidden.shape[1] != d)
    throw Error("logits: hidden must be [rows, " + std::to_string(d) + "] (rows ≥ 1, the model's width), got " +
                format_shape(hidden.shape));
  check_budget("logits", 4.0 * double(hidden.shape[0]) * double(info_.vocab_size + d));
  for (float x : hidden.data)
    if (!std::isfinite(x)) throw Error("logits: hidden holds a value that is not finite");
  const Matrix normed = ConstMatrixMap(hidden.data.data(), hidden.shape[0], d);
  return ops::to_tensor(heads_.logits(rt, normed));
}

Reading TransformerModel::read(const SequenceInput& input, std::size_t stack) const {
  ReadContext context;
  context.info = &info_;
  context.tokenizer = tokenizer_.get();
  context.max_tokens = stacks_[stack].config().max_tokens;
  if (spec_.encoder_decoder())
    context.name = stack == 1 ? "target" : spec_.input == InputKind::audio ? "audio" : "source";
  else
    context.name = spec_.input == InputKind::image ? "image" : "text";
  if (stack == 1) {  // the target: a text as the decoder reads it
    if (input.form == SequenceInput::Form::text)
      return target_tokens_->read(SequenceInput::of_ids(decoder_input(input.text)), context);
    return target_tokens_->read(input, context);
  }
  return front_->read(input, context);
}

void TransformerModel::check(const RunOptions& o) const {
  const bool pair = spec_.encoder_decoder(), image = spec_.input == InputKind::image;
  for (const auto& [l, h] : o.ablate_heads)
    if (l < 0 || l >= info_.layers || h < 0 || h >= info_.heads)
      throw Error("run: ablateHeads names layer " + std::to_string(l) + ", head " + std::to_string(h) + ", outside " +
                  (pair ? "the decoder's " : "the model's ") + std::to_string(info_.layers) + " layers × " +
                  std::to_string(info_.heads) + " heads (both count from 0)");
  if (pair && (o.map_layers || o.logit_lens || !o.attention_mask.empty()))
    throw Error(
        "run: a source and a target take topK, returnLogits, returnProjections, tokenNorms and ablateHeads; "
        "mapLayers, logitLens and attentionMask are for runs of one text");
  if (image && (o.top_k || o.logit_lens || o.return_logits || !o.attention_mask.empty()))
    throw Error(
        "run: an image takes mapLayers, ablateHeads, returnProjections and tokenNorms; topK, logitLens, returnLogits "
        "and attentionMask are for text");
  const bool lm = o.top_k || o.logit_lens || o.return_logits;
  if (lm && !spec_.head.language_model)
    throw Error(pair ? "run: topK and returnLogits need an LM head, as BartForConditionalGeneration has; " +
                           named(info_) + " has none"
                     : "run: topK, logitLens and returnLogits need a language model, a decoder such as GPT-2 or "
                       "Llama; " +
                           named(info_) + " is an encoder");
  if (o.map_layers)
    for (std::size_t i = 0; i < o.map_layers->size(); ++i) {
      const std::int64_t l = (*o.map_layers)[i];
      if (l < 0 || l >= info_.layers)
        throw Error("run: mapLayers[" + std::to_string(i) + "] = " + std::to_string(l) + " is outside the model's " +
                    std::to_string(info_.layers) + " layers (counting from 0)");
      if (std::find(o.map_layers->begin(), o.map_layers->begin() + i, l) != o.map_layers->begin() + i)
        throw Error("run: mapLayers names layer " + std::to_string(l) + " twice");
    }
}

RunResult TransformerModel::run(const Runtime& rt, const Input& input, const RunOptions& o) const {
  front_->check_form(input.sequence, info_);  // what the model reads, before what it runs on
  check(o);
  RunResult r;
  if (spec_.encoder_decoder()) {
    if (!input.target)
      throw Error("run: " + named(info_) +
                  " is an encoder-decoder model: run it on a source and a target, run({ source, target })");
    run_pair(rt, input, o, r);
  } else {
    if (input.target)
      throw Error("run: " + named(info_) +
                  " is not an encoder-decoder model; a source and a target need one such as BART");
    run_one(rt, read(input.sequence, 0), o, r);
  }
  analyse(o, r);
  return r;
}

void TransformerModel::run_pair(const Runtime& rt, const Input& input, const RunOptions& o, RunResult& r) const {
  const Stack &encoder = stacks_[0], &decoder = stacks_[1];
  const Config &ce = encoder.config(), &c = decoder.config();
  Reading source = read(input.sequence, 0), target = read(*input.target, 1);
  if (target.sequence.truncated)
    throw Error("run: the target has " + std::to_string(target.sequence.total_tokens) +
                " tokens, more than the decoder's " + std::to_string(c.max_tokens) + " positions");
  const std::int64_t ns = static_cast<std::int64_t>(source.sequence.tokens.size());
  const std::int64_t nt = static_cast<std::int64_t>(target.sequence.ids.size());
  check_budget("run", 4.0 * double(ce.layers * ce.heads) * double(ns) * double(ns) +
                          4.0 * double(c.layers * c.heads) * double(nt) * double(nt + ns) + logit_bytes(nt, o));
  Matrix embedded = front_->embed(rt, source, 0);
  r.features = std::move(source.features);
  r.sequences = {std::move(source.sequence), std::move(target.sequence)};
  r.stacks.resize(2);
  r.stacks[0].name = "encoder", r.stacks[0].sequence = 0;
  r.stacks[1].name = "decoder", r.stacks[1].sequence = 1;
  for (std::size_t s = 0; s < 2 && o.token_norms; ++s)
    r.stacks[s].token_norms = Tensor({stacks_[s].config().layers + 1, s ? nt : ns});
  // Every value of every map is written by the kernels.
  r.maps.resize(3);
  MapSet &enc = r.maps[0], &dec = r.maps[1], &cross = r.maps[2];
  enc.name = "encoder", enc.queries = enc.keys = 0, enc.causal = ce.causal;
  enc.attentions = Tensor::unfilled({ce.layers, ce.heads, ns, ns});
  dec.name = "decoder", dec.queries = dec.keys = 1, dec.causal = c.causal;
  dec.attentions = Tensor::unfilled({c.layers, c.heads, nt, nt});
  cross.name = "cross", cross.queries = 1, cross.keys = 0;
  cross.attentions = Tensor::unfilled({c.layers, c.heads, nt, ns});
  enc.map_layers = every_layer(ce.layers);
  dec.map_layers = cross.map_layers = every_layer(c.layers);
  enc.kv_head = kv_heads_of(ce);
  dec.kv_head = cross.kv_head = kv_heads_of(c);

  RunTaps taps(rt, o, r, heads_, decoder, 1, nullptr);
  Pass pass;
  pass.tap = taps.any() ? &taps : nullptr;
  pass.maps = Pass::every_layer(enc.attentions.data.data(), ce.layers, ce.heads * ns * ns);
  Cache encoder_cache(ce);
  const Matrix encoded = encoder.run(rt, encoder_cache, std::move(embedded), pass);
  r.stacks[0].hidden = ops::to_tensor(encoded);
  const Memory memory = decoder.memory(rt, encoded);

  pass.stack = 1;
  pass.maps = Pass::every_layer(dec.attentions.data.data(), c.layers, c.heads * nt * nt);
  pass.cross_maps = Pass::every_layer(cross.attentions.data.data(), c.layers, c.heads * nt * ns);
  pass.memory = &memory;
  pass.ablate = &o.ablate_heads;
  Cache cache(c);
  const Matrix x = decoder.run(rt, cache, target_tokens_->embed(r.sequences[1].ids.data(), nt, 0), pass);
  r.stacks[1].hidden = ops::to_tensor(x);
  predict(rt, x, o, r);
}

void TransformerModel::predict(const Runtime& rt, const Matrix& hidden, const RunOptions& o, RunResult& r) const {
  if (!o.top_k && !o.return_logits) return;
  const std::int64_t n = hidden.rows(), vocab = spec_.head.vocab;
  const Matrix all = o.return_logits ? heads_.logits(rt, hidden) : Matrix();
  if (o.return_logits) r.logits = ops::to_tensor(all);
  if (!o.top_k) return;
  const std::int64_t k = std::min(o.top_k, vocab);
  Predictions& out = r.predictions;
  out.k = k;
  out.ids.resize(static_cast<std::size_t>(n * k));
  out.probs.resize(out.ids.size());
  if (o.return_logits)
    Heads::top_k_of(rt, all, 0, n, k, out.ids.data(), out.probs.data());
  else
    heads_.top_k(rt, hidden, k, out.ids.data(), out.probs.data());
}

double TransformerModel::logit_bytes(std::int64_t rows, const RunOptions& o) const {
  const double whole = 4.0 * double(rows) * double(spec_.head.vocab);
  return o.return_logits ? whole : o.top_k || o.logit_lens ? std::min(whole, double(Heads::kLogitBlockBytes)) : 0.0;
}

void TransformerModel::analyse(const RunOptions& o, RunResult& r) const {
  if (!o.head_summaries && !o.rollout && !o.flow) return;
  for (const std::optional<AcrossLayers>* across : {&o.rollout, &o.flow})
    if (*across && !(*across)->set.empty()) r.map((*across)->set);  // an Error naming the sets there are
  for (MapSet& set : r.maps) {
    if (set.cross()) continue;  // rollout, flow and the summaries measure one sequence attending to itself
    const Sequence& seq = r.sequences[set.queries];
    if (o.head_summaries)
      set.head_summaries =
          head_summaries(set.attentions.data.data(), set.attentions.shape, seq.special, punctuation_tokens(seq.tokens));
    const auto asked = [&](const std::optional<AcrossLayers>& a) {
      return a && (a->set.empty() || a->set == set.name);
    };
    if (!asked(o.rollout) && !asked(o.flow)) continue;
    const std::int64_t layers = set.attentions.shape[0], n = set.attentions.shape[2];
    const std::size_t stack = &set == &r.maps.front() ? 0 : spec_.stacks.size() - 1;
    if (set.map_layers != every_layer(spec_.stacks[stack].layers))
      throw Error("run: rollout and flow read every layer's maps in order, and this run returns layers " +
                  format_shape(set.map_layers) + " of " + std::to_string(spec_.stacks[stack].layers));
    if (asked(o.rollout)) {  // the last layer's: how much each final token draws on each input token
      const Tensor all = attention_rollout(set.attentions.data.data(), set.attentions.shape, o.rollout->residual);
      set.rollout = Tensor({n, n});
      std::copy_n(all.data.begin() + (layers - 1) * n * n, n * n, set.rollout.data.begin());
    }
    if (asked(o.flow)) {
      std::vector<std::int64_t> rows = o.flow->rows;
      if (rows.empty()) rows = every_layer(n);  // every token
      set.flow = attention_flow(set.attentions.data.data(), set.attentions.shape, o.flow->residual, rows);
    }
  }
}

std::unique_ptr<Model> make_model(const std::string& architecture, const Json& config, const ModelFiles& files,
                                  const WeightStore& store, std::unique_ptr<Tokenizer> tokenizer) {
  const auto generation_file = files.find("generation_config.json");
  const Json generation =
      generation_file == files.end() ? Json() : Json::parse(generation_file->second, "generation_config.json");
  Spec spec = read_spec(architecture, config, &generation);
  if (spec.tokenizer_required && !tokenizer) throw Error("loadModel: vocab.json is missing from the model's files");
  ModelWeights weights = read_weights(spec, store);
  Preprocessor preprocessor;
  const auto file = files.find("preprocessor_config.json");
  preprocessor.from_file = file != files.end();
  const Json json = file == files.end() ? Json() : Json::parse(file->second, "preprocessor_config.json");
  const Json* given = file == files.end() ? nullptr : &json;
  if (spec.input == InputKind::image)
    preprocessor.image = vision::read_preprocess(given, spec.vision.image_height, spec.vision.image_width);
  if (spec.input == InputKind::audio) {
    preprocessor.audio = audio::read_features(given, spec.audio.mel_bins);
    // WhisperEncoder refuses any other length: its convolutions halve a window's frames to its positions.
    if (preprocessor.audio.frames() != 2 * spec.audio.positions)
      throw Error("loadModel: a window of " + std::to_string(preprocessor.audio.chunk_length) + " s makes " +
                  std::to_string(preprocessor.audio.frames()) + " frames, but the encoder reads " +
                  std::to_string(2 * spec.audio.positions) + " (2 × config.json's max_source_positions)");
  }
  return std::make_unique<TransformerModel>(std::move(spec), std::move(weights), std::move(tokenizer),
                                            std::move(preprocessor));
}

// Every Model is a TransformerModel: Model::load makes one (and the wasm builds have no RTTI to check it).
const TransformerModel* transformer_of(const Model& model) { return static_cast<const TransformerModel*>(&model); }

}  // namespace attnscope::transformer
