// A generation in progress, the handle JS holds: a language model's, or an encoder-decoder's target (greedily or
// sampled, token by token, or by beam search). Same rules as embind.cpp: inputs checked before they are copied,
// results copied out, every failure returned as { error }.
#include <emscripten/bind.h>

#include <cmath>

#include "convert.hpp"
#include "engine.hpp"
#include "model_handle.hpp"
#include "results.hpp"
#include "tokens.hpp"

namespace attnscope {
namespace {

using namespace bindings;

class GenerationHandle {
 public:
  // ids: the prompt (Int32Array); seed: a whole number below 2^53; maps: what to keep of the attention maps,
  // "none", "rows" (each new token's) or "all"
  val start(const ModelHandle& model, const Engine& engine, val ids, double seed, const std::string& maps) {
    return guard("generate", [&] {
      const GenerationMaps kept = begin(model, seed, maps);
      generation_ =
          model_->generate(engine.runtime(), Input::ids(ids_arg(ids)), static_cast<std::uint64_t>(seed), kept);
      return val::object();
    });
  }

  // An encoder-decoder's generation: source: an Int32Array of ids, or a speech model's { audio } or { features }
  // (the encoder runs once, here), target: the decoder's first tokens (Int32Array), seed and maps as start()'s;
  // encoderLayers: undefined, or the encoder layers whose maps "all" keeps
  val startPair(const ModelHandle& model, const Engine& engine, val source, val target, double seed,
                const std::string& maps, val encoderLayers) {
    return guard("generate", [&] {
      const GenerationMaps kept = begin(model, seed, maps);
      std::vector<float> samples;  // a voice's, while the encoder reads them
      SequenceInput from = source_arg(source, samples);
      std::optional<std::vector<std::int64_t>> layers;
      if (!encoderLayers.isUndefined()) layers = integers_arg("generate", "encoderMapLayers", encoderLayers, -1e9, 1e9);
      generation_ =
          model_->generate(engine.runtime(), Input::pair(std::move(from), SequenceInput::of_ids(ids_arg(target))),
                           static_cast<std::uint64_t>(seed), kept, layers);
      return val::object();
    });
  }

  // The logits after the last token → Float32Array [vocab]
  val logits(const Engine& engine) const {
    return guard("generate", [&] {
      if (!generation_) throw Error("generate: nothing is being generated");
      const std::vector<float>& l = generation_->next_logits(engine.runtime());
      return to_js(l.data(), {static_cast<std::int64_t>(l.size())})["data"];
    });
  }

  // log Σ exp of the logits after the last token over the ids below `end` that `banned` (Int32Array) does not
  // name → number (−Infinity where none is left)
  val logSumExp(const Engine& engine, val banned, double end) const {
    return guard("generate", [&] {
      if (!generation_) throw Error("generate: nothing is being generated");
      if (!(end >= 0 && end <= 1e12)) throw Error("generate: logSumExp's end must be a count of tokens");
      return val(generation_->next_log_sum_exp(engine.runtime(), static_cast<std::int64_t>(end), ids_arg(banned)));
    });
  }

  // An encoder-decoder's beam search (no maps: the winner's come from a teacher-forced run): source as startPair's,
  // target: its start tokens (the decoder's first, then any forced), options { beams, lengthPenalty,
  // noRepeatNgramSize, earlyStopping, maxLength, banned: Int32Array, bannedFirst?: Int32Array,
  // filter?: (ids: Int32Array, logits: Float32Array) => Int32Array }: filter's arrays are views of the heap, read
  // during the call only; it returns the tokens that beam may not take next, and must not throw.
  val startBeams(const ModelHandle& model, const Engine& engine, val source, val target, val options) {
    return guard("generate", [&] {
      begin(model, 0, "none");
      std::vector<float> samples;  // a voice's, while the encoder reads them
      SequenceInput from = source_arg(source, samples);
      const std::vector<std::int32_t> start = ids_arg(target);
      if (start.empty()) throw Error("generate: the target has no start token");
      BeamOptions o;
      o.beams = whole_number("generate", "beams", options["beams"], 0, 1e9);
      o.length_penalty = static_cast<float>(options["lengthPenalty"].as<double>());
      o.no_repeat_ngram = whole_number("generate", "noRepeatNgramSize", options["noRepeatNgramSize"], 0, 1e9);
      o.early_stopping = options["earlyStopping"].as<bool>();
      o.max_length = whole_number("generate", "maxLength", options["maxLength"], 0, 1e9);
      o.banned = ids_arg(options["banned"]);
      if (!options["bannedFirst"].isUndefined()) o.banned_first = ids_arg(options["bannedFirst"]);
      if (!options["filter"].isUndefined()) {
        const val filter = options["filter"];
        o.filter = [filter](const std::vector<std::int32_t>& ids, const std::vector<float>& logits) {
          return ids_arg(filter(val(emscripten::typed_memory_view(ids.size(), ids.data())),
                                val(emscripten::typed_memory_view(logits.size(), logits.data()))));
        };
      }
      o.eos = model_->info().eos;
      generation_.reset();
      beams_.reset();
      auto g = model_->generate(engine.runtime(), Input::pair(std::move(from), SequenceInput::of_ids({start[0]})), 0,
                                GenerationMaps::none);
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
  // sequence (as a run's), features?: a speech model's log-mel features, encoder?: its map set (the layers kept),
  // cross?: { data, shape: [layers, heads, n, source tokens] } }
  val result() const {
    return guard("generate", [&] {
      if (!generation_) throw Error("generate: nothing is being generated");
      val out = val::object();
      val tokens = val::array(), special = val::array();
      const Tokenizer* t = model_->tokenizer();
      for (std::int32_t id : generation_->ids()) {
        tokens.call<void>("push", token_of(t, id));
        special.call<void>("push", t && t->is_special(id));
      }
      out.set("ids", int32_array(generation_->ids()));
      out.set("reusedTokens", static_cast<double>(generation_->reused_tokens()));
      out.set("tokens", tokens);
      out.set("special", special);
      const Tensor maps = generation_->attentions();
      if (!maps.empty()) out.set("attentions", weights_to_js(maps, model_->info().causal));
      // Encoder-decoders: the source as the encoder ran it, its maps, and the cross maps of the whole target.
      if (const RunResult* source = generation_->source()) {
        out.set("source", sequence_to_js(source->sequences.front()));  // "source", or a voice's "audio"
        if (!source->features.empty()) out.set("features", to_js(source->features));
        if (!source->maps.empty()) {
          const MapSet& encoder = source->map("encoder");
          out.set("encoder", map_set_to_js(encoder, weights_to_js(encoder.attentions, false)));
        }
      }
      const Tensor cross = generation_->cross_attentions();
      if (!cross.empty()) out.set("cross", to_js(cross));
      return out;
    });
  }

 private:
  // An encoder-decoder's source: an Int32Array of ids, or a speech model's { audio } (copied into `samples`) or
  // { features }.
  static SequenceInput source_arg(const val& source, std::vector<float>& samples) {
    if (source.instanceof (val::global("Int32Array"))) return SequenceInput::of_ids(ids_arg(source));
    return audio_source("generate", source, samples);
  }

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
    out.set("token", token_of(model_->tokenizer(), id));
    const Tensor rows = generation_->last_rows();
    if (!rows.empty()) out.set("rows", to_js(rows, into)["data"]);
    const Tensor cross = generation_->last_cross_rows();
    if (!cross.empty()) out.set("crossRows", to_js(cross)["data"]);
    return out;
  }

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Generation> generation_;
  std::unique_ptr<BeamSearch> beams_;
};

}  // namespace
}  // namespace attnscope

EMSCRIPTEN_BINDINGS(attnscope_generation) {
  using attnscope::GenerationHandle;
  emscripten::class_<GenerationHandle>("GenerationHandle")
      .constructor<>()
      .function("start", &GenerationHandle::start)
      .function("startPair", &GenerationHandle::startPair)
      .function("startBeams", &GenerationHandle::startBeams)
      .function("logits", &GenerationHandle::logits)
      .function("logSumExp", &GenerationHandle::logSumExp)
      .function("beamStep", &GenerationHandle::beamStep)
      .function("append", &GenerationHandle::append)
      .function("step", &GenerationHandle::step)
      .function("result", &GenerationHandle::result);
}
