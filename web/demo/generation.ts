// Generation as the page sees it: the Generate button asks the worker to continue the shown run; each token
// arrives with its row of every map the page grows (and every map's row pooled for the thumbnails), and the maps
// grow by that row, kept beside the run's blocks (map-rows.ts): a token costs the page its rows, never a copy of the
// maps. The text streams into the continuation under the box;
// when it ends (its length, an end-of-text token, or Stop, which keeps what the page shows at the click) the box
// gets it as one edit, which the browser's undo takes back, and the page runs the final token ids once more,
// reusing the prompt's keys and values, for everything a run gives (the heads' measures, the logit lens).
// Typing or loading a model first keeps what was generated, then stops it: its later tokens no longer count
// (channel.ts), so none of them is ever shown.
import { layerMaps, slotOf } from './map-rows.js';
import type { RunResult, TokenMessage } from './protocol.js';
import type { Data, Generating } from './state.js';
import type { Page } from './views/view.js';

/**
 * The most memory a generation's new rows of every layer may take (bytes): each row is memory the page touches for
 * the first time, and a generation that would need more grows the shown layer's maps alone.
 */
const GROWN_BYTES = 64 << 20;

/**
 * Where a generation keeps the rows it grows the maps by: large blocks, each token's rows a view into one, so
 * that memory is taken a block at a time, not a new array per token.
 */
export class RowStore {
  private block = new Float32Array(0);
  private at = 0;

  take(length: number): Float32Array {
    if (this.at + length > this.block.length) {
      this.block = new Float32Array(Math.max(1 << 22, length)); // 16 MB
      this.at = 0;
    }
    return this.block.subarray(this.at, (this.at += length));
  }
}

/**
 * The run's maps with more tokens: each one's new rows of the layers they hold (the layers the generation asked
 * for, in the same order), copied beside the rest.
 */
export function grow(r: RunResult, t: TokenMessage, store: RowStore): RunResult {
  const [held, heads, n] = r.shape;
  const grown = t.tokens.map((_, k) => {
    const length = held * heads * (n + k + 1);
    const rows = store.take(length);
    rows.set(t.rows.subarray(t.offsets[k], t.offsets[k] + length));
    return rows;
  });
  const m = n + t.tokens.length;
  const first = n;
  const fresh = {
    first,
    count: t.tokens.length,
    pooled(k: number, layer: number, head: number) {
      const cells = Math.ceil((first + k + 1) / t.blocks[k]);
      const at = t.pooledAt[k] + (layer * heads + head) * cells;
      return t.rows.subarray(at, at + cells);
    },
    block: (k: number) => t.blocks[k],
  };
  return {
    ...r,
    fresh,
    run: -1, // the worker keeps no run of these maps: analyses wait for the run that follows
    tokens: [...r.tokens, ...t.tokens.map((x) => x.token)],
    pieces: [...r.pieces, ...t.tokens.map((x) => x.piece)],
    special: [...r.special, ...t.tokens.map((x) => x.special)],
    ids: [...r.ids, ...t.tokens.map((x) => x.tokenId)],
    grown: [...(r.grown ?? []), ...grown],
    shape: [held, heads, m, m],
    totalTokens: m,
    truncated: false,
    limit: undefined,
    reusedTokens: undefined,
    logitLens: undefined,
    origin: 'generation',
  };
}

/** The same run holding only `layer`'s maps (a copy of that layer's blocks). */
function onlyLayer(r: RunResult, layer: number): RunResult {
  const [, heads, n] = r.shape;
  return {
    ...r,
    attentions: layerMaps(r, slotOf(r, layer)).slice(),
    mapLayers: [layer],
    shape: [1, heads, n, n],
    trimmed: true,
  };
}

/** Why Generate cannot run on the shown run now, or null. */
export function cannotGenerate(page: Page): string | null {
  const s = page.store.get();
  const r = s.result;
  const cap = s.limit?.tokens;
  if (!r || cap === undefined) return null;
  if (r.mode === 'two-texts')
    return `Generate: a language model continues the text with its own self-attention; choose "The model's learned heads" first.`;
  if (r.truncated)
    return `Generate: the text is cut at ${r.tokens.length} of its ${r.totalTokens} tokens, this page's limit; generating would continue from the cut, not from the end of your text. Shorten the text first.`;
  if (r.tokens.length >= cap)
    return `Generate: the text already has the ${r.tokens.length} tokens this page runs at most.`;
  return null;
}

/** Starts generating after the shown run, with the page's sampling, seed and length. */
export function startGeneration(page: Page): void {
  const s = page.store.get();
  let r = s.result;
  // Not while a run of a newer text is on its way: the generation would continue the old one.
  if (!r || r.run < 0 || s.generation || r.origin === 'induction' || page.pending()) return;
  const refused = cannotGenerate(page);
  if (refused) {
    page.store.put({ errors: { ...s.errors, generate: refused } });
    return;
  }
  const maxNewTokens = Math.min(s.maxNewTokens, (s.limit?.tokens ?? Infinity) - r.tokens.length);
  // Every layer's maps of the final length would not fit, or their new rows would take more than the page keeps
  // for them: the page grows the shown layer's maps alone (the thumbnails still fold every layer's rows), and the
  // run after the generation brings the others.
  const n = r.tokens.length;
  const end = n + maxNewTokens;
  const grownBytes = 4 * r.mapLayers.length * r.shape[1] * ((end * (end + 1)) / 2 - (n * (n + 1)) / 2);
  if (s.limit && r.mapLayers.length > 1 && (end > s.limit.everyLayer || grownBytes > GROWN_BYTES))
    r = onlyLayer(r, s.layer);
  const layers = [...r.mapLayers];
  const request = page.ask({ kind: 'generate', run: r.run, maxNewTokens, seed: s.seed, layers, ...s.sampling });
  const errors = { ...s.errors };
  delete errors.generate;
  const generation = { request, layer: s.layer, prompt: s.text, text: '', tokens: 0 };
  page.store.put({ result: r, generation, generated: null, errors });
}

/**
 * A generation ended early (Stop, or an error): the page keeps what it shows, the grown maps' ids and the text so
 * far, and runs those ids; `data` goes along (the error).
 */
function keepShown(page: Page, g: Generating, r: RunResult, stopReason: string, data: Partial<Data> = {}): void {
  const s = page.store.get();
  const ids = r.ids;
  const generated = { ids, promptTokens: ids.length - g.tokens, seed: s.seed, sampling: s.sampling, stopReason };
  page.store.select({ text: g.prompt + g.text, ids }, { generated, generation: null, ...data });
}

/** What the channel's handlers do with generation's messages. */
export function generationHandlers(page: Page) {
  const { store } = page;
  let rows = new RowStore();
  return {
    token(t: TokenMessage) {
      const s = store.get();
      const g = s.generation;
      if (!g || t.id !== g.request || !s.result || t.tokens[0]?.position !== s.result.shape[2]) return;
      if (!g.tokens) rows = new RowStore(); // a new generation: the last one's blocks go with its maps
      const result = grow(s.result, t, rows);
      store.put({ result, generation: { ...g, text: t.text, tokens: g.tokens + t.tokens.length } });
    },
    finish(reply: { id: number; ids: number[]; promptTokens: number; stopReason: string; seed: number }) {
      const s = store.get();
      if (s.generation?.request !== reply.id) return;
      const { ids, promptTokens, stopReason, seed } = reply;
      // The final ids run once more (the prompt's part reused); its reply brings their text.
      const generated = { ids, promptTokens, seed, sampling: s.sampling, stopReason };
      store.select({ text: s.text + s.generation.text, ids }, { generated, generation: null });
    },
    /** Stop: the page keeps what it shows (its grown maps' ids and the text so far), and runs those ids. */
    stopped() {
      const s = store.get();
      if (s.generation && s.result) keepShown(page, s.generation, s.result, 'stop');
    },
    /** It failed: what it had shown is kept, as Stop keeps it, and the error says why it ended. */
    failed(message: string) {
      const s = store.get();
      const g = s.generation;
      const errors = { ...s.errors, generate: message };
      if (!g?.tokens || !s.result) return store.put({ generation: null, errors });
      keepShown(page, g, s.result, 'error', { errors });
    },
  };
}
