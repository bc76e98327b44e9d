// Computes attention maps off the main thread: one engine and one model for the
// worker's life. Replies carry the request id; the page shows only the newest.
import { createEngine, type EngineInfo, type ModelInfo } from 'attnscope';

import { embed, tokenize } from './embed.js';

export type Mode = 'model' | 'parameter-free';
export interface Request {
  id: number;
  text: string;
  mode: Mode;
}
export type Reply =
  | { id: number; kind: 'ready'; engine: EngineInfo; model: ModelInfo; isolated: boolean }
  | {
      id: number;
      kind: 'result';
      mode: Mode;
      tokens: string[];
      attentions: Float32Array; // [layers, heads, n, n]
      shape: [number, number, number, number];
      ms: number;
      truncated: boolean;
      totalTokens: number;
    }
  | { id: number; kind: 'error'; message: string };

const DIM = 64;
// Rows have norm √DIM, so a token's score against itself is SCALE·DIM = 4: enough
// to lead, not enough to drown the tokens that share its spelling.
const SCALE = 4 / DIM;

const ready = (async () => {
  const engine = await createEngine();
  const model = await engine.loadModel('default');
  return { engine, model };
})();

ready.then(
  ({ engine, model }) =>
    postMessage({
      id: 0,
      kind: 'ready',
      engine: engine.info(),
      model: model.info,
      isolated: self.crossOriginIsolated,
    } satisfies Reply),
  (err: unknown) => postMessage({ id: 0, kind: 'error', message: String(err) } satisfies Reply),
);

self.onmessage = async (event: MessageEvent<Request>) => {
  const { id, text, mode } = event.data;
  try {
    const { engine, model } = await ready;
    let reply: Reply;
    const start = performance.now();
    if (mode === 'model') {
      const r = model.run(text);
      const ms = performance.now() - start;
      reply = {
        id,
        kind: 'result',
        mode,
        tokens: r.tokens,
        attentions: r.attentions,
        shape: r.shape,
        ms,
        truncated: r.truncated,
        totalTokens: r.totalTokens,
      };
    } else {
      const tokens = tokenize(text);
      if (tokens.length === 0) throw new Error('the text has no tokens; give it some text');
      const x = { data: embed(tokens, DIM), shape: [tokens.length, DIM] };
      const { weights } = engine.selfAttention(x, { scale: SCALE });
      const ms = performance.now() - start;
      const n = tokens.length;
      reply = {
        id,
        kind: 'result',
        mode,
        tokens,
        attentions: weights.data,
        shape: [1, 1, n, n],
        ms,
        truncated: false,
        totalTokens: n,
      };
    }
    postMessage(reply, { transfer: [reply.attentions.buffer] });
  } catch (err) {
    postMessage({ id, kind: 'error', message: err instanceof Error ? err.message : String(err) } satisfies Reply);
  }
};
