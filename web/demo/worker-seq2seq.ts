// Encoder-decoder models (BART, Marian, T5) in the worker, beside their runs (kinds/pair.ts): Translate generates a
// target from the source for the target box, greedily, a message per token, or by beam search, the winner at the end.
import type { Message, Reply, Request } from './protocol.js';
import type { Session } from './worker-analysis.js';
import { kindOf } from './kinds/kind.js';

export async function translate(request: Request<'translate'>, s: Session): Promise<Reply<'translate'>> {
  const model = s.model;
  if (!model || kindOf(model.info) !== 'pair') throw new Error('Translate needs an encoder-decoder model such as BART');
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
