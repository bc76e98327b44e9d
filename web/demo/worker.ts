// Computes attention maps off the main thread: one engine for the worker's life,
// one model at a time. Replies carry the request id; the page shows only the newest.
import { createEngine, type Engine, type EngineInfo, type Model, type ModelInfo, type Tensor } from 'attnscope';

import { embed, tokenize } from './embed.js';

export type Mode = 'model' | 'parameter-free';
export type Source =
  { kind: 'default' } | { kind: 'hub'; id: string } | { kind: 'files'; files: Record<string, ArrayBuffer> };
export type Request =
  | { id: number; kind: 'run'; text: string; mode: Mode; projections: boolean }
  | { id: number; kind: 'cost' }
  | { id: number; kind: 'weights'; layer: number }
  | { id: number; kind: 'load'; source: Source };
export type Reply =
  | { id: number; kind: 'ready'; engine: EngineInfo; model: ModelInfo; isolated: boolean }
  | { id: number; kind: 'progress'; file: string; loaded: number; total?: number }
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
      q?: Tensor[]; // per layer [heads, n, d_k], when projections were asked for
      k?: Tensor[];
      v?: Tensor[];
      inputs?: Tensor[]; // per layer X [n, d_in]
    }
  | { id: number; kind: 'weights'; layer: number; wq: Tensor; wk: Tensor; wv: Tensor; wo: Tensor }
  | { id: number; kind: 'cost'; heads: number; dk: number; points: Array<{ n: number; ms: number }> }
  | { id: number; kind: 'error'; message: string; during: Request['kind'] };

const DIM = 64;
// Rows have norm √DIM, so a token's score against itself is SCALE·DIM = 4: enough
// to lead, not enough to drown the tokens that share its spelling.
const SCALE = 4 / DIM;

let engine: Engine;
let model: Model | null = null;

async function load(id: number, source: Source): Promise<void> {
  const next =
    source.kind === 'default'
      ? await engine.loadModel('default')
      : source.kind === 'hub'
        ? await engine.loadModel({
            hub: source.id,
            onProgress: (p) => postMessage({ id, kind: 'progress', ...p } satisfies Reply),
          })
        : await engine.loadModel({ files: source.files });
  model?.dispose(); // only once the new one is ready: a failed load leaves the old model working
  model = next;
  postMessage({
    id,
    kind: 'ready',
    engine: engine.info(),
    model: next.info,
    isolated: self.crossOriginIsolated,
  } satisfies Reply);
}

function run(id: number, text: string, mode: Mode, projections: boolean): Extract<Reply, { kind: 'result' }> {
  const start = performance.now();
  if (mode === 'model') {
    if (!model) throw new Error('no model is loaded yet');
    const { tokens, attentions, shape, truncated, totalTokens, q, k, v, inputs } = model.run(text, {
      returnProjections: projections,
    });
    return {
      id,
      kind: 'result',
      mode,
      tokens,
      attentions,
      shape,
      ms: performance.now() - start,
      truncated,
      totalTokens,
      q,
      k,
      v,
      inputs,
    };
  }
  const tokens = tokenize(text);
  if (tokens.length === 0) throw new Error('the text has no tokens; give it some text');
  const n = tokens.length;
  const x: Tensor = { data: embed(tokens, DIM), shape: [n, DIM] };
  const { weights } = engine.selfAttention(x, { scale: SCALE });
  // The parameter-free form's q, k and v are all X itself.
  const xs: Tensor = { data: x.data, shape: [1, n, DIM] };
  const ms = performance.now() - start;
  return {
    id,
    kind: 'result',
    mode,
    tokens,
    attentions: weights.data,
    shape: [1, 1, n, n],
    ms,
    truncated: false,
    totalTokens: n,
    q: [xs],
    k: [xs],
    v: [xs],
  };
}

const started = (async () => {
  engine = await createEngine();
  await load(0, { kind: 'default' });
})();
started.catch((err: unknown) =>
  postMessage({ id: 0, kind: 'error', message: String(err), during: 'load' } satisfies Reply),
);

/** Median time of one attention call, with every head's weights, for n = 16 … 1024 at the model's head shape. */
function cost(id: number): Reply {
  const heads = model?.info.heads ?? 1;
  const dk = model ? model.info.dModel / heads : DIM;
  const points: Array<{ n: number; ms: number }> = [];
  for (const n of [16, 32, 64, 128, 256, 512, 1024]) {
    const x: Tensor = { data: new Float32Array(heads * n * dk).map(() => Math.random() - 0.5), shape: [heads, n, dk] };
    const times: number[] = [];
    for (let rep = 0; rep < 7; rep++) {
      const start = performance.now();
      engine.attention(x, x, x);
      times.push(performance.now() - start);
    }
    points.push({ n, ms: times.sort((a, b) => a - b)[3] });
  }
  return { id, kind: 'cost', heads, dk, points };
}

self.onmessage = async (event: MessageEvent<Request>) => {
  const request = event.data;
  try {
    await started;
    if (request.kind === 'load') {
      await load(request.id, request.source);
    } else if (request.kind === 'cost') {
      postMessage(cost(request.id));
    } else if (request.kind === 'weights') {
      const { wq, wk, wv, wo } = model!.attentionWeights(request.layer);
      postMessage({ id: request.id, kind: 'weights', layer: request.layer, wq, wk, wv, wo } satisfies Reply);
    } else {
      const reply = run(request.id, request.text, request.mode, request.projections);
      postMessage(reply, { transfer: [reply.attentions.buffer] });
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    postMessage({ id: request.id, kind: 'error', message, during: request.kind } satisfies Reply);
  }
};
