// Computes attention maps off the main thread: one engine for the worker's life,
// one model at a time. Replies carry the request id; the page shows only the newest.
import {
  createEngine,
  type Comparison,
  type Engine,
  type EngineInfo,
  type HeadSummary,
  type Model,
  type ModelInfo,
  type ModelRunResult,
  type Tensor,
} from 'attnscope';

import { embed, tokenize } from './embed.js';

export type Mode = 'model' | 'parameter-free';
export type Source =
  { kind: 'default' } | { kind: 'hub'; id: string } | { kind: 'files'; files: Record<string, ArrayBuffer> };
export type Request =
  | { id: number; kind: 'run'; text: string; mode: Mode; projections: boolean }
  | { id: number; kind: 'cost' }
  | { id: number; kind: 'weights'; layer: number }
  | { id: number; kind: 'load'; source: Source }
  | { id: number; kind: 'across'; view: 'rollout' | 'flow'; residual: boolean; token: number }
  | { id: number; kind: 'compare'; text: string; model: 'same' | 'default'; layer: number; head: number }
  | {
      id: number;
      kind: 'intervene';
      token: number;
      action: 'mask' | 'replace';
      replacement: string;
      layer: number;
      head: number;
    }
  | { id: number; kind: 'ablate'; layer: number; head: number }
  | { id: number; kind: 'npy' };

/** Two runs' maps for one layer and head, aligned where their tokens are. */
export interface Contrast {
  tokensA: string[];
  tokensB: string[];
  a: Float32Array; // [n, n]
  b: Float32Array; // [m, m]
  pairs: Array<[number, number]>;
  unaligned: { a: number[]; b: number[] };
  difference?: Tensor; // [pairs, pairs]: a − b over aligned tokens
  change?: Tensor; // [layers, heads]
  message?: string;
  layer: number;
  head: number;
}
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
      summaries: HeadSummary[];
    }
  | {
      id: number;
      kind: 'across';
      view: 'rollout' | 'flow';
      residual: boolean;
      tokens: string[];
      token: number;
      matrix?: Float32Array; // [n, n], every token's row (flow: when affordable)
      bar: Float32Array; // [n]: the chosen token's row
      note: string;
    }
  | ({ id: number; kind: 'compare'; modelB: string } & Contrast)
  | ({ id: number; kind: 'intervene'; description: string } & Contrast)
  | { id: number; kind: 'ablate'; layer: number; head: number; tokens: string[]; cosines: Float32Array; mean: number }
  | { id: number; kind: 'npy'; bytes: Uint8Array }
  | { id: number; kind: 'weights'; layer: number; wq: Tensor; wk: Tensor; wv: Tensor; wo: Tensor }
  | { id: number; kind: 'cost'; heads: number; dk: number; points: Array<{ n: number; ms: number }> }
  | { id: number; kind: 'error'; message: string; during: Request['kind'] };

const DIM = 64;
// Rows have norm √DIM, so a token's score against itself is SCALE·DIM = 4: enough
// to lead, not enough to drown the tokens that share its spelling.
const SCALE = 4 / DIM;

let engine: Engine;
let model: Model | null = null;
let defaultModel: Model | null = null; // kept for comparing another model with the default
/** What the page shows now: the maps every analysis reads. */
let last: {
  mode: Mode;
  run: Pick<ModelRunResult, 'attentions' | 'shape' | 'tokens' | 'special'> & Partial<ModelRunResult>;
} | null = null;

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
  if (model !== defaultModel) model?.dispose(); // only once the new one is ready: a failed load leaves the old model working
  model = next;
  if (source.kind === 'default') {
    if (defaultModel !== next) defaultModel?.dispose();
    defaultModel = next;
  }
  last = null;
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
    const result = model.run(text, { returnProjections: projections });
    const { tokens, attentions, shape, truncated, totalTokens, q, k, v, inputs } = result;
    last = { mode, run: result };
    return {
      id,
      kind: 'result',
      mode,
      tokens,
      attentions: attentions.slice(), // the page gets its own copy; the worker keeps this run for analyses
      shape,
      summaries: engine.headSummaries(result),
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
  const maps = { attentions: weights.data, shape: [1, 1, n, n] as [number, number, number, number], tokens };
  last = { mode, run: { ...maps, special: tokens.map(() => false) } };
  return {
    id,
    kind: 'result',
    mode,
    tokens,
    attentions: weights.data.slice(),
    summaries: engine.headSummaries(maps),
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

/**
 * Time of one attention call, with every head's weights, for n = 16 … 1024 at the model's head shape.
 * Calls are timed in batches of at least 2 ms: without cross-origin isolation the page's clock ticks in 0.1 ms,
 * longer than a small call takes. The fastest of seven batches is kept: other work on the machine only ever
 * makes a batch slower, so the minimum is the estimate it disturbs least.
 */
function cost(id: number): Reply {
  const heads = model?.info.heads ?? 1;
  const dk = model ? model.info.dModel / heads : DIM;
  const points: Array<{ n: number; ms: number }> = [];
  // The first calls run before V8 has optimized the kernels: measured cold, n = 16 read twice n = 32's time.
  const warm: Tensor = { data: new Float32Array(heads * 64 * dk).fill(0.1), shape: [heads, 64, dk] };
  for (const start = performance.now(); performance.now() - start < 150;) engine.attention(warm, warm, warm);
  for (const n of [16, 32, 64, 128, 256, 512, 1024]) {
    const x: Tensor = { data: new Float32Array(heads * n * dk).map(() => Math.random() - 0.5), shape: [heads, n, dk] };
    const times: number[] = [];
    for (let batch = 0; batch < 7; batch++) {
      const start = performance.now();
      let calls = 0;
      do {
        engine.attention(x, x, x);
        calls++;
      } while (performance.now() - start < 2);
      times.push((performance.now() - start) / calls);
    }
    points.push({ n, ms: Math.min(...times) });
  }
  return { id, kind: 'cost', heads, dk, points };
}

// Flow is one max-flow per (row, input token): every row when that stays quick, else the chosen token's.
const FLOW_BUDGET = 2e7;

/** Rollout or flow over the shown maps, as a token × token map and the chosen token's bar. */
function across(request: Extract<Request, { kind: 'across' }>): Reply {
  const { run } = shownRun('rollout and flow');
  const [layers, , n] = run.shape;
  const token = Math.min(request.token, n - 1);
  const options = { residual: request.residual };
  let matrix: Float32Array | undefined;
  let note: string;
  if (request.view === 'rollout') {
    matrix = engine.rollout(run, options).data.slice((layers - 1) * n * n);
    note = `Rollout over ${layers} layer${layers > 1 ? 's' : ''}: each row sums to 1 over the input tokens.`;
  } else if (n * n * n * n * layers <= FLOW_BUDGET) {
    matrix = engine.attentionFlow(run, options).data;
    note = `Flow: the maximum flow from each token in the last layer to each input token (${n * n} max-flow problems).`;
  } else {
    note = `Flow for ${n} tokens × ${layers} layers is shown for the chosen token only (every row would take long).`;
  }
  const bar = matrix
    ? matrix.slice(token * n, (token + 1) * n)
    : engine.attentionFlow(run, { ...options, rows: [token] }).data;
  return {
    id: request.id,
    kind: 'across',
    view: request.view,
    residual: request.residual,
    tokens: run.tokens,
    token,
    matrix,
    bar,
    note,
  };
}

function shownRun(what: string) {
  if (!last) throw new Error(`${what}: type some text first`);
  return last;
}

function modelRun(what: string): ModelRunResult {
  const shown = shownRun(what);
  if (shown.mode !== 'model' || !model)
    throw new Error(`${what} needs the model's heads: choose "The model's learned heads"`);
  return shown.run as ModelRunResult;
}

/** The two runs' maps for one layer and head, and their comparison. */
function contrast(a: ModelRunResult, b: ModelRunResult, c: Comparison, layer: number, head: number): Contrast {
  const mapOf = (r: ModelRunResult, l: number, h: number) => {
    const [layers, heads, n] = r.shape;
    const [ll, hh] = [Math.min(l, layers - 1), Math.min(h, heads - 1)];
    return r.attentions.slice((ll * heads + hh) * n * n, (ll * heads + hh + 1) * n * n);
  };
  const both = layer < Math.min(a.shape[0], b.shape[0]) && head < Math.min(a.shape[1], b.shape[1]);
  return {
    tokensA: a.tokens,
    tokensB: b.tokens,
    a: mapOf(a, layer, head),
    b: mapOf(b, layer, head),
    pairs: c.pairs,
    unaligned: c.unaligned,
    difference: c.pairs.length && both ? c.difference(layer, head) : undefined,
    change: c.change,
    message: c.message ?? (both ? undefined : `Layer ${layer + 1}, head ${head + 1} is not in both models.`),
    layer,
    head,
  };
}

async function compare(request: Extract<Request, { kind: 'compare' }>): Promise<Reply> {
  const a = modelRun('Compare');
  defaultModel ??= await engine.loadModel('default');
  const other = request.model === 'default' ? defaultModel : model!;
  const b = other.run(request.text);
  const c = engine.compare(a, b);
  return {
    id: request.id,
    kind: 'compare',
    modelB: other.info.name,
    ...contrast(a, b, c, request.layer, request.head),
  };
}

/** The ids a word adds, without the special tokens the tokenizer puts around any text. */
function wordIds(m: Model, word: string): number[] {
  const empty = m.tokenize('').tokens; // what the tokenizer adds around any text: [CLS] … [SEP], or nothing
  const { ids, tokens } = m.tokenize(word);
  const lead = empty.length && empty[0] === tokens[0] ? 1 : 0;
  return Array.from(ids.subarray(lead, ids.length - (empty.length - lead)));
}

function intervene(request: Extract<Request, { kind: 'intervene' }>): Reply {
  const a = modelRun('Intervene');
  const n = a.tokens.length;
  if (!(request.token >= 0 && request.token < n)) throw new Error(`Intervene: choose one of the ${n} tokens`);
  let b: ModelRunResult;
  let description: string;
  if (request.action === 'mask') {
    const mask = Array.from({ length: n }, (_, i) => (i === request.token ? 0 : 1));
    b = model!.run(a.ids, { attentionMask: mask });
    description = `“${a.tokens[request.token]}” hidden from every head (attention mask 0)`;
  } else {
    const ids = wordIds(model!, request.replacement.trim());
    if (!ids.length) throw new Error('Intervene: type a word to put in its place');
    b = model!.run([...a.ids.subarray(0, request.token), ...ids, ...a.ids.subarray(request.token + 1)]);
    description = `“${a.tokens[request.token]}” replaced by ${ids.length > 1 ? `${ids.length} tokens` : 'one token'} of “${request.replacement.trim()}”`;
  }
  return {
    id: request.id,
    kind: 'intervene',
    description,
    ...contrast(a, b, engine.compare(a, b), request.layer, request.head),
  };
}

function ablate(request: Extract<Request, { kind: 'ablate' }>): Reply {
  const a = modelRun('Head ablation');
  const b = model!.run(a.ids, { ablateHeads: [[request.layer, request.head]] });
  const cosines = engine.cosineSimilarity(a.hidden, b.hidden);
  const mean = cosines.reduce((s, x) => s + x, 0) / cosines.length;
  return { id: request.id, kind: 'ablate', layer: request.layer, head: request.head, tokens: a.tokens, cosines, mean };
}

self.onmessage = async (event: MessageEvent<Request>) => {
  const request = event.data;
  try {
    await started;
    if (request.kind === 'load') {
      await load(request.id, request.source);
    } else if (request.kind === 'cost') {
      postMessage(cost(request.id));
    } else if (request.kind === 'across') {
      postMessage(across(request));
    } else if (request.kind === 'compare') {
      postMessage(await compare(request));
    } else if (request.kind === 'intervene') {
      postMessage(intervene(request));
    } else if (request.kind === 'ablate') {
      postMessage(ablate(request));
    } else if (request.kind === 'npy') {
      const { run } = shownRun('Export');
      const bytes = engine.toNpy({ data: run.attentions, shape: [...run.shape] });
      postMessage({ id: request.id, kind: 'npy', bytes } satisfies Reply, { transfer: [bytes.buffer] });
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
