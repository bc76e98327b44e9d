// The navigator's thumbnails: every map the run holds, max-pooled to at most 64 × 64 blocks (pooled.ts) and
// coloured into a small picture each. A new run folds its rows in a few milliseconds at a time (slices.ts), so
// the grid fills in while the page stays responsive; on a causal model the rows a run shares with the one shown
// (the same tokens up to there: typing at the end) are kept, not folded again. A generated token folds its one
// row into each map. Painting a thumbnail costs its 64 × 64 blocks at most, never the map's n².
import { rowOf, slotOf, type Maps } from '../map-rows.js';
import { sliced, type Sliced } from '../slices.js';
import { table, viridis } from './heatmap.js';
import { blockFor, Pooled } from './pooled.js';

const CELLS = 64;

/** What the thumbnails are of: the maps, the ids of their tokens, and what else decides their rows. */
export interface ThumbnailSource {
  maps: Maps;
  ids: readonly number[];
  /** Model, mode and layers held: rows can be kept only between runs with the same key. */
  key: string;
  /** Row i depends only on tokens 0 … i: a run on the same first tokens has the same first rows. */
  causal: boolean;
}

interface Picture {
  canvas: OffscreenCanvas;
  context: OffscreenCanvasRenderingContext2D;
  image: ImageData;
  /** Block rows from here on changed since they were coloured. */
  dirty: number;
}

export class Thumbnails {
  private source: ThumbnailSource | null = null;
  private pooled: Pooled[] = [];
  private pictures: Picture[] = [];
  /** Rows of every map folded in so far. */
  private rows = 0;
  private job: Sliced | null = null;
  private readonly colour = table(viridis, 0, 1);

  /** `progress` is called whenever more rows are in (the grid then repaints). */
  constructor(private readonly progress: () => void) {}

  /** Brings the thumbnails to `next`: its new rows only when it grew from the source shown, else a sliced fold. */
  update(next: ThumbnailSource): void {
    const before = this.source;
    const [, heads, n, m] = next.maps.shape;
    const count = next.maps.shape[0] * heads;
    this.source = next;
    if (before && before.maps.attentions === next.maps.attentions && before.key === next.key && this.job?.done) {
      // Grown (generation): the same run's blocks and more rows.
      this.grow(n);
      this.fold(this.rows, n);
      this.rows = n;
      return;
    }
    this.job?.cancel();
    const block = blockFor(Math.max(n, m), CELLS); // keys may outnumber queries (cross-attention)
    let keep = 0;
    if (before && next.causal && before.key === next.key && this.pooled[0]?.block === block) {
      const same = Math.min(this.rows, before.ids.length, next.ids.length, n);
      while (keep < same && before.ids[keep] === next.ids[keep]) keep++;
      keep = Math.floor(keep / block) * block; // whole block rows only: the one the rows differ in is folded again
    }
    const old = this.pooled;
    this.pooled = Array.from({ length: count }, (_, k) => {
      const p = new Pooled(block, CELLS * block);
      if (keep) p.data.set(old[k].data.subarray(0, (keep / block) * p.size));
      return p;
    });
    this.pictures = [];
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
  private grow(n: number): void {
    if (this.pooled[0]?.holds(n) !== false) return;
    const factor = blockFor(n, CELLS) / this.pooled[0].block;
    this.pooled = this.pooled.map((p) => p.coarser(factor, CELLS * p.block * factor));
    this.pictures = [];
  }

  /** Folds rows [from, to) of every map in. */
  private fold(from: number, to: number): void {
    const { maps } = this.source!;
    const [held, heads] = maps.shape;
    for (let i = from; i < to; i++)
      for (let slot = 0, k = 0; slot < held; slot++)
        for (let h = 0; h < heads; h++, k++) {
          const p = this.pooled[k];
          p.add(i, rowOf(maps, slot, h, i));
          const picture = this.pictures[k];
          if (picture) picture.dirty = Math.min(picture.dirty, Math.floor(i / p.block));
        }
  }

  /** (layer, head)'s thumbnail, coloured up to date; null when the maps do not hold that layer. */
  picture(layer: number, head: number): OffscreenCanvas | null {
    const s = this.source;
    if (!s) return null;
    const slot = slotOf(s.maps, layer);
    if (slot < 0) return null;
    const k = slot * s.maps.shape[1] + head;
    const p = this.pooled[k];
    const used = Math.ceil(s.maps.shape[2] / p.block),
      wide = Math.ceil(s.maps.shape[3] / p.block);
    let picture = this.pictures[k];
    if (!picture) {
      const canvas = new OffscreenCanvas(wide, used);
      picture = { canvas, context: canvas.getContext('2d')!, image: new ImageData(wide, used), dirty: 0 };
      this.pictures[k] = picture;
    } else if (picture.canvas.width !== wide || picture.canvas.height !== used) {
      // A growing map's blocks fill one more row and column: the same canvas and context, resized.
      [picture.canvas.width, picture.canvas.height] = [wide, used];
      picture.image = new ImageData(wide, used);
      picture.dirty = 0;
    }
    if (picture.dirty < used) {
      const out = new Uint32Array(picture.image.data.buffer);
      for (let r = picture.dirty; r < used; r++)
        for (let c = 0; c < wide; c++) out[r * wide + c] = this.colour(p.data[r * p.size + c]);
      picture.context.putImageData(picture.image, 0, 0, 0, picture.dirty, wide, used - picture.dirty);
      picture.dirty = used;
    }
    return picture.canvas;
  }

  /** Whether every row is in (tests wait for it). */
  get complete(): boolean {
    return !!this.source && this.rows >= this.source.maps.shape[2];
  }
}
