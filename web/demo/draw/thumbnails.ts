// The navigator's thumbnails: every map the run holds, max-pooled to at most 64 × 64 blocks (pooled.ts) and
// coloured into one canvas, a cell each (the atlas), that the grid draws from. A new run folds its rows in a few
// milliseconds at a time (slices.ts), so the grid fills in while the page stays responsive; on a causal model the
// rows a run shares with the one shown (the same tokens up to there: typing at the end) are kept, not folded
// again. A generated token folds its one row into each map, of every layer: the layers the page keeps whole
// (map-rows.ts) and, from the token's message, those it does not keep. Colouring a thumbnail costs its changed
// blocks (64 × 64 at most), never the map's n², and a frame puts the changed rows of the atlas once, whatever the
// number of heads.
import { rowOf, slotOf, type Maps } from '../map-rows.js';
import type { RunResult } from '../protocol.js';
import { sliced, type Sliced } from '../slices.js';
import { table, viridis } from './heatmap.js';
import { blockFor, Pooled, sharedRows, THUMBNAIL_CELLS as CELLS } from './pooled.js';

/** What the thumbnails are of: the maps, the ids of their tokens, and what else decides their rows. */
export interface ThumbnailSource {
  maps: Maps;
  ids: readonly number[];
  /** The model's layers. */
  layers: number;
  /** Model and mode: rows can be kept only between runs with the same key. */
  key: string;
  /** Row i depends only on ids 0 … i (map-rows.ts's ownRows): a run on the same first ids has the same first rows. */
  ownRows: boolean;
  /** A generation's newest rows of every layer, when the maps grew by them. */
  fresh?: RunResult['fresh'];
}

/**
 * Every thumbnail's picture in one canvas, a pixel a block: (layer, head) at column head, row layer, each cell
 * CELLS wide with a pixel's gutter, so that a smoothed thumbnail does not take its neighbour's edge.
 */
interface Atlas {
  canvas: OffscreenCanvas;
  context: OffscreenCanvasRenderingContext2D;
  image: ImageData;
  layers: number;
  heads: number;
}

const STRIDE = CELLS + 1;

/** Whether `next` is `before` with tokens added after it (or the same tokens). */
const continues = (before: readonly number[], next: readonly number[]) =>
  next.length >= before.length && sharedRows(before, next) === before.length;

export class Thumbnails {
  private source: ThumbnailSource | null = null;
  /** By (layer, head), layer · heads + head: absent for layers whose rows are not all in. */
  private pooled: (Pooled | undefined)[] = [];
  private atlas: Atlas | null = null;
  /** Per thumbnail: its block rows from here on changed since they were coloured, and the columns coloured. */
  private dirty: number[] = [];
  private coloured: number[] = [];
  /** Rows of every map folded in so far. */
  private rows = 0;
  private job: Sliced | null = null;
  private readonly scale = table(viridis, 0, 1);

  /** `progress` is called whenever more rows are in (the grid then repaints). */
  constructor(private readonly progress: () => void) {}

  /**
   * Brings the thumbnails to `next`. A generation's tokens (or the same tokens again) fold only their new rows,
   * each layer's from the maps or the generation's fresh rows (a layer with neither is dropped); anything else is a
   * sliced fold of the layers the maps hold, keeping the rows a causal run shares with the last one.
   */
  update(next: ThumbnailSource): void {
    const before = this.source;
    const [, heads, n, m] = next.maps.shape;
    this.source = next;
    // A layer the maps hold whose rows are not in: it folds from its first row.
    const missing = Array.from({ length: next.layers }, (_, l) => l).some(
      (l) => slotOf(next.maps, l) >= 0 && !this.pooled[l * heads],
    );
    if (
      before &&
      this.job?.done &&
      !missing &&
      before.key === next.key &&
      next.ownRows &&
      (next.fresh || next.ids.length === before.ids.length) &&
      continues(before.ids, next.ids)
    ) {
      this.coarsen(n);
      this.foldContinued(this.rows, n);
      this.rows = n;
      return;
    }
    this.job?.cancel();
    const block = blockFor(Math.max(n, m), CELLS); // keys may outnumber queries (cross-attention)
    let keep = 0;
    if (before && !missing && next.ownRows && before.key === next.key && this.pooled.find(Boolean)?.block === block) {
      keep = sharedRows(before.ids, next.ids, Math.min(this.rows, n));
      keep = Math.floor(keep / block) * block; // whole block rows only: the one the rows differ in is folded again
    }
    const old = this.pooled;
    this.pooled = Array.from({ length: next.layers * heads }, (_, k) => {
      if (slotOf(next.maps, Math.floor(k / heads)) < 0) return undefined;
      const p = new Pooled(block, CELLS * block);
      if (keep) p.data.set(old[k]!.data.subarray(0, (keep / block) * p.size));
      return p;
    });
    this.dirty = [];
    this.rows = keep;
    let row = keep;
    this.job = sliced(() => {
      if (row >= n) return true;
      this.fold(row, row + 1);
      this.rows = ++row;
      return row >= n;
    }, this.progress);
  }

  /** Coarser blocks when a growing map outgrows 64 of them. */
  private coarsen(n: number): void {
    const first = this.pooled.find(Boolean);
    if (first?.holds(n) !== false) return;
    const factor = blockFor(n, CELLS) / first.block;
    this.pooled = this.pooled.map((p) => p?.coarser(factor, CELLS * p.block * factor));
    this.dirty = [];
  }

  /** Folds rows [from, to) of every map the maps hold in. */
  private fold(from: number, to: number): void {
    const { maps, layers } = this.source!;
    const heads = maps.shape[1];
    for (let layer = 0; layer < layers; layer++) {
      const slot = slotOf(maps, layer);
      if (slot >= 0)
        for (let i = from; i < to; i++) for (let h = 0; h < heads; h++) this.add(layer, h, i, rowOf(maps, slot, h, i));
    }
  }

  /**
   * Folds rows [from, to) of the same tokens continued, every layer kept so far: from the generation's fresh rows,
   * pooled by the worker, else from the maps where they hold the layer; a layer whose rows are in neither is dropped
   * (another run away).
   */
  private foldContinued(from: number, to: number): void {
    const { maps, layers, fresh } = this.source!;
    const heads = maps.shape[1];
    const inFresh = !!fresh && fresh.first <= from && to <= fresh.first + fresh.count;
    for (let layer = 0; layer < layers; layer++) {
      if (!this.pooled[layer * heads]) continue;
      const slot = slotOf(maps, layer);
      if (slot < 0 && !inFresh && from < to) {
        for (let h = 0; h < heads; h++) this.pooled[layer * heads + h] = undefined;
        continue;
      }
      for (let i = from; i < to; i++)
        for (let h = 0; h < heads; h++)
          if (inFresh) {
            const k = i - fresh.first;
            this.add(layer, h, i, fresh.pooled(k, layer, h), fresh.block(k));
          } else this.add(layer, h, i, rowOf(maps, slot, h, i));
    }
  }

  /** Folds row i of (layer, head), in cells of `unit` weights (a row pooled beforehand), into its thumbnail. */
  private add(layer: number, head: number, i: number, row: Float32Array, unit = 1): void {
    const k = layer * this.source!.maps.shape[1] + head;
    const p = this.pooled[k]!;
    p.add(i, row, unit, 1);
    this.dirty[k] = Math.min(this.dirty[k] ?? 0, Math.floor(i / p.block));
  }

  /**
   * Colours every thumbnail's changed blocks into the atlas, with one putImageData, and returns the atlas (null
   * before any run): `picture` says where each thumbnail is in it.
   */
  paintAtlas(): OffscreenCanvas | null {
    const s = this.source;
    if (!s) return null;
    const [, heads, n, m] = s.maps.shape;
    let atlas = this.atlas;
    if (atlas?.layers !== s.layers || atlas.heads !== heads) {
      const canvas = new OffscreenCanvas(STRIDE * heads, STRIDE * s.layers);
      const image = new ImageData(canvas.width, canvas.height);
      atlas = this.atlas = { canvas, context: canvas.getContext('2d')!, image, layers: s.layers, heads };
      this.dirty = [];
    }
    const out = new Uint32Array(atlas.image.data.buffer);
    const width = atlas.canvas.width;
    let top = Infinity,
      bottom = -Infinity;
    this.pooled.forEach((p, k) => {
      if (!p) return;
      const used = Math.ceil(n / p.block),
        wide = Math.ceil(m / p.block);
      // Columns of blocks more (a map grown past a block's edge): the rows coloured before get their new cells
      // (zeros above a causal map's diagonal), the changed rows all of theirs.
      const before = this.dirty[k] === undefined ? 0 : Math.min(this.coloured[k] ?? 0, wide);
      const from = Math.min(this.dirty[k] ?? 0, used);
      this.coloured[k] = wide;
      if (from >= used && before >= wide) return;
      const [x0, y0] = [(k % heads) * STRIDE, Math.floor(k / heads) * STRIDE];
      for (let r = 0; r < used; r++)
        for (let c = r < from ? before : 0; c < wide; c++)
          out[(y0 + r) * width + x0 + c] = this.scale(p.data[r * p.size + c]);
      [top, bottom] = [Math.min(top, y0 + (before < wide ? 0 : from)), Math.max(bottom, y0 + used)];
      this.dirty[k] = used;
    });
    if (top < bottom) atlas.context.putImageData(atlas.image, 0, 0, 0, top, width, bottom - top);
    return atlas.canvas;
  }

  /** Where (layer, head)'s thumbnail is in the atlas, a pixel a block; null when its rows are not in. */
  picture(layer: number, head: number): { x: number; y: number; width: number; height: number } | null {
    const s = this.source;
    const p = s && this.pooled[layer * s.maps.shape[1] + head];
    if (!p) return null;
    const [, , n, m] = s.maps.shape;
    return { x: head * STRIDE, y: layer * STRIDE, width: Math.ceil(m / p.block), height: Math.ceil(n / p.block) };
  }

  /**
   * For the browser tests: each (layer, head)'s blocks in use, row-major, null where its rows are not in; `block`
   * tokens a side; how many blocks in use the atlas, as last painted, shows in another colour than their own; and
   * whether a sliced fold is still bringing rows in (until it ends, the atlas trails it by up to a frame).
   */
  snapshot(): { block: number; blocks: (number[] | null)[]; stale: number; folding: boolean } {
    const s = this.source;
    const first = this.pooled.find(Boolean);
    const folding = !!this.job && !this.job.done;
    if (!s || !first) return { block: 0, blocks: [], stale: 0, folding };
    const [, heads] = s.maps.shape;
    const used = Math.ceil(s.maps.shape[2] / first.block),
      wide = Math.ceil(s.maps.shape[3] / first.block);
    const blocks = this.pooled.map((p) =>
      p ? Array.from({ length: used * wide }, (_, k) => p.data[Math.floor(k / wide) * p.size + (k % wide)]) : null,
    );
    let stale = 0;
    const shown = this.atlas && new Uint32Array(this.atlas.image.data.buffer);
    this.pooled.forEach((p, k) => {
      const [x0, y0] = [(k % heads) * STRIDE, Math.floor(k / heads) * STRIDE];
      for (let r = 0; p && shown && r < used; r++)
        for (let c = 0; c < wide; c++)
          if (shown[(y0 + r) * this.atlas!.canvas.width + x0 + c] !== this.scale(p.data[r * p.size + c])) stale++;
    });
    return { block: first.block, blocks, stale, folding };
  }

  /** Whether every row is in (tests wait for it). */
  get complete(): boolean {
    return !!this.source && this.rows >= this.source.maps.shape[2];
  }
}
