// The worker's analyses of a run the page shows: rollout and flow, one head's math, compare,
// intervene and head ablation. Each reads the run the worker kept (tokens, ids, hidden state,
// q, k, v) and, where it needs them, the maps the page sent back; every array it returns is new.
import type {
  Comparison,
  Engine,
  ImageRunResult,
  MapSet,
  Model,
  ModelRunResult,
  MultiHeadParams,
  PairRunResult,
  RunOptions,
  SpeechGenerateResult,
  Tensor,
} from 'attnscope';

import { clampHead, headMap } from './map-rows.js';
import { headMeasures } from './measures.js';
import {
  flowWhole,
  type AcrossAsk,
  type Contrast,
  type Matrix,
  type Mode,
  type Reply,
  type Request,
  type RunResult,
  type Shape,
  type TextSummary,
} from './protocol.js';

/** A run as the worker keeps it: the maps are the page's (empty here until sent back). */
export interface Kept extends Partial<Omit<ModelRunResult, 'shape'>> {
  mode: Mode;
  tokens: string[];
  special: boolean[];
  attentions: Float32Array;
  shape: Shape;
  /** Whether it hid later keys; the parameter-free form's s (models scale each layer by its own 1/√d_k). */
  causal: boolean;
  scale?: number;
  /** The layers of the stack the maps are of, where it is not the model's (an encoder-decoder's encoder). */
  layers?: number;
  /** A vision model's run: the image it ran on (ablation runs it again). */
  bitmap?: ImageBitmap;
  /** The model's own result of the run (the Why pane explains it, with the options it ran with). */
  result?: ModelRunResult | PairRunResult | ImageRunResult;
}

export interface Session {
  engine: Engine;
  model: Model | null;
  defaultModel: Model | null;
  runs: Map<number, Kept>;
  /** Per layer of the loaded model: its attention weights, and per run its heads' outputs side by side. */
  layerCache: Map<string, MultiHeadParams | Tensor>;
  /** The generation in progress, to stop. */
  generation: AbortController | null;
  /** A vision model's second model beside it. */
  beside: Model | null;
  /** The images the page sent, by id: the last two. */
  images: Map<number, ImageBitmap>;
  /** The sounds the page sent, by id, as the model hears them (mono, 16 kHz): the last two. */
  audios: Map<number, Float32Array>;
  /**
   * A speech model's last transcription and what it was decoded with (sound, language, task, heads): showing another
   * of its windows decodes nothing again. Let go with the model.
   */
  transcribed: { key: string; g: SpeechGenerateResult } | null;
  kept(run: number, what: string): Kept;
}

/** Every head's engine summary, with the language-model measures beside it (measures.ts): of the layers the run holds. */
export function summarize(engine: Engine, kept: Kept, attentions: Float32Array): TextSummary[] {
  const maps = { ...kept, attentions };
  const measures = headMeasures(maps, kept.ids ?? kept.tokens);
  const layerOf = (slot: number) => kept.mapLayers?.[slot] ?? slot;
  // A model's run summarized its heads in the engine (headSummaries: true); other maps are summarized from here.
  const summaries = kept.headSummaries ?? engine.headSummaries(maps).map((s) => ({ ...s, layer: layerOf(s.layer) }));
  return summaries.map((summary, k) => ({ ...summary, ...measures[k] }));
}

/**
 * Cross-attention with the model's own heads: each layer's queries from the text's hidden states, its keys and
 * values from the second text's (each text run through the model on its own, its layers' inputs kept), as
 * multiHeadAttention with `context` computes it: maps [layers, heads, n, m] over the second text's m tokens. Neither
 * a causal mask nor rotary positions apply across two texts (the positions the inputs already hold stay).
 */
export function crossAttention(request: Request<'run'>, s: Session): { kept: Kept; extra: Partial<RunResult> } {
  const model = s.model;
  if (!model) throw new Error('no model is loaded yet');
  const { info } = model;
  if (info.kvHeads !== info.heads)
    throw new Error(
      `cross-attention here gives each head its own keys, and ${info.name} shares them (${info.heads} query heads read ${info.kvHeads} key/value heads): choose a model without grouped-query attention`,
    );
  const context = request.context ?? '';
  if (!context.trim()) throw new Error('cross-attention needs a second text: its tokens are the keys');
  const a = model.run(request.text, { returnProjections: true, reusePrefix: false });
  const b = model.run(context, { returnProjections: true, reusePrefix: false });
  const { layers, heads } = info;
  const [n, m] = [a.tokens.length, b.tokens.length];
  const attentions = new Float32Array(layers * heads * n * m);
  for (let l = 0; l < layers; l++) {
    const x = a.inputs![l];
    const params = cached(s, `weights:${l}`, () => model.attentionWeights(l));
    // The maps do not depend on W_O. A W_O that widens the stream (USE-lite's first, 256 → 512) does not fit
    // multiHeadAttention's [heads·d_v, width of x]: a zero one of x's width stands in for it there.
    const [hv, out] = params.wo.shape;
    const fits = out === x.shape[1];
    const wo = fits ? params.wo : { data: new Float32Array(hv * x.shape[1]), shape: [hv, x.shape[1]] };
    const r = s.engine.multiHeadAttention(
      x,
      { ...params, wo, bo: fits ? params.bo : undefined },
      {
        heads,
        context: b.inputs![l],
      },
    );
    attentions.set(r.weights.data, l * heads * n * m);
  }
  const kept: Kept = {
    mode: 'two-texts',
    tokens: a.tokens,
    special: a.special,
    ids: a.ids,
    attentions,
    shape: [layers, heads, n, m],
    causal: false,
    truncated: a.truncated || b.truncated,
    totalTokens: a.totalTokens,
  };
  return { kept, extra: { keyTokens: model.labels(b.ids) } };
}

/** A language model's run leaves out q, k and v (they would stop it reusing its prefix): the math view asks once. */
function projections(kept: Kept, s: Session): void {
  if (kept.q || kept.mode !== 'model' || !s.model || !kept.ids) return;
  // No maps: the math view has the run's own (and long texts have room for no other layer's).
  const { q, k, v, inputs } = s.model.run(kept.ids, { returnProjections: true, reusePrefix: false, mapLayers: [] });
  Object.assign(kept, { q, k, v, inputs });
}

/** Analyses that combine every layer's maps cannot run on a long text's run, which holds one layer's. */
function needsEveryLayer(kept: Kept, s: Session, what: string): void {
  if (kept.shape[0] < (s.model && kept.mode === 'model' ? s.model.info.layers : kept.shape[0]))
    throw new Error(everyLayer(what, kept.tokens.length));
}

const everyLayer = (what: string, n: number) =>
  `${what} reads every layer's maps, and this text's ${n} tokens are more than the page holds every layer's maps ` +
  `of: shorten it, or look at one layer's heads`;

/** Why rollout and flow are not shown for a run that holds one layer's maps of its `n` tokens. */
export const oneLayerOnly = (ask: AcrossAsk, n: number): Pick<RunResult, 'acrossError'> => ({
  acrossError: everyLayer(ask.view === 'rollout' ? 'Rollout' : 'Flow', n),
});

/** Why rollout and flow are not shown on cross-attention maps of `shape` (two texts', an encoder-decoder's). */
export const notAcross = (ask: AcrossAsk | undefined, shape: Shape): Pick<RunResult, 'acrossError'> =>
  ask
    ? {
        acrossError:
          `${ask.view}: not defined here: these are cross-attention maps (${shape[2]} queries × ${shape[3]} keys): ` +
          'rollout and flow follow attention back through the layers of one sequence attending to itself, and ' +
          "cross-attention's keys are another sequence's tokens",
      }
    : {};

/**
 * The run options that compute the rollout or flow the page shows with the run, in the engine, where the maps are:
 * every row, or the chosen token's where flow of every row would take long. `n`: the set's tokens; `set`: its name
 * when the run makes several.
 */
export function acrossOptions(
  ask: AcrossAsk | undefined,
  n: number,
  layers: number,
  set?: string,
): Pick<RunOptions, 'rollout' | 'flow'> {
  if (!ask) return {};
  const options = { residual: ask.residual, ...(set && { set }) };
  if (ask.view === 'rollout') return { rollout: options };
  return { flow: flowWhole(n, layers) ? options : { ...options, rows: [Math.max(0, Math.min(ask.token, n - 1))] } };
}

/** The page's rollout or flow, from a map set the run computed it for (acrossOptions). */
export function acrossReply(
  ask: AcrossAsk | undefined,
  set: Pick<MapSet, 'shape' | 'rollout' | 'flow'>,
  run: number,
): Pick<RunResult, 'across'> {
  const t = ask && (ask.view === 'rollout' ? set.rollout : set.flow);
  if (!ask || !t) return {};
  const [layers, , n] = set.shape;
  const token = Math.min(ask.token, n - 1);
  const whole = t.shape[0] === n;
  const note =
    ask.view === 'rollout'
      ? `Rollout over ${layers} layer${layers > 1 ? 's' : ''}: each row sums to 1 over the input tokens.`
      : whole
        ? `Flow: the maximum flow from each token in the last layer to each input token (${n * n} max-flow problems).`
        : `Flow for ${n} tokens × ${layers} layers is shown for the chosen token only (every row would take long).`;
  const { view, residual } = ask;
  const bar = whole ? t.data.slice(token * n, (token + 1) * n) : t.data.slice(0, n);
  return { across: { view, residual, token, run, matrix: whole ? t.data : undefined, bar, note } };
}

/**
 * Rollout and flow of one layer's one map (the parameter-free form): both are the map itself, with the residual
 * (Â = (A + I) / 2) where asked: one layer has no other to multiply into, and the most that flows from an output
 * token to an input token through it is the one edge between them.
 */
export function oneMapAcross(ask: AcrossAsk | undefined, map: Float32Array, n: number, run: number) {
  if (!ask) return {};
  const a = ask.residual ? map.map((w, at) => (w + (at % (n + 1) === 0 ? 1 : 0)) / 2) : map.slice();
  return acrossReply(
    ask,
    { shape: [1, 1, n, n], rollout: { data: a, shape: [n, n] }, flow: { data: a, shape: [n, n] } },
    run,
  );
}

const matrix = (t: Tensor): Matrix => ({ data: t.data.slice(), rows: t.shape[0], cols: t.shape[1] });

/** Head h of a [heads, n, d] tensor as a new n×d matrix. */
function headOf(t: Tensor, h: number): Matrix {
  const [, rows, cols] = t.shape;
  return { data: t.data.slice(h * rows * cols, (h + 1) * rows * cols), rows, cols };
}

/** Columns [begin, begin + width) of a row-major [rows, cols] tensor. */
function columns(t: Tensor, begin: number, width: number): Matrix {
  const [rows, cols] = t.shape;
  const data = new Float32Array(rows * width);
  for (let i = 0; i < rows; i++) data.set(t.data.subarray(i * cols + begin, i * cols + begin + width), i * width);
  return { data, rows, cols: width };
}

/** Key or value heads [kv, n, d] repeated for the query heads that share each one: [heads, n, d]. */
function perQueryHead(t: Tensor, heads: number): Tensor {
  const [kv, n, d] = t.shape;
  if (kv === heads) return t;
  const data = new Float32Array(heads * n * d);
  for (let h = 0; h < heads; h++)
    data.set(
      t.data.subarray(Math.floor((h * kv) / heads) * n * d, (Math.floor((h * kv) / heads) + 1) * n * d),
      h * n * d,
    );
  return { data, shape: [heads, n, d] };
}

const tensor = (m: Matrix): Tensor => ({ data: m.data, shape: [m.rows, m.cols] });

function transpose(m: Matrix): Tensor {
  const data = new Float32Array(m.data.length);
  for (let i = 0; i < m.rows; i++) for (let j = 0; j < m.cols; j++) data[j * m.rows + i] = m.data[i * m.cols + j];
  return { data, shape: [m.cols, m.rows] };
}

function cached<T extends MultiHeadParams | Tensor>(s: Session, key: string, make: () => T): T {
  if (!s.layerCache.has(key)) s.layerCache.set(key, make());
  return s.layerCache.get(key) as T;
}

/**
 * One head's steps on the engine's own numbers: X and the head's columns of W_Q, W_K, W_V (model
 * mode), the run's Q, K, V; Q·Kᵀ by the engine's matrix multiply, scaled and masked as the switches
 * say; the weights (the run's own, unless the switches differ from it) and weights · V by the
 * engine's attention; then every head's output side by side, as W_O receives them.
 */
export function math(request: Request<'math'>, kept: Kept, s: Session): Reply<'math'> {
  const { id, run, layer, head, scale, causal } = request;
  if (kept.mode === 'two-texts')
    throw new Error(
      'The math view walks through one text\'s self-attention, from its own X: choose "The model\'s learned heads"',
    );
  projections(kept, s);
  const [qs, ks, vs] = [kept.q![layer], kept.k![layer], kept.v![layer]];
  const [heads, n] = qs.shape;
  // Grouped-query attention: several query heads share one key/value head.
  const kvHead = Math.floor((head * ks.shape[0]) / heads);
  const [q, k, v] = [headOf(qs, head), headOf(ks, kvHead), headOf(vs, kvHead)];
  // Layers may differ in d_k (the default model's first has 64, its second 128).
  const own = kept.scale ?? 1 / Math.sqrt(qs.shape[2]);
  const factor = scale ? own : 1;
  const scores = s.engine.linear(tensor(q), transpose(k));
  const scaled = scores.data.map((x) => x * factor);
  const masked = scaled.map((x, at) => (causal && at % n > Math.floor(at / n) ? -Infinity : x));
  const same = scale && causal === kept.causal; // then the run's own map is the weights
  const options = { scale: factor, causal, returnWeights: !same };
  const { output, weights } = s.engine.attention(tensor(q), tensor(k), tensor(v), options);
  const outputs = cached(s, `${run}:${layer}`, () => {
    const [kAll, vAll] = [perQueryHead(ks, heads), perQueryHead(vs, heads)];
    const all = s.engine.attention(qs, kAll, vAll, { scale: own, causal: kept.causal, returnWeights: false });
    return all.output; // [heads, n, d_v]
  });
  const dv = outputs.shape[2];
  const concat = new Float32Array(n * heads * dv);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < n; i++)
      concat.set(outputs.data.subarray((h * n + i) * dv, (h * n + i + 1) * dv), (i * heads + h) * dv);
  const steps: Reply<'math'> = {
    id,
    kind: 'math',
    run,
    layer,
    head,
    scale,
    causal,
    factor,
    q,
    k,
    v,
    scores: { data: scores.data, rows: n, cols: n },
    scaled: { data: scaled, rows: n, cols: n },
    masked: { data: masked, rows: n, cols: n },
    weights: weights && { data: weights.data, rows: n, cols: n },
    output: { data: output.data, rows: n, cols: dv },
    concat: { data: concat, rows: n, cols: heads * dv },
  };
  if (kept.mode === 'model' && s.model) {
    const p = cached(s, `weights:${layer}`, () => s.model!.attentionWeights(layer));
    const [dk, dkv] = [q.cols, k.cols];
    Object.assign(steps, {
      x: kept.inputs && matrix(kept.inputs[layer]),
      wq: columns(p.wq, head * dk, dk),
      wk: columns(p.wk, kvHead * dkv, dkv),
      wv: columns(p.wv, kvHead * v.cols, v.cols),
      wo: matrix(p.wo),
    });
  }
  return steps;
}

function modelRun(kept: Kept, s: Session, attentions: Float32Array, what: string): ModelRunResult {
  if (kept.mode !== 'model' || !s.model)
    throw new Error(`${what} needs the model's heads: choose "The model's learned heads"`);
  needsEveryLayer(kept, s, what);
  return { ...kept, attentions } as ModelRunResult;
}

/** The two runs' maps for one layer and head, and their comparison. */
function contrast(a: ModelRunResult, b: ModelRunResult, c: Comparison, layer: number, head: number): Contrast {
  const mapOf = (r: ModelRunResult) => headMap(r, ...clampHead(r.shape, layer, head))!.slice();
  const both = layer < Math.min(a.shape[0], b.shape[0]) && head < Math.min(a.shape[1], b.shape[1]);
  return {
    tokensA: a.tokens,
    tokensB: b.tokens,
    a: mapOf(a),
    b: mapOf(b),
    pairs: c.pairs,
    unaligned: c.unaligned,
    difference: c.pairs.length && both ? c.difference(layer, head) : undefined,
    change: c.change,
    message: c.message ?? (both ? undefined : `Layer ${layer + 1}, head ${head + 1} is not in both models.`),
    layer,
    head,
  };
}

export async function compare(request: Request<'compare'>, kept: Kept, s: Session): Promise<Reply<'compare'>> {
  const a = modelRun(kept, s, request.attentions, 'Compare');
  s.defaultModel ??= await s.engine.loadModel('default');
  const other = request.model === 'default' ? s.defaultModel : s.model!;
  const b = other.run(request.text, { reusePrefix: false });
  const c = s.engine.compare(a, b);
  const { id, layer, head } = request;
  return { id, kind: 'compare', modelB: other.info.name, ...contrast(a, b, c, layer, head) };
}

/** The ids a word adds, without the special tokens the tokenizer puts around any text. */
function wordIds(m: Model, word: string): number[] {
  const empty = m.tokenize('').tokens; // what the tokenizer adds around any text: [CLS] … [SEP], or nothing
  const { ids, tokens } = m.tokenize(word);
  const lead = empty.length && empty[0] === tokens[0] ? 1 : 0;
  return Array.from(ids.subarray(lead, ids.length - (empty.length - lead)));
}

export function intervene(request: Request<'intervene'>, kept: Kept, s: Session): Reply<'intervene'> {
  const a = modelRun(kept, s, request.attentions, 'Intervene');
  const model = s.model!;
  const n = a.tokens.length;
  if (!(request.token >= 0 && request.token < n)) throw new Error(`Intervene: choose one of the ${n} tokens`);
  let b: ModelRunResult;
  let description: string;
  if (request.action === 'mask') {
    const mask = Array.from({ length: n }, (_, i) => (i === request.token ? 0 : 1));
    b = model.run(a.ids, { attentionMask: mask });
    description = `“${a.tokens[request.token]}” hidden from every head (attention mask 0)`;
  } else {
    const word = request.replacement.trim();
    const ids = wordIds(model, word);
    if (!ids.length) throw new Error('Intervene: type a word to put in its place');
    b = model.run([...a.ids.subarray(0, request.token), ...ids, ...a.ids.subarray(request.token + 1)]);
    description = `“${a.tokens[request.token]}” replaced by ${ids.length > 1 ? `${ids.length} tokens` : 'one token'} of “${word}”`;
  }
  const { id, layer, head } = request;
  return { id, kind: 'intervene', description, ...contrast(a, b, s.engine.compare(a, b), layer, head) };
}

export function ablate(request: Request<'ablate'>, kept: Kept, s: Session): Reply<'ablate'> {
  const a = modelRun(kept, s, kept.attentions, 'Head ablation');
  const b = s.model!.run(a.ids, { ablateHeads: [[request.layer, request.head]] });
  const cosines = s.engine.cosineSimilarity(a.hidden, b.hidden);
  const mean = cosines.reduce((sum, x) => sum + x, 0) / cosines.length;
  const { id, layer, head } = request;
  return { id, kind: 'ablate', layer, head, tokens: a.tokens, cosines, mean };
}
