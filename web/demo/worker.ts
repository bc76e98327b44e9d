// Computes attention maps off the main thread. One engine for the worker's life.
import { createEngine, type Engine } from 'attnscope';

import { embed, tokenize } from './embed.js';

export interface Request {
  id: number;
  text: string;
}
export type Reply =
  | { id: number; kind: 'result'; tokens: string[]; weights: Float32Array; n: number; ms: number }
  | { id: number; kind: 'ready'; info: ReturnType<Engine['info']>; isolated: boolean }
  | { id: number; kind: 'error'; message: string };

const DIM = 64;
// Rows have norm √DIM, so a token's score against itself is SCALE·DIM = 4: enough
// to lead, not enough to drown the tokens that share its spelling.
const SCALE = 4 / DIM;
const enginePromise = createEngine();

enginePromise.then(
  (engine) =>
    postMessage({ id: 0, kind: 'ready', info: engine.info(), isolated: self.crossOriginIsolated } satisfies Reply),
  (err: unknown) => postMessage({ id: 0, kind: 'error', message: String(err) } satisfies Reply),
);

self.onmessage = async (event: MessageEvent<Request>) => {
  const { id, text } = event.data;
  try {
    const engine = await enginePromise;
    const tokens = tokenize(text);
    if (tokens.length === 0) {
      postMessage({ id, kind: 'result', tokens, weights: new Float32Array(), n: 0, ms: 0 } satisfies Reply);
      return;
    }
    const x = { data: embed(tokens, DIM), shape: [tokens.length, DIM] };
    const start = performance.now();
    const { weights } = engine.selfAttention(x, { scale: SCALE });
    const ms = performance.now() - start;
    const reply: Reply = { id, kind: 'result', tokens, weights: weights.data, n: tokens.length, ms };
    postMessage(reply, { transfer: [weights.data.buffer] });
  } catch (err) {
    postMessage({ id, kind: 'error', message: err instanceof Error ? err.message : String(err) } satisfies Reply);
  }
};
