// The worker's language-model requests: a run on the text's tokens (reusing the previous run's prefix; every
// layer's maps while they fit, past that the maps of the layer the page shows), one position's whole next-token
// distribution, generation streamed token by token, and the induction test (Olsson et al., 2022).
import type { Model, ModelInfo } from 'attnscope';

import { blockFor, poolRow, THUMBNAIL_CELLS } from './draw/pooled.js';
import { inductionScores } from './measures.js';
import type { Message, PageLimit, Reply, Request, RunResult } from './protocol.js';
import type { Kept, Session } from './worker-analysis.js';

/**
 * Generated tokens go to the page at most this often (ms). Showing them costs the page's thread (the maps, the
 * head view, the chips) about the same at any batch size, and that thread shares the cores with the engine's:
 * four times a second still streams, and leaves the cores to the engine.
 */
const BATCH_MS = 250;

/**
 * A token message goes no sooner than PACE times the page's time on the last one (Drawn), nor later than
 * MAX_GAP_MS: the page's thread then draws at most a quarter of the time, whatever a model's speed and a text's
 * length make a message cost it.
 */
const PACE = 4;
const MAX_GAP_MS = 1000;

/** The page's time on the last token message it drew (ms). */
let pageMs = 0;

export function drawn(ms: number): void {
  pageMs = ms;
}

/** The most values a token message's buffer holds (64 MB) but for one token's rows; a fuller batch goes early. */
const MAX_BATCH_VALUES = 1 << 24;

/** Buffers the page handed back (token messages'), to write more rows into; a few kept. */
const spare: ArrayBuffer[] = [];

export function recycle(b: ArrayBuffer): void {
  spare.push(b);
  // The largest few: rows grow with the text, and a buffer too small for them is never taken again.
  spare.sort((x, y) => y.byteLength - x.byteLength).splice(4);
}

/**
 * A Float32Array of at least `length` values, a spare one if one is large enough, else a new one of a power of two
 * values (at least 16 MB): as the rows grow, a few sizes serve, and the page hands them back. A new buffer is memory
 * touched for the first time, which costs about as much as writing the rows.
 */
function buffer(length: number): Float32Array {
  const at = spare.findIndex((b) => b.byteLength >= 4 * length);
  if (at >= 0) return new Float32Array(spare.splice(at, 1)[0]);
  return new Float32Array(2 ** Math.ceil(Math.log2(Math.max(length, 1 << 22))));
}

/** Longest input the page runs (the long context); models and memory may allow fewer. */
export const PAGE_TOKENS = 2048;

/**
 * The most tokens the page runs a model on, and what sets it: the model's positions, the page's 2,048, or one
 * layer's maps of n tokens (4·heads·n² bytes), which must fit the engine's per-call budget; and up to how many
 * tokens a run returns every layer's maps (4·layers·heads·n² bytes). Between the two, a run returns the maps of
 * the layer the page shows, and another layer's maps are a run away (computed from the kept queries and keys).
 * Encoders compute every layer's maps: they run up to the model's positions.
 */
export function tokenLimit(info: ModelInfo, maxCallBytes: number): PageLimit {
  if (!info.languageModel) return { tokens: info.maxTokens, why: 'model', everyLayer: info.maxTokens };
  const fit = (layers: number) => Math.floor(Math.sqrt((0.9 * maxCallBytes) / (4 * layers * info.heads)));
  const memory = fit(1);
  const tokens = Math.min(info.maxTokens, PAGE_TOKENS, memory);
  const why = tokens === info.maxTokens ? 'model' : tokens === memory ? 'memory' : 'page';
  return { tokens, why, everyLayer: Math.min(tokens, fit(info.layers)) };
}

export function languageModel(s: Session, what: string): Model {
  if (!s.model?.info.languageModel)
    throw new Error(`${what} needs a language model; ${s.model?.info.name ?? 'no model'} does not predict tokens`);
  return s.model;
}

/**
 * Tokens as the page shows them: the tokenizer's labels (␣ where a piece stands for a space, <0xNN> for bytes that
 * are part of a character); `#id` for models that hold no tokenizer.
 */
export function labelsOf(model: Model, ids: ArrayLike<number>): string[] {
  try {
    return model.labels(ids);
  } catch {
    return Array.from(ids, (id) => `#${id}`);
  }
}

/** Every logit after one position, from its hidden row and the model's head; the best 64 decoded. */
export function next(request: Request<'next'>, kept: Kept, s: Session): Reply<'next'> {
  const model = languageModel(s, 'The next-token pane');
  const [n, d] = kept.hidden!.shape;
  const position = Math.max(0, Math.min(request.position, n - 1));
  const row = { data: kept.hidden!.data.slice(position * d, (position + 1) * d), shape: [1, d] };
  const logits = model.logits(row).data;
  const top = Array.from(logits.keys())
    .sort((a, b) => logits[b] - logits[a] || a - b)
    .slice(0, 64);
  const { id, run } = request;
  return { id, kind: 'next', run, position, logits, top, text: labelsOf(model, top) };
}

/**
 * Continues the run's tokens: they go to the page a few times a second with their rows of the layers it grows and
 * every row pooled for its thumbnails, and none is kept here (the page holds the maps). The prompt's keys and
 * values come from the run.
 */
export async function generate(request: Request<'generate'>, kept: Kept, s: Session): Promise<Reply<'generate'>> {
  const model = languageModel(s, 'Generate');
  const limit = tokenLimit(model.info, s.engine.info().maxCallBytes);
  const room = limit.tokens - kept.ids!.length;
  if (kept.truncated || room < 1)
    throw new Error(
      kept.truncated
        ? `Generate: the text is cut at ${kept.ids!.length} tokens, this page's limit; shorten it first`
        : `Generate: the text already has the ${kept.ids!.length} tokens this page runs at most`,
    );
  const { id, temperature, topK, topP, seed } = request;
  s.generation?.abort();
  const controller = new AbortController();
  s.generation = controller;
  pageMs = 0; // a shorter text costs the page less: its first messages go BATCH_MS apart
  // Tokens go to the page a few times a second: a small model makes hundreds a second, and one message (and one
  // redraw) each would cost the page more than the model does. Their rows are written into one buffer per message,
  // which the page hands back: no memory is taken per token. The engine writes a token's rows of every layer here
  // (one buffer for the generation); the message takes the rows of the layers the page grows, and every row pooled
  // for the thumbnails: a token's message is then heads × n values a layer the page grows and 64 a map, not
  // layers × heads × n.
  const { layers: all, heads } = model.info;
  const whole = request.layers.filter((l, i, ls) => Number.isInteger(l) && l >= 0 && l < all && ls.indexOf(l) === i);
  let step = new Float32Array(0);
  let batch: Extract<Message, { kind: 'token' }> | null = null;
  let at = 0;
  let sent = -Infinity; // the first token goes at once
  // About the tokens BATCH_MS brings: a buffer has room for a few more, so that it goes on time, not early when full
  // (the page would take more messages a second). From the last batch that went on time; twice a full one.
  let perBatch = 4;
  /** The ids generated so far. The text the page shows is theirs decoded after the prompt's (no special tokens):
   *  a SentencePiece decoder drops a leading space at the start of a text, not after the prompt. */
  const made: number[] = [];
  const prompt = Array.from(kept.ids!);
  const before = model.decode(prompt, { skipSpecialTokens: true });
  const flush = (why: 'time' | 'full' | 'end') => {
    if (!batch?.tokens.length) return;
    if (why === 'full') perBatch = 2 * batch.tokens.length;
    else if (why === 'time' && sent > -Infinity) perBatch = batch.tokens.length;
    const whole = model.decode([...prompt, ...made], { skipSpecialTokens: true });
    batch.text = whole.startsWith(before)
      ? whole.slice(before.length)
      : model.decode(made, { skipSpecialTokens: true });
    postMessage(batch, { transfer: [batch.rows.buffer] });
    batch = null;
    sent = performance.now();
  };
  const rowsInto = (length: number) => {
    if (step.length < length) step = new Float32Array(2 ** Math.ceil(Math.log2(length)));
    return step.subarray(0, length);
  };
  /** Token `position`'s rows, from `step`, into the batch: the whole ones, then every one pooled. */
  const keep = (position: number) => {
    const width = position + 1;
    const block = blockFor(width, THUMBNAIL_CELLS);
    const cells = Math.ceil(width / block);
    const length = (whole.length * width + all * cells) * heads;
    if (batch && at + length > batch.rows.length) flush('full');
    if (!batch) {
      const rows = buffer(Math.max(length, Math.min(MAX_BATCH_VALUES, length * Math.ceil(1.25 * perBatch + 1))));
      batch = { id, kind: 'token', tokens: [], rows, offsets: [], pooledAt: [], blocks: [], text: '' };
      at = 0;
    }
    const size = heads * width; // one layer's rows
    batch.offsets.push(at);
    for (const l of whole) batch.rows.set(step.subarray(l * size, (l + 1) * size), (at += size) - size);
    batch.pooledAt.push(at);
    batch.blocks.push(block);
    for (let r = 0; r < all * heads; r++, at += cells)
      poolRow(step.subarray(r * width, (r + 1) * width), block, batch.rows.subarray(at, at + cells));
  };
  try {
    const g = await model.generate(kept.ids!, {
      maxNewTokens: Math.min(request.maxNewTokens, room),
      ...{ temperature, topK, topP, seed },
      attentions: 'rows',
      rowsInto,
      signal: controller.signal,
      onToken: (t) => {
        keep(t.position);
        const special = model.info.eosTokenIds.includes(t.id);
        const token = labelsOf(model, [t.id])[0];
        batch!.tokens.push({ tokenId: t.id, token, piece: t.token, position: t.position, special });
        made.push(t.id);
        if (performance.now() - sent >= Math.min(MAX_GAP_MS, Math.max(BATCH_MS, PACE * pageMs))) flush('time');
      },
    });
    flush('end');
    const { generated, promptTokens, stopReason } = g;
    return { id, kind: 'generate', ids: Array.from(g.ids), generated, promptTokens, stopReason, seed: g.seed };
  } finally {
    if (s.generation === controller) s.generation = null;
  }
}

/** Seeded uniform numbers in [0, 1) (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * The induction test: `length` distinct random tokens, then the same again, after the model's leading special
 * token (BOS, [CLS]) and before its trailing one ([SEP]). A head that copies what followed the earlier
 * occurrence of the current token puts its weight, in the second copy, on the token after that occurrence.
 */
export function induction(
  request: Request<'induction'>,
  s: Session,
): { kept: Kept; result: Omit<Reply<'induction'>, 'run'> } {
  const model = s.model;
  if (!model) throw new Error('no model is loaded yet');
  const { vocabSize } = model.info;
  let around: number[] = [];
  try {
    around = Array.from(model.tokenize('').ids); // what the tokenizer adds to any text
  } catch {
    // No tokenizer: the ids run as they are.
  }
  const limit = tokenLimit(model.info, s.engine.info().maxCallBytes).everyLayer;
  const avoid = new Set([...around, ...model.info.eosTokenIds]);
  const length = Math.min(request.length, Math.floor((limit - around.length) / 2), vocabSize - avoid.size);
  if (length < 2)
    throw new Error(`Find induction heads: ${model.info.name} has too few tokens or positions for the test`);
  const draw = random(request.seed);
  const pick = (): number => {
    for (;;) {
      const id = Math.floor(draw() * vocabSize);
      if (!avoid.has(id)) return id;
    }
  };
  const tokens: number[] = [];
  for (let attempt = 0; attempt < 8; attempt++) {
    while (tokens.length < length) {
      const id = pick();
      avoid.add(id); // distinct within a copy: each token has exactly one earlier occurrence
      tokens.push(id);
    }
    const ids = [...around.slice(0, 1), ...tokens, ...tokens, ...around.slice(1)];
    const result = model.run(ids, { reusePrefix: false });
    // A token the vocabulary marks special (a control token) is drawn again.
    const special = result.special.slice(around.length ? 1 : 0, (around.length ? 1 : 0) + length);
    if (attempt < 7 && special.some(Boolean)) {
      for (let t = length - 1; t >= 0; t--) if (special[t]) tokens.splice(t, 1);
      continue;
    }
    const lead = around.length ? 1 : 0;
    const scores = inductionScores(result, lead, length);
    const [, heads, n] = result.shape;
    const ranking = Array.from(scores, (score, k) => ({ layer: Math.floor(k / heads), head: k % heads, score }));
    ranking.sort((a, b) => b.score - a.score);
    // Uniform attention over the keys each query may see.
    let baseline = 0;
    for (let t = 0; t < length; t++) baseline += 1 / (model.info.causal ? lead + length + t + 1 : n);
    const kept: Kept = {
      mode: 'model',
      ...result,
      result,
      causal: model.info.causal,
      truncated: false,
      totalTokens: n,
    };
    return { kept, result: { id: request.id, kind: 'induction', length, ranking, baseline: baseline / length } };
  }
  throw new Error('Find induction heads: could not draw tokens that are not special');
}
