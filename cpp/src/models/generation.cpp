// Generating with a decoder: the prompt runs once into the KV cache (or only its tokens past the last run's, whose
// keys and values it takes), then each token adds one row per head. With GenerationMaps::all every token's rows
// of the maps are kept (row i holds i + 1 keys: the maps' lower triangle), so the whole sequence's maps can be
// given at any time; with ::rows only the newest token's. An encoder-decoder's decoder generates the same way, its
// cross-attention reading the encoder's memory: each token's cross-attention rows come with its maps' rows.
#include <algorithm>
#include <numeric>

#include "attnscope/error.hpp"
#include "models/ops.hpp"
#include "models/sampling.hpp"
#include "models/transformer_model.hpp"

namespace attnscope::transformer {

namespace {

class DecoderGeneration final : public Generation {
 public:
  // `memory` and `source`: an encoder-decoder's encoder output, as cross-attention reads it, and its run; null for
  // a language model, whose prompt may extend the model's last run.
  DecoderGeneration(const TransformerModel& model, const Runtime& rt, const std::vector<std::int32_t>& prompt,
                    std::uint64_t seed, GenerationMaps maps, std::shared_ptr<const Memory> memory,
                    std::shared_ptr<const RunResult> source)
      : m_(model),
        stack_(model.last()),
        c_(stack_.config()),
        vocab_(model.spec().head.vocab),
        cache_(c_),
        rng_(seed),
        maps_(maps),
        memory_(std::move(memory)),
        source_(std::move(source)) {
    if (prompt.empty()) throw Error("generate: the prompt has no tokens; give it some text");
    check_room("generate", static_cast<std::int64_t>(prompt.size()));
    for (std::size_t i = 0; i < prompt.size(); ++i) check_id(prompt[i], i);
    // The last run had no memory: its keys and values are another sequence's.
    reused_ = memory_ ? 0 : m_.resume(prompt, cache_, maps_ == GenerationMaps::all ? &rows_ : nullptr);
    ids_.assign(prompt.begin(), prompt.begin() + reused_);
    // Only ::all needs the prompt's rows; the others run it fused. Its logits wait for the first step (or
    // next_logits()): a greedy one takes the token from the screen instead.
    run(rt, {prompt.begin() + reused_, prompt.end()}, maps_ == GenerationMaps::all, false);
  }

  std::int64_t reused_tokens() const override { return reused_; }

  std::int32_t step(const Runtime& rt, const SamplingOptions& sampling) override {
    sampling::check("generate", sampling);
    check_room("generate", 1);
    const bool greedy = sampling.temperature == 0.0f,
               suppressing = sampling.no_repeat_ngram > 0 || !sampling.banned.empty();
    std::int64_t id = -1;
    if (greedy && logits_.empty())  // the screen, with the tokens suppress() would set to −∞ left out
      id = m_.heads().greedy(rt, hidden_, sampling::suppressed(ids_, sampling.banned, sampling.no_repeat_ngram));
    if (id < 0) {
      const std::vector<float>& logits = logits_of(rt);
      if (suppressing) {
        std::vector<float> kept = logits;
        sampling::suppress(kept.data(), vocab_, ids_, sampling);
        id = sampling::draw(kept.data(), vocab_, sampling, rng_);
      } else {
        id = sampling::draw(logits.data(), vocab_, sampling, rng_);
      }
    }
    // A greedy step is most likely followed by another: its logits wait until something asks for them.
    run(rt, {static_cast<std::int32_t>(id)}, maps_ != GenerationMaps::none, !greedy);
    return static_cast<std::int32_t>(id);
  }

  void append(const Runtime& rt, std::int32_t id) override {
    check_room("generate", 1);
    check_id(id, ids_.size());
    run(rt, {id}, maps_ != GenerationMaps::none);
  }

  const std::vector<float>& next_logits(const Runtime& rt) const override { return logits_of(rt); }

  std::unique_ptr<Generation> fork() const override { return std::make_unique<DecoderGeneration>(*this); }

  std::vector<float> next_probabilities(const Runtime& rt) const override {
    std::vector<float> p = logits_of(rt);
    sampling::softmax(p.data(), vocab_);
    return p;
  }

  double next_log_sum_exp(const Runtime& rt, std::int64_t end,
                          const std::vector<std::int32_t>& excluded) const override {
    if (end < 0 || end > vocab_)
      throw Error("generate: the end of a log-sum-exp is " + std::to_string(end) + "; it must be within 0.." +
                  std::to_string(vocab_));
    return sampling::log_sum_exp(logits_of(rt).data(), end, excluded);
  }

  const std::vector<std::int32_t>& ids() const override { return ids_; }

  Tensor last_rows() const override {
    const std::int64_t n = static_cast<std::int64_t>(ids_.size());
    if (maps_ == GenerationMaps::none || static_cast<std::int64_t>(last_.size()) != c_.layers * c_.heads * n)
      return Tensor();  // none, or the last token was the prompt's, run fused
    Tensor t({c_.layers, c_.heads, n});
    t.data.assign(last_.begin(), last_.end());
    return t;
  }

  const RunResult* source() const override { return source_.get(); }

  Tensor last_cross_rows() const override {
    if (cross_last_.empty()) return Tensor();
    Tensor t({c_.layers, c_.heads, memory_->length});
    t.data.assign(cross_last_.begin(), cross_last_.end());
    return t;
  }

  Tensor cross_attentions() const override {
    if (maps_ != GenerationMaps::all || !memory_) return Tensor();
    const std::int64_t n = static_cast<std::int64_t>(ids_.size()), m = memory_->length, maps = c_.layers * c_.heads;
    Tensor t({c_.layers, c_.heads, n, m});
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < maps; ++k)
        std::copy_n(cross_rows_[i].begin() + k * m, m, t.data.begin() + (k * n + i) * m);
    return t;
  }

  Tensor attentions() const override {
    if (maps_ != GenerationMaps::all) return Tensor();
    const std::int64_t n = static_cast<std::int64_t>(ids_.size()), maps = c_.layers * c_.heads;
    Tensor t({c_.layers, c_.heads, n, n});
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t m = 0; m < maps; ++m)
        std::copy_n(rows_[i].begin() + m * (i + 1), i + 1, t.data.begin() + (m * n + i) * n);
    return t;
  }

 private:
  void check_room(const char* op, std::int64_t more) const {
    const std::int64_t n = static_cast<std::int64_t>(ids_.size());
    if (n + more > c_.max_tokens)
      throw Error(std::string(op) + ": the sequence would have " + std::to_string(n + more) +
                  " tokens, beyond the model's " + std::to_string(c_.max_tokens));
  }

  void check_id(std::int32_t id, std::size_t at) const {
    if (id < 0 || id >= vocab_)
      throw Error("generate: id " + std::to_string(id) + " at position " + std::to_string(at) +
                  " is outside the vocabulary [0, " + std::to_string(vocab_) + ")");
  }

  // The logits after the last token [vocab], computed now if the last run left them for later.
  const std::vector<float>& logits_of(const Runtime& rt) const {
    if (logits_.empty()) {
      const Matrix logits = m_.heads().logits(rt, hidden_);
      logits_.assign(logits.data(), logits.data() + vocab_);
    }
    return logits_;
  }

  // Runs `ids` after those in the cache; keeps the last final-normed hidden row, and its logits unless `logits` is
  // false (logits_of() computes them when asked), and, with `with_maps`, the last token's rows of every map (and
  // every token's, with GenerationMaps::all).
  void run(const Runtime& rt, const std::vector<std::int32_t>& ids, bool with_maps, bool logits = true) {
    const std::int64_t n = static_cast<std::int64_t>(ids.size()), p0 = cache_.length, total = p0 + n;
    const std::int64_t maps = with_maps ? c_.layers * c_.heads : 0;
    check_budget("generate", 4.0 * double(maps) * double(n) * double(total));
    std::vector<float> weights(static_cast<std::size_t>(maps * n * total));  // [layers, heads, n, total]
    const std::int64_t m = memory_ ? memory_->length : 0;
    std::vector<float> cross(static_cast<std::size_t>(maps * n * m));  // [layers, heads, n, m]
    Pass pass;
    if (with_maps) pass.maps = Pass::every_layer(weights.data(), c_.layers, c_.heads * n * total);
    pass.memory = memory_.get();
    pass.stack = memory_ ? 1 : 0;
    if (with_maps && memory_) pass.cross_maps = Pass::every_layer(cross.data(), c_.layers, c_.heads * n * m);
    const Matrix hidden = stack_.run(rt, cache_, m_.tokens().embed(ids.data(), n, p0), pass);
    last_.clear();
    cross_last_.clear();
    for (std::int64_t k = 0; k < maps && m > 0; ++k)  // the last token's row of each cross map
      cross_last_.insert(cross_last_.end(), cross.begin() + (k * n + n - 1) * m, cross.begin() + (k * n + n) * m);
    for (std::int64_t i = 0; i < n && maps > 0 && m > 0 && maps_ == GenerationMaps::all; ++i) {
      std::vector<float> row(static_cast<std::size_t>(maps * m));  // token i's row of every cross map
      for (std::int64_t k = 0; k < maps; ++k) std::copy_n(cross.begin() + (k * n + i) * m, m, row.begin() + k * m);
      cross_rows_.push_back(std::move(row));
    }
    for (std::int64_t i = 0; i < n && with_maps; ++i) {  // row p0 + i sees keys 0 .. p0 + i
      std::vector<float> row(static_cast<std::size_t>(maps * (p0 + i + 1)));
      for (std::int64_t m = 0; m < maps; ++m)
        std::copy_n(weights.begin() + (m * n + i) * total, p0 + i + 1, row.begin() + m * (p0 + i + 1));
      if (maps_ == GenerationMaps::all) rows_.push_back(row);
      if (i + 1 == n) last_ = std::move(row);
    }
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    hidden_ = hidden.bottomRows(1);
    logits_.clear();
    if (logits) logits_of(rt);
  }

  const TransformerModel& m_;
  const Stack& stack_;  // the last: the decoder
  const Config& c_;
  std::int64_t vocab_;
  Cache cache_;
  sampling::Rng rng_;
  GenerationMaps maps_;
  std::shared_ptr<const Memory> memory_;     // what cross-attention reads, or null
  std::shared_ptr<const RunResult> source_;  // the encoder's run, or null (shared by the beams a search forks)
  std::int64_t reused_ = 0;
  std::vector<std::int32_t> ids_;
  std::vector<std::vector<float>> rows_;        // per token i: [layers, heads, i + 1] (GenerationMaps::all)
  std::vector<float> last_;                     // the newest token's, when it was run with maps
  std::vector<float> cross_last_;               // its cross-attention rows [layers, heads, m], with memory
  std::vector<std::vector<float>> cross_rows_;  // per token: [layers, heads, m] (GenerationMaps::all, with memory)
  Matrix hidden_;                               // the last token's final-normed hidden row [1, d]
  mutable std::vector<float> logits_;           // its logits [vocab], or empty until logits_of() computes them
};

}  // namespace

std::pair<std::shared_ptr<const RunResult>, std::shared_ptr<const Memory>> TransformerModel::encode(
    const Runtime& rt, const SequenceInput& source, const std::vector<std::int64_t>& map_layers) const {
  const Stack& encoder = stacks_[0];
  const Config& c = encoder.config();
  Reading reading = read(source, 0);
  auto run = std::make_shared<RunResult>();
  const std::int64_t n = static_cast<std::int64_t>(reading.sequence.tokens.size());
  Pass pass;  // the maps of the layers asked for; the others' attention runs fused
  if (!map_layers.empty()) {
    const std::int64_t kept = static_cast<std::int64_t>(map_layers.size());
    check_budget("generate", 4.0 * double(kept * c.heads) * double(n) * double(n));
    MapSet& set = run->maps.emplace_back();
    set.name = "encoder";
    set.causal = c.causal;
    set.attentions = Tensor::unfilled({kept, c.heads, n, n});
    set.map_layers = map_layers;
    pass.maps.assign(static_cast<std::size_t>(c.layers), nullptr);
    for (std::int64_t i = 0; i < kept; ++i)
      pass.maps[static_cast<std::size_t>(map_layers[static_cast<std::size_t>(i)])] =
          set.attentions.data.data() + i * c.heads * n * n;
  }
  Cache cache(c);
  const Matrix encoded = encoder.run(rt, cache, front_->embed(rt, reading, 0), pass);
  run->sequences.push_back(std::move(reading.sequence));
  run->features = std::move(reading.features);
  StackRun& s = run->stacks.emplace_back();
  s.name = "encoder";
  s.hidden = ops::to_tensor(encoded);
  return {run, std::make_shared<const Memory>(stacks_[1].memory(rt, encoded))};
}

std::unique_ptr<Generation> TransformerModel::generate(
    const Runtime& rt, const Input& input, std::uint64_t seed, GenerationMaps maps,
    const std::optional<std::vector<std::int64_t>>& encoder_maps) const {
  const std::string name = info_.name + " (" + info_.architecture + ")";
  if (!spec_.head.language_model)
    throw Error("generate: " + name +
                (spec_.encoder_decoder()
                     ? " has no LM head to generate with, as BartForConditionalGeneration has"
                     : " is not a language model; generate needs a decoder such as GPT-2, Llama, Qwen or Gemma"));
  if (spec_.encoder_decoder()) {
    if (!input.target)
      throw Error("generate: " + name + " is an encoder-decoder model: it generates a target from a source");
    if (input.target->form != SequenceInput::Form::ids)
      throw Error("generate: the target's start tokens are ids (the decoder's start token, then any forced)");
    const std::int64_t layers = stacks_[0].config().layers;
    std::vector<std::int64_t> kept;
    if (maps == GenerationMaps::all && encoder_maps) {
      kept = *encoder_maps;
    } else if (maps == GenerationMaps::all) {
      kept.resize(static_cast<std::size_t>(layers));
      std::iota(kept.begin(), kept.end(), 0);
    }
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (kept[i] < 0 || kept[i] >= layers || std::find(kept.begin(), kept.begin() + i, kept[i]) != kept.begin() + i)
        throw Error("generate: encoderMapLayers[" + std::to_string(i) + "] = " + std::to_string(kept[i]) +
                    (kept[i] < 0 || kept[i] >= layers
                         ? " is outside the encoder's " + std::to_string(layers) + " layers (counting from 0)"
                         : " names a layer twice"));
    auto [source, memory] = encode(rt, input.sequence, kept);
    return std::make_unique<DecoderGeneration>(*this, rt, input.target->ids, seed, maps, std::move(memory),
                                               std::move(source));
  }
  if (input.target)
    throw Error("generate: " + name +
                " is not an encoder-decoder model; a source to generate from needs one such as BART");
  const SequenceInput& prompt = input.sequence;
  if (prompt.form == SequenceInput::Form::text) {
    if (!tokenizer_)
      throw Error("generate: this model's files hold no tokenizer AttnScope reads; give it token ids instead");
    return std::make_unique<DecoderGeneration>(*this, rt, tokenizer_->encode(prompt.text).ids, seed, maps, nullptr,
                                               nullptr);
  }
  return std::make_unique<DecoderGeneration>(*this, rt, prompt.ids, seed, maps, nullptr, nullptr);
}

}  // namespace attnscope::transformer
