// Encoder-decoder models (BART) in the worker: the page's text is the source and its second box the target, which
// runs teacher-forced. A run returns the set of maps the page shows (the encoder's, the decoder's or the
// cross-attention's), and Translate generates a target from the source for the box: greedily, a message per token, or
// by beam search, the winner at the end.
import type { Message, Reply, Request, RunResult } from './protocol.js';
import type { Kept, Session } from './worker-analysis.js';
import { labelsOf } from './worker-llm.js';

export function runPair(request: Request<'run'>, s: Session): { kept: Kept; extra: Partial<RunResult> } {
  const model = s.model!;
  const stack = request.stack ?? 'cross';
  const r = model.run({ source: request.text, target: request.contextIds ?? request.context ?? '' });
  const set = r.maps[stack];
  const source = stack === 'encoder';
  const kept: Kept = {
    // The cross-attention's maps are another sequence's keys: the page treats them as across two texts.
    mode: stack === 'cross' ? 'cross' : 'model',
    tokens: source ? r.sourceTokens : r.targetTokens,
    special: source ? r.sourceSpecial : r.targetSpecial,
    ids: source ? r.sourceIds : r.targetIds,
    attentions: set.attentions,
    shape: set.shape,
    mapLayers: set.layers,
    layers: set.shape[0],
    causal: set.causal,
    truncated: r.truncated,
    totalTokens: source ? r.totalSourceTokens : r.targetTokens.length,
  };
  return { kept, extra: stack === 'cross' ? { keyTokens: labelsOf(model, r.sourceIds) } : {} };
}

export async function translate(request: Request<'translate'>, s: Session): Promise<Reply<'translate'>> {
  const model = s.model;
  if (!model?.info.encoderDecoder) throw new Error('Translate needs an encoder-decoder model such as BART');
  const maxNewTokens = Math.min(request.maxNewTokens, model.info.maxTokens - 2);
  const { id } = request;
  // One generation at a time, LLM's or this: Stop aborts whichever runs.
  s.generation?.abort();
  const controller = new AbortController();
  s.generation = controller;
  const ids = [model.info.decoderStartTokenId!];
  try {
    const g = await model.generate(
      { source: request.text },
      {
        maxNewTokens,
        // 1: greedy, streamed; more: the search's winner, whose tokens are final only at its end (no onToken call).
        beams: request.beams,
        temperature: 0,
        attentions: false,
        signal: controller.signal,
        // A message per token, not batched as a language model's are: a target is short, and carries no map rows.
        onToken: (t) => {
          ids.push(t.id);
          postMessage({ id, kind: 'target-token', text: t.text, ids } satisfies Message);
        },
      },
    );
    return { id, kind: 'translate', text: g.text, ids: Array.from(g.targetIds), stopReason: g.stopReason };
  } finally {
    if (s.generation === controller) s.generation = null;
  }
}
