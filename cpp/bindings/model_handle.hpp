// A loaded model: the handle JS holds. JS creates an empty handle, then load() fills it or returns { error }, so a
// failed load never crosses into JS as an exception. Same rules as embind.cpp: inputs checked before they are
// copied, results copied out, every failure returned as { error }.
#pragma once

#include <emscripten/val.h>

#include <memory>
#include <string>
#include <vector>

#include "attnscope/model.hpp"

namespace attnscope {

namespace bindings {
class Engine;

// A speech model's source: { audio: Float32Array } (copied into `samples`, which must outlive its use) or
// { features: { data, shape: [mel bins, frames] } }, checked; `op` names the call in errors.
SequenceInput audio_source(const char* op, const emscripten::val& input, std::vector<float>& samples);
}  // namespace bindings

class ModelHandle {
 public:
  using val = emscripten::val;
  // files: { "config.json": Uint8Array, "model.safetensors": Uint8Array, ... }
  val load(val files);
  val info() const;
  // Layer `layer`'s { wq, wk, wv, wo, bq?, bk?, bv?, bo? }, copied out.
  val attentionWeights(double layer) const;
  // hidden { data, shape: [rows, dModel] } → { data, shape: [rows, vocab] }: the language-model head.
  val logits(const bindings::Engine& engine, val hidden) const;
  // ids (Int32Array) → { utf8: Uint8Array }
  val decode(val ids, bool skip_special) const;
  // ids (Int32Array) → string[]
  val labels(val ids) const;
  // text: already normalized as info().normalization says; target: as an encoder-decoder's target → { tokens, ids }
  val tokenize(const std::string& text, bool target) const;
  // The one run. input: { text } | { ids: Int32Array } | { source, target } (each text or an Int32Array) |
  // { image: { rgba, width, height } } | { pixels: { data, shape: [channels, H, W] } }; opts: RunOptions
  // (model-types.ts) → RawRunResult (raw.ts)
  val run(const bindings::Engine& engine, val input, val opts) const;
  // A score or a logit of the run on `input` with `opts` (as run() takes them) taken apart by its sources.
  // query: { set, layer, head, query, key } → RawScoreExplanation; { position, token } → RawLogitExplanation.
  val explainScore(const bindings::Engine& engine, val input, val opts, val query) const;
  val explainLogit(const bindings::Engine& engine, val input, val opts, val query) const;

  const std::shared_ptr<const Model>& model() const { return model_; }

 private:
  std::shared_ptr<const Model> model_;  // shared with its generations, which outlive no model
};

}  // namespace attnscope
