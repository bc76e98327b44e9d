#include "models/encoder_decoder.hpp"

#include <numeric>

#include "attnscope/error.hpp"
#include "models/ops.hpp"
#include "models/sampling.hpp"

namespace attnscope::transformer {

EncoderDecoderModel::EncoderDecoderModel(const Config& config, const Weights& weights,
                                         std::unique_ptr<Tokenizer> tokenizer)
    : encoder_(std::make_unique<TransformerModel>(*config.encoder, *weights.encoder, nullptr)),
      decoder_(std::make_unique<TransformerModel>(config, weights, nullptr)) {
  tokenizer_ = std::move(tokenizer);
  info_ = decoder_->info();
  info_.encoder_decoder = true;
  info_.encoder_layers = config.encoder->layers;
  info_.encoder_heads = config.encoder->heads;
  info_.encoder_max_tokens = config.encoder->max_tokens;
  info_.decoder_start = config.decoder_start;
  info_.forced_bos = config.forced_bos;
  info_.search = config.search;
  info_.search.eos = info_.eos;
}

void EncoderDecoderModel::forward(const Runtime&, ModelRun&, const RunOptions&) const {
  throw Error("run: " + info_.name + " (" + info_.architecture +
              ") is an encoder-decoder model: run it on a source and a target, run({ source, target })");
}

std::unique_ptr<Generation> EncoderDecoderModel::generate(const Runtime&, const std::vector<std::int32_t>&,
                                                          std::uint64_t, GenerationMaps) const {
  throw Error("generate: " + info_.name + " (" + info_.architecture +
              ") is an encoder-decoder model: it generates a target from a source");
}

namespace {

// The decoder's generation with the source it reads: every call but source() is the decoder's.
class PairGeneration final : public Generation {
 public:
  PairGeneration(std::unique_ptr<Generation> decoder, std::shared_ptr<const ModelRun> source)
      : decoder_(std::move(decoder)), source_(std::move(source)) {}

  std::int32_t step(const Runtime& rt, const SamplingOptions& s) override { return decoder_->step(rt, s); }
  void append(const Runtime& rt, std::int32_t id) override { decoder_->append(rt, id); }
  std::vector<float> next_probabilities(const Runtime& rt) const override { return decoder_->next_probabilities(rt); }
  const std::vector<std::int32_t>& ids() const override { return decoder_->ids(); }
  Tensor last_rows() const override { return decoder_->last_rows(); }
  Tensor attentions() const override { return decoder_->attentions(); }
  Tensor last_cross_rows() const override { return decoder_->last_cross_rows(); }
  Tensor cross_attentions() const override { return decoder_->cross_attentions(); }
  const ModelRun* source() const override { return source_.get(); }
  const std::vector<float>& next_logits(const Runtime& rt) const override { return decoder_->next_logits(rt); }
  std::unique_ptr<Generation> fork() const override {
    return std::make_unique<PairGeneration>(decoder_->fork(), source_);
  }

 private:
  std::unique_ptr<Generation> decoder_;
  std::shared_ptr<const ModelRun> source_;  // shared by the beams a search forks
};

}  // namespace

std::unique_ptr<Generation> EncoderDecoderModel::generate_pair(const Runtime& rt, std::vector<std::int32_t> source,
                                                               const std::vector<std::int32_t>& target,
                                                               std::uint64_t seed, GenerationMaps maps) const {
  if (!decoder_->config().language_model)
    throw Error("generate: " + info_.name + " (" + info_.architecture +
                ") has no LM head to generate with, as BartForConditionalGeneration has");
  ModelRun s = prepare_ids(std::move(source), encoder_->config().max_tokens, "the source");
  RunOptions options;  // the encoder's maps kept only for GenerationMaps::all; else attention runs fused
  if (maps != GenerationMaps::all) options.map_layers = std::vector<std::int64_t>{};
  options.reuse_prefix = false;
  ModelRun encoded = encoder_->run_ids(rt, s.ids, options);
  const std::int64_t ns = static_cast<std::int64_t>(s.ids.size());
  auto memory = std::make_shared<const Memory>(
      decoder_->memory(rt, ConstMatrixMap(encoded.hidden.data.data(), ns, decoder_->config().d_model)));
  for (std::int32_t id : s.ids) s.special.push_back(tokenizer_ && tokenizer_->is_special(id) ? 1 : 0);
  s.attentions = std::move(encoded.attentions);
  s.map_layers = std::move(encoded.map_layers);
  return std::make_unique<PairGeneration>(decoder_->generate(rt, target, seed, maps, std::move(memory)),
                                          std::make_shared<const ModelRun>(std::move(s)));
}

MultiHeadParams EncoderDecoderModel::attention_weights(std::int64_t layer) const {
  return decoder_->attention_weights(layer);
}

Tensor EncoderDecoderModel::logits(const Runtime& runtime, const Tensor& hidden) const {
  return decoder_->logits(runtime, hidden);
}

PairRun EncoderDecoderModel::run_pair(const Runtime& rt, std::vector<std::int32_t> source,
                                      std::vector<std::int32_t> target, const RunOptions& o) const {
  const Config& c = decoder_->config();
  if (o.map_layers || o.logit_lens || o.return_projections || !o.attention_mask.empty())
    throw Error(
        "run: a source and a target take topK, returnLogits and ablateHeads; mapLayers, logitLens, "
        "returnProjections and attentionMask are for runs of one text");
  if (!c.language_model && (o.top_k || o.return_logits))
    throw Error("run: " + info_.name + " (" + info_.architecture + ") has no LM head: topK and returnLogits need " +
                "one, as BartForConditionalGeneration has");
  for (const auto& [l, h] : o.ablate_heads)
    if (l < 0 || l >= c.layers || h < 0 || h >= c.heads)
      throw Error("run: ablateHeads names layer " + std::to_string(l) + ", head " + std::to_string(h) +
                  ", outside the decoder's " + std::to_string(c.layers) + " layers × " + std::to_string(c.heads) +
                  " heads (both count from 0)");
  PairRun p;
  p.source = prepare_ids(std::move(source), encoder_->config().max_tokens, "the source");
  p.target = prepare_ids(std::move(target), c.max_tokens, "the target");
  if (p.target.truncated)
    throw Error("run: the target has " + std::to_string(p.target.total_tokens) + " tokens, more than the decoder's " +
                std::to_string(c.max_tokens) + " positions");
  for (ModelRun* r : {&p.source, &p.target})
    for (std::int32_t id : r->ids) r->special.push_back(tokenizer_ && tokenizer_->is_special(id) ? 1 : 0);

  // The encoder, as a run of its own: every layer's maps, and its output, the memory.
  RunOptions plain;
  plain.reuse_prefix = false;
  const ModelRun encoded = encoder_->run_ids(rt, p.source.ids, plain);
  p.source.attentions = encoded.attentions;
  p.source.map_layers = encoded.map_layers;
  p.source.kv_head = encoded.kv_head;
  p.source.hidden = encoded.hidden;
  const std::int64_t ns = static_cast<std::int64_t>(p.source.ids.size());
  const std::int64_t nt = static_cast<std::int64_t>(p.target.ids.size());
  const Memory memory = decoder_->memory(rt, ConstMatrixMap(encoded.hidden.data.data(), ns, c.d_model));

  // The decoder on the whole target at once: its maps [L, H, nt, nt] and cross-attention [L, H, nt, ns], every value
  // written by the kernels.
  const bool logits = o.top_k || o.return_logits;
  check_budget("run", 4.0 * double(c.layers * c.heads) * double(nt) * double(nt + ns) +
                          (logits ? 4.0 * double(nt) * double(c.vocab) : 0.0));
  p.target.attentions = Tensor::unfilled({c.layers, c.heads, nt, nt});
  p.cross = Tensor::unfilled({c.layers, c.heads, nt, ns});
  Cache cache(c);
  Extras e;
  e.weights = p.target.attentions.data.data();
  e.memory = &memory;
  e.cross_weights = p.cross.data.data();
  e.options = &o;
  const Matrix x = decoder_->extend(rt, cache, p.target.ids.data(), nt, e);
  p.target.hidden = ops::to_tensor(x);
  p.target.map_layers.resize(static_cast<std::size_t>(c.layers));
  std::iota(p.target.map_layers.begin(), p.target.map_layers.end(), 0);
  for (std::int64_t h = 0; h < c.heads; ++h) p.target.kv_head.push_back(static_cast<std::int32_t>(h));
  if (!logits) return p;
  const Matrix all = decoder_->logits(rt, x);
  if (o.return_logits) p.target.logits = ops::to_tensor(all);
  if (o.top_k) {
    const std::int64_t k = std::min(o.top_k, c.vocab);
    Predictions& out = p.target.predictions;
    out.k = k;
    out.ids.resize(static_cast<std::size_t>(nt * k));
    out.probs.resize(out.ids.size());
    rt.parallel_rows(nt, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i)
        sampling::top_k_probabilities(all.row(i).data(), c.vocab, k, &out.ids[i * k], &out.probs[i * k]);
    });
  }
  return p;
}

}  // namespace attnscope::transformer
