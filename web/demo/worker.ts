// Computes everything off the main thread: one engine for the worker's life, one model at a time.
// Requests are handled by a table keyed by their kind; each reply carries the request's id, and the
// page's channel decides whether it still counts. A run's maps move to the page (transfer, no
// copy); the worker keeps the rest of the run (ids, hidden state, q, k, v) for the analyses.
import { createEngine, type Engine, type HubProgress, type Model, type Tensor } from 'attnscope';
import { defaultModelFiles } from 'attnscope/models/default'; // the embedded model, which the demo opens with

import { embed, tokenize } from './embed.js';
import { workerKind } from './kinds/worker.js';
import type {
  Drawn,
  Kind,
  MeasureFamily,
  Message,
  Recycle,
  Reply,
  Request,
  RunResult,
  SetName,
  Summary,
} from './protocol.js';
import { hubSource } from './protocol.js';
import { crossMeasures, imageMeasures } from './measures.js';
import {
  ablate,
  compare,
  crossAttention,
  intervene,
  math,
  notAcross,
  oneMapAcross,
  summarize,
  type Kept,
  type Session,
} from './worker-analysis.js';
import { drawn, generate, induction, labelsOf, next, recycle, tokenLimit } from './worker-llm.js';
import { explain } from './worker-explain.js';
import { translate } from './worker-seq2seq.js';
import { ablateImage, beside, refuseImage } from './worker-vision.js';
import { kindOf } from './kinds/kind.js';

const DIM = 64;
// Rows have norm √DIM, so a token's score against itself is SCALE·DIM = 4: enough
// to lead, not enough to drown the tokens that share its spelling.
const SCALE = 4 / DIM;
/** Runs the page may still ask about (the one it shows, and the ones its keystrokes started since). */
const KEEP = 4;

const w: Session = {
  engine: undefined as unknown as Engine,
  model: null,
  defaultModel: null,
  runs: new Map(),
  layerCache: new Map(),
  generation: null,
  beside: null,
  images: new Map(),
  audios: new Map(),
  transcribed: null,
  kept(run: number, what: string): Kept {
    const kept = this.runs.get(run);
    if (!kept) throw new Error(`${what}: that text has changed since; try again`);
    return kept;
  },
};

// Every typed array in a reply is made for it, so the dispatcher moves them all (transfer, no copy).
type Handler<K extends Kind> = (request: Request<K>) => Reply<K> | Promise<Reply<K>>;

/**
 * The default model's files download together, their progress calls interleaved: the page is told their sum, as one
 * download, with a total once every file has one (until then the sum of the totals known would fall back).
 */
function defaultProgress(id: number): (progress: HubProgress) => void {
  const files = new Map<string, HubProgress>();
  const count = Object.keys(defaultModelFiles).length;
  return (progress) => {
    files.set(progress.file, progress);
    let loaded = 0;
    let total: number | undefined = 0;
    for (const f of files.values()) {
      loaded += f.loaded;
      total = f.total === undefined || total === undefined ? undefined : total + f.total;
    }
    if (files.size < count) total = undefined;
    postMessage({ id, kind: 'progress', file: 'The embedded default', loaded, total } satisfies Message);
  };
}

async function load(request: Request<'load'>): Promise<Reply<'load'>> {
  const { id, source } = request;
  const next =
    source.kind === 'default'
      ? await w.engine.loadModel({ default: true, onProgress: defaultProgress(id) })
      : source.kind === 'hub'
        ? await w.engine.loadModel({
            ...hubSource(source.id),
            onProgress: (p) => postMessage({ id, kind: 'progress', ...p } satisfies Message),
          })
        : await w.engine.loadModel({ files: source.files });
  // Only once the new one is ready: a failed load leaves the old model working (and its generation going,
  // unless the page stopped it). A generation on the model that goes stops with it.
  w.generation?.abort();
  if (w.model !== w.defaultModel) w.model?.dispose();
  w.model = next;
  if (source.kind === 'default') {
    if (w.defaultModel !== next) w.defaultModel?.dispose();
    w.defaultModel = next;
  }
  w.runs.clear();
  w.layerCache.clear();
  w.transcribed = null;
  const info = w.engine.info();
  return {
    id,
    kind: 'load',
    engine: info,
    // The page's language-model panes (next token, lens, generation) continue one text: an encoder-decoder's
    // target is written from its source, by the target box's own Generate.
    model: kindOf(next.info) === 'text' ? next.info : { ...next.info, languageModel: false },
    causal: next.info.causal,
    isolated: crossOriginIsolated,
    heapInUse: w.engine.memory().allocatedBytes,
    limit: tokenLimit(next.info, info.maxCallBytes),
  };
}

/**
 * The one run: the model's, through its kind's module (kinds/), which reads what the request names, asks for the
 * rollout or flow the page shows with it, and returns every map set it made; or the parameter-free form's, or the
 * model's heads across two texts. The page gets each set's maps (an encoder-decoder's three), the worker keeps the
 * rest of the run for later analyses.
 */
async function run(request: Request<'run'>): Promise<Reply<'run'>> {
  const { id, text, mode } = request;
  const start = performance.now();
  let made: Array<{ set: SetName; kept: Kept; extra: Partial<RunResult> }>;
  if (mode === 'two-texts') {
    const { kept, extra } = crossAttention(request, w);
    made = [{ set: 'cross', kept, extra: { ...extra, ...notAcross(request.across, kept.shape) } }];
  } else if (mode === 'model') {
    if (!w.model) throw new Error('no model is loaded yet');
    made = await workerKind(w.model.info).run(request, w);
  } else {
    const tokens = tokenize(text);
    if (tokens.length === 0) throw new Error('the text has no tokens; give it some text');
    const n = tokens.length;
    const x: Tensor = { data: embed(tokens, DIM), shape: [n, DIM] };
    const attentions = w.engine.selfAttention(x, { scale: SCALE }).weights.data;
    // The parameter-free form's q, k and v are all X itself.
    const xs: Tensor = { data: x.data, shape: [1, n, DIM] };
    const special = tokens.map(() => false);
    const kept: Kept = {
      mode,
      tokens,
      special,
      attentions,
      shape: [1, 1, n, n],
      causal: false,
      scale: SCALE,
      q: [xs],
      k: [xs],
      v: [xs],
      truncated: false,
      totalTokens: n,
    };
    made = [{ set: 'self', kept, extra: oneMapAcross(request.across, attentions, n, id) }];
  }
  const ms = performance.now() - start;
  const replies = made.map(({ set, kept, extra }) => ({ ...reply(id, kept, ms, 'text', set), ...extra }));
  // The first set is the run's reply; an encoder-decoder's carries every set, and the page shows the one it chose.
  const sets = replies.length > 1 ? Object.fromEntries(replies.map((r) => [r.set, r])) : undefined;
  return { ...replies[0], kind: 'run', ...(sets && { sets }) };
}

/** A run as the page receives it (its maps move there), kept here without them for later analyses. */
function reply(
  id: number,
  kept: Kept,
  ms: number,
  origin: RunResult['origin'],
  set: SetName,
): RunResult & { id: number } {
  const { attentions } = kept;
  // Each head measured as its maps allow: across two sequences (an alignment), over an image's grid, or along a text.
  const image = kept.result && 'grid' in kept.result ? kept.result : undefined;
  const maps = { ...kept, attentions };
  const measures: MeasureFamily = set === 'cross' ? 'cross' : image ? 'image' : 'text';
  const each =
    measures === 'cross'
      ? crossMeasures(maps)
      : image && w.model
        ? imageMeasures(maps, image.grid, w.model.info.prefixTokens ?? 1, w.model.info.registers ?? 0)
        : undefined;
  const layerOf = (slot: number) => kept.mapLayers?.[slot] ?? slot;
  const heads = kept.shape[1];
  const summaries: Summary[] = each
    ? each.map((m, k) => ({ layer: layerOf(Math.floor(k / heads)), head: k % heads, ...m }))
    : summarize(w.engine, kept, attentions).map((x) => ({ ...x }));
  remember(id, kept);
  // A model's tokens as a person reads them; the pieces as its vocabulary spells them go along for tooltips.
  const model = kept.mode !== 'parameter-free' && kept.ids ? w.model : null;
  const labels = model ? labelsOf(model, kept.ids!) : kept.tokens;
  const lens = kept.logitLens;
  const n = kept.tokens.length;
  const layers = kept.layers ?? (model ? model.info.layers : kept.shape[0]);
  // The one copy of the maps this keystroke makes is the engine's, out of wasm; from here they move.
  return {
    id,
    run: id,
    mode: kept.mode,
    set,
    tokens: labels,
    pieces: kept.tokens,
    special: kept.special,
    ids: kept.ids ? Array.from(kept.ids) : [],
    attentions,
    shape: kept.shape,
    mapLayers: kept.mapLayers ?? Array.from({ length: layers }, (_, l) => l),
    layers,
    causal: kept.causal,
    scale: kept.scale,
    ms,
    truncated: kept.truncated ?? false,
    totalTokens: kept.totalTokens ?? kept.tokens.length,
    summaries,
    measures,
    kvHead: kept.kvHead && Array.from(kept.kvHead),
    reusedTokens: kept.reusedTokens,
    logitLens: lens && {
      ...lens,
      tokens: lens.tokens.map((_, l) =>
        model ? labelsOf(model, lens.ids.subarray(l * n, (l + 1) * n)) : lens.tokens[l],
      ),
    },
    origin,
  };
}

/** Keeps a run for later analyses, without its maps (they now belong to the page). */
function remember(id: number, kept: Kept): void {
  w.runs.set(id, { ...kept, attentions: new Float32Array(0) });
  for (const old of w.runs.keys()) if (w.runs.size > KEEP) w.runs.delete(old);
  // Each run's heads' outputs, cached by the math view's requests, go with the run.
  for (const key of w.layerCache.keys()) if (/^\d+:/.test(key) && !w.runs.has(parseInt(key))) w.layerCache.delete(key);
}

/**
 * Time of one attention call, with every head's weights, for n = 16 … 1024 at the model's head shape.
 * Calls are timed in batches of at least 2 ms: without cross-origin isolation the page's clock ticks in 0.1 ms,
 * longer than a small call takes. The fastest of seven batches is kept: other work on the machine only ever
 * makes a batch slower, so the minimum is the estimate it disturbs least.
 */
function cost({ id }: Request<'cost'>): Reply<'cost'> {
  const heads = w.model?.info.heads ?? 1;
  const dk = w.model ? w.model.info.dModel / heads : DIM;
  const points: Array<{ n: number; ms: number }> = [];
  // The first calls run before V8 has optimized the kernels: timed cold, the smallest n would read slower than larger ones.
  const warm: Tensor = { data: new Float32Array(heads * 64 * dk).fill(0.1), shape: [heads, 64, dk] };
  for (const start = performance.now(); performance.now() - start < 150;) w.engine.attention(warm, warm, warm);
  for (const n of [16, 32, 64, 128, 256, 512, 1024]) {
    const x: Tensor = { data: new Float32Array(heads * n * dk).map(() => Math.random() - 0.5), shape: [heads, n, dk] };
    const times: number[] = [];
    for (let batch = 0; batch < 7; batch++) {
      const start = performance.now();
      let calls = 0;
      do {
        w.engine.attention(x, x, x);
        calls++;
      } while (performance.now() - start < 2);
      times.push((performance.now() - start) / calls);
    }
    points.push({ n, ms: Math.min(...times) });
  }
  return { id, kind: 'cost', heads, dk, points };
}

function npy({ id, attentions, shape }: Request<'npy'>): Reply<'npy'> {
  return { id, kind: 'npy', bytes: w.engine.toNpy({ data: attentions, shape: [...shape] }) };
}

/** Every typed array's buffer in a reply, once each (a transfer list may not repeat one). */
function buffersOf(value: object): ArrayBuffer[] {
  const found = new Set<ArrayBuffer>();
  const walk = (v: unknown): void => {
    if (ArrayBuffer.isView(v)) found.add(v.buffer as ArrayBuffer);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  return [...found];
}

const HANDLERS: { [K in Kind]: Handler<K> } = {
  load,
  run,
  math: (request) => {
    const kept = w.kept(request.run, 'The math view');
    if (kept.bitmap)
      refuseImage('The math view', "walks through a head from its layer's input, which an image run does not keep");
    return math(request, kept, w);
  },
  compare: (request) => {
    const kept = w.kept(request.run, 'Compare');
    if (kept.bitmap)
      refuseImage(
        'Compare',
        'runs a second sentence; for a second model on the same image, use "Beside" in the image pane',
      );
    return compare(request, kept, w);
  },
  intervene: (request) => {
    const kept = w.kept(request.run, 'Intervene');
    if (kept.bitmap) refuseImage('Intervene', 'hides or replaces a token of a text');
    return intervene(request, kept, w);
  },
  ablate: (request) => {
    const kept = w.kept(request.run, 'Head ablation');
    return kept.bitmap ? ablateImage(request, kept, w) : ablate(request, kept, w);
  },
  explain: (request) => explain(request, w.kept(request.run, 'Why'), w),
  beside: (request) => beside(request, w),
  image: ({ id, image }) => {
    w.images.set(image.id, image.bitmap);
    for (const old of w.images.keys()) if (w.images.size > 2) w.images.delete(old);
    return { id, kind: 'image' };
  },
  plan: async ({ id, hub }) => ({ id, kind: 'plan', plan: await w.engine.hubPlan(hubSource(hub)) }),
  audio: async ({ id, audio, bytes }) => {
    const decoded = await w.engine.decodeAudio(bytes);
    w.audios.set(audio, decoded.samples);
    for (const old of w.audios.keys()) if (w.audios.size > 2) w.audios.delete(old);
    const { seconds, notices, source } = decoded;
    return { id, kind: 'audio', audio, samples: decoded.samples.slice(), seconds, notices, format: source.format };
  },
  npy,
  cost,
  next: (request) => next(request, w.kept(request.run, 'The next-token pane'), w),
  generate: (request) => generate(request, w.kept(request.run, 'Generate'), w),
  translate: (request) => translate(request, w),
  stop: ({ id }) => {
    w.generation?.abort();
    return { id, kind: 'stop' };
  },
  induction: (request) => {
    if (w.model?.info.input === 'image')
      refuseImage('The induction test', 'runs random tokens of a vocabulary, which a vision model has not');
    const start = performance.now();
    const { kept, result } = induction(request, w);
    return { ...result, run: reply(request.id, kept, performance.now() - start, 'induction', 'self') };
  },
};

const started = (async () => {
  w.engine = await createEngine();
  postMessage(await load({ id: 0, kind: 'load', source: { kind: 'default' } }));
})();
started.catch((err: unknown) =>
  postMessage({ id: 0, kind: 'error', message: String(err), during: 'load' } satisfies Message),
);

self.onmessage = async (event: MessageEvent<Request | Recycle | Drawn>) => {
  if (event.data.kind === 'recycle') return recycle(event.data.buffer);
  if (event.data.kind === 'drawn') return drawn(event.data.ms);
  const request = event.data;
  try {
    await started;
    const handler = HANDLERS[request.kind] as Handler<Kind>;
    const reply = await handler(request);
    postMessage(reply, { transfer: buffersOf(reply) });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    postMessage({ id: request.id, kind: 'error', message, during: request.kind } satisfies Message);
  }
};
