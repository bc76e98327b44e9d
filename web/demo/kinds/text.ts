// Text through one stack: the encoders (BERT, DistilBERT, USE-lite) and the language models (GPT-2, Llama, Qwen,
// Gemma, ...). The run reads the text box (or the ids a generation or a chosen candidate stands for). A language
// model's run reuses the previous run's prefix and, past what every layer's maps take, returns the maps of the layer
// the page shows; it opens on the next-token pane.
import type { ModelInfo } from 'attnscope';

import { tokenLimit } from '../worker-llm.js';
import { acrossOptions, acrossReply, oneLayerOnly, type Kept } from '../worker-analysis.js';
import type { PageKind, WorkerKind } from './kind.js';

export const textPage: PageKind = {
  id: 'text',
  input: (s) => s.ids ?? s.text,
  ask: (s) => ({ text: s.text, ...(s.ids && { ids: s.ids }) }),
  shown: (reply) => reply,
  opened(model: ModelInfo, before: ModelInfo | null, linked) {
    // A language model that follows one of another kind opens on its next-token pane, unless a link names its own.
    const opens = model.languageModel && !before?.languageModel && !linked.tools;
    return { ...(opens && { tools: 'next' as const }) };
  },
};

export const textWorker: WorkerKind = {
  id: 'text',
  run(request, s) {
    const model = s.model!;
    const { info } = model;
    if (info.languageModel) {
      // The text's tokens (or the ids asked for), cut to the page's limit.
      const all = request.ids ? Int32Array.from(request.ids) : model.tokenize(request.text).ids;
      const limit = tokenLimit(info, s.engine.info().maxCallBytes);
      const ids = all.subarray(0, limit.tokens);
      if (!ids.length) throw new Error('the text has no tokens; give it some text');
      const layer = Math.max(0, Math.min(request.layer, info.layers - 1));
      const one = ids.length > limit.everyLayer; // past what every layer's maps take: the shown layer's
      const across = one ? {} : acrossOptions(request.across, ids.length, info.layers);
      const result = model.run(ids, {
        logitLens: request.lens,
        reusePrefix: true,
        mapLayers: one ? [layer] : undefined,
        headSummaries: true,
        ...across,
      });
      const truncated = all.length > ids.length;
      const kept: Kept = { mode: 'model', ...result, result, causal: true, truncated, totalTokens: all.length };
      const text = request.ids ? model.decode(ids, { skipSpecialTokens: true }) : undefined;
      const shown =
        one && request.across
          ? oneLayerOnly(request.across, ids.length)
          : acrossReply(request.across, result.maps.self!, request.id);
      return [{ set: 'self', kept, extra: { text, limit: truncated ? limit : undefined, ...shown } }];
    }
    const n = Math.min(info.maxTokens, request.ids ? request.ids.length : model.tokenize(request.text).ids.length);
    const result = model.run(request.ids ?? request.text, {
      returnProjections: true,
      headSummaries: true,
      ...acrossOptions(request.across, n, info.layers),
    });
    const kept: Kept = { mode: 'model', ...result, result, causal: info.causal };
    return [{ set: 'self', kept, extra: acrossReply(request.across, result.maps.self!, request.id) }];
  },
};
