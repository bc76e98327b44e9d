// A source and a target through an encoder and a decoder (BART, Marian, T5): the text box is the source, the second
// box the target, which runs teacher-forced. One run returns the three map sets (the encoder's, the decoder's and
// the cross-attention's), and the page shows the one its tabs choose: another tab is shown without running the pair
// again. Rollout and flow are asked for the set shown.
import { labelsOf } from '../worker-llm.js';
import { acrossOptions, acrossReply, notAcross, type Kept } from '../worker-analysis.js';
import type { PairSet } from '../protocol.js';
import type { MadeSet, PageKind, WorkerKind } from './kind.js';

const SETS: readonly PairSet[] = ['encoder', 'decoder', 'cross'];

export const pairPage: PageKind = {
  id: 'pair',
  input: (s) => [s.text, s.contextIds ?? s.context],
  ask: (s) => ({ text: s.text, context: s.context, set: s.pairSet, ...(s.contextIds && { contextIds: s.contextIds }) }),
  shown(reply, s) {
    const set = reply.sets?.[s.pairSet];
    return set ? { ...set, sets: reply.sets } : reply;
  },
  opened: () => ({}),
};

export const pairWorker: WorkerKind = {
  id: 'pair',
  run(request, s) {
    const model = s.model!;
    const { info } = model;
    const target = request.contextIds ?? request.context ?? '';
    // Rollout of both self-attention sets (the cross-attention set has none), so that the tabs need no run; flow, a
    // max-flow per pair of tokens, of the set shown only.
    const asked = request.across;
    const shown = request.set ?? 'cross';
    const n =
      shown === 'encoder'
        ? Math.min(model.tokenize(request.text).ids.length, info.encoderMaxTokens ?? info.maxTokens)
        : typeof target === 'string'
          ? model.tokenize(target, { target: true }).ids.length + 1
          : target.length;
    const layers = shown === 'encoder' ? info.encoderLayers! : info.layers;
    const across =
      asked?.view === 'rollout'
        ? { rollout: { residual: asked.residual } }
        : shown === 'cross'
          ? {}
          : acrossOptions(asked, n, layers, shown);
    const r = model.run({ source: request.text, target }, { headSummaries: true, ...across });
    const sources = labelsOf(model, r.sourceIds);
    return SETS.map((set): MadeSet => {
      const maps = r.maps[set];
      const source = set === 'encoder';
      const kept: Kept = {
        mode: 'model',
        tokens: source ? r.sourceTokens : r.targetTokens,
        special: source ? r.sourceSpecial : r.targetSpecial,
        ids: source ? r.sourceIds : r.targetIds,
        attentions: maps.attentions,
        shape: maps.shape,
        mapLayers: maps.mapLayers,
        layers: maps.shape[0],
        causal: maps.causal,
        truncated: r.truncated,
        totalTokens: source ? r.totalSourceTokens : r.targetTokens.length,
        headSummaries: maps.headSummaries,
        result: r,
      };
      const why = set === 'cross' ? notAcross(asked, maps.shape) : acrossReply(asked, maps, request.id);
      return { set, kept, extra: { ...(set === 'cross' && { keyTokens: sources }), ...why } };
    });
  },
};
