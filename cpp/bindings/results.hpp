// What the model's handle returns to JS: its info, and a run (model-types.ts and raw.ts say the shapes).
#pragma once

#include <emscripten/val.h>

#include "attnscope/model.hpp"

namespace attnscope::bindings {

using emscripten::val;

// ModelInfo as raw.ts's RawModelInfo: ModelInfo's fields in camelCase, with the tokenizer's normalization.
val info_to_js(const Model& model);
// { name, tokens, special, ids: Int32Array, totalTokens, truncated, grid? }
val sequence_to_js(const Sequence& s);
// { name, queries, keys, causal, attentions, mapLayers, kvHead, headSummaries?, rollout?, flow? }; `attentions`
// made by the caller (the "self" set's may have been copied out during the run).
val map_set_to_js(const MapSet& set, val attentions);
// A whole run: { sequences, maps, stacks, embedding?, predictions?, logitLens?, logits?, reusedTokens?, pixels?,
// imageEmbedding?, labelLogits?, labels? }. `first`: the first map set's attentions, as the caller copied them out.
val run_to_js(const Model& model, const RunResult& r, const RunOptions& o, val first);
// { querySources, keySources, terms: Float64Array [query sources × key sources], score, positionBias, softcap };
// each source { kind, stack, layer, head, position } (raw.ts: RawSource).
val score_explanation_to_js(const ScoreExplanation& e);
// { sources, terms: Float64Array, logit, softcap }
val logit_explanation_to_js(const LogitExplanation& e);

}  // namespace attnscope::bindings
