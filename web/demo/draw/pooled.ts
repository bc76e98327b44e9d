// Maps shrunk by the largest weight in each block × block square of cells (max-pooling): the navigator's
// thumbnails, and the large map when more tokens than pixels are in view. A block keeps the strongest weight it
// covers, so a thin diagonal or a sink column stays visible at any size, where averaging would fade it.
// Rows are added one at a time (a run's rows, then generation's), each at O(n): growing a map by a token costs
// its new row, never a pass over the whole map.

/** A map pooled into `block` × `block` squares: `data` [size, size], room for `size · block` tokens. */
export class Pooled {
  readonly size: number;
  readonly data: Float32Array;

  constructor(
    readonly block: number,
    capacity: number,
  ) {
    this.size = Math.max(1, Math.ceil(capacity / block));
    this.data = new Float32Array(this.size * this.size);
  }

  /** Whether a map of n tokens fits. */
  holds(n: number): boolean {
    return n <= this.size * this.block;
  }

  /**
   * Folds row `i` of a grid whose cells are `unit` tokens wide (1: the map itself; a finer Pooled's block) and
   * whose rows are `tall` tokens high (a finer Pooled's block too; 1 for a token's row pooled alone) into this
   * one's blocks: cells j·unit … (j + 1)·unit − 1 of the row go into block ⌊j·unit / block⌋. Cells past the row's
   * length are zeros (a causal row ends at its own token). `unit` is at most `block`.
   */
  add(i: number, row: Float32Array, unit = 1, tall = unit): void {
    const per = this.block / unit; // source cells per block
    const out = this.data;
    const at = Math.floor((i * tall) / this.block) * this.size;
    const end = Math.min(row.length, this.size * per);
    if (per === 1) {
      // A row pooled beforehand in this one's blocks (a generated token's, pooled in the worker).
      for (let j = 0; j < end; j++) if (row[j] > out[at + j]) out[at + j] = row[j];
      return;
    }
    if (per === 2) {
      // Every level of a pyramid: pairs (the loop below spends more on its bounds than on its two reads).
      let c = at,
        j = 0;
      for (; j + 1 < end; j += 2, c++) {
        const m = row[j] > row[j + 1] ? row[j] : row[j + 1];
        if (m > out[c]) out[c] = m;
      }
      if (j < end && row[j] > out[c]) out[c] = row[j];
      return;
    }
    for (let c = 0, j = 0; j < end; c++) {
      const stop = Math.min(j + per, end);
      let m = out[at + c];
      for (; j < stop; j++) if (row[j] > m) m = row[j];
      out[at + c] = m;
    }
  }

  /** Row r of the blocks, `size` long. */
  row(r: number): Float32Array {
    return this.data.subarray(r * this.size, (r + 1) * this.size);
  }

  /** The same map in blocks `factor` times as large (a power of 2), with room for `capacity` tokens. */
  coarser(factor: number, capacity: number): Pooled {
    const next = new Pooled(this.block * factor, capacity);
    for (let r = 0; r < this.size; r++) next.add(r, this.row(r), this.block);
    return next;
  }
}

/** The smallest block (a power of 2) that brings n tokens within `cells` blocks per side. */
export function blockFor(n: number, cells: number): number {
  let b = 1;
  while (Math.ceil(n / b) > cells) b *= 2;
  return b;
}

/** Blocks per side of a thumbnail (the navigator's: thumbnails.ts). */
export const THUMBNAIL_CELLS = 64;

/**
 * A generated token's row pooled as the thumbnails pool it, before they do (the worker does, so that the page gets
 * 64 values of each map a token, not the whole row): `row` in blocks of `block` weights into `out`, the largest of
 * each; `out` holds ⌈row.length / block⌉.
 */
export function poolRow(row: Float32Array, block: number, out: Float32Array): void {
  for (let c = 0, j = 0; j < row.length; c++) {
    const stop = Math.min(j + block, row.length);
    let m = row[j];
    for (j++; j < stop; j++) if (row[j] > m) m = row[j];
    out[c] = m;
  }
}

/**
 * How many rows two runs' causal maps of one model share: a decoder's row i depends on its first i + 1 token ids
 * alone, so the rows of the ids both runs begin with are the same (at most `limit`, the rows held). Typing at the
 * end of a text, or a generation, keeps those rows' pooled blocks.
 */
export function sharedRows(before: readonly number[], next: readonly number[], limit = Infinity): number {
  const most = Math.min(before.length, next.length, limit);
  let k = 0;
  while (k < most && before[k] === next[k]) k++;
  return k;
}

/** A map's rows, however they are held: row i has up to `cols` weights (those past its length are 0). */
export interface MapRows {
  /** Rows: the queries. */
  readonly n: number;
  /** Columns, the keys: n but in cross-attention, where they are another text's tokens. */
  readonly cols: number;
  row(i: number): Float32Array;
}

/**
 * Every level of one map from blocks of 2 up to a single block: the large map draws from the finest level whose
 * blocks cover at least one device pixel, so a frame costs the pixels in view. Built once per map shown (O(n²)),
 * then grown a row at a time; room for `capacity` tokens (a larger map needs a new pyramid).
 */
export class Pyramid {
  readonly levels: Pooled[] = [];
  /** The rows folded in so far. */
  rows = 0;

  constructor(readonly capacity: number) {
    for (let b = 2; b / 2 < capacity; b *= 2) this.levels.push(new Pooled(b, capacity));
  }

  /** Folds rows [rows, map.n) of the map in. */
  extend(map: MapRows): void {
    for (let i = this.rows; i < map.n; i++) this.add(i, map.row(i));
    this.rows = Math.max(this.rows, map.n);
  }

  /**
   * Keeps the first `rows` rows of the map (those another map shares: the same tokens up to there, on a causal
   * model) and forgets the rest, so that `extend` with the other map folds only its rows after them. Kept are the
   * rows up to an even count: each level then holds exactly those rows, its block that holds the last of them
   * built again from the finer level's blocks.
   */
  keep(rows: number): void {
    const kept = Math.min(this.rows, Math.floor(rows / 2) * 2);
    let finer: Pooled | null = null;
    for (const level of this.levels) {
      const last = Math.floor(kept / level.block); // the block row the kept rows end in
      level.data.fill(0, last * level.size);
      if (finer)
        for (let r = 2 * last; r < Math.min(2 * last + 2, Math.ceil(kept / finer.block)); r++)
          level.add(r, finer.row(r), finer.block);
      finer = level;
    }
    this.rows = kept;
  }

  /**
   * The same rows with room for `capacity` tokens (a power of 2 above this one's): each level's blocks copied to its
   * wider rows, and the coarser levels it adds folded from the finer ones. A growing map crossing a power of 2 then
   * costs a copy of its levels, not folding every row again.
   */
  widened(capacity: number): Pyramid {
    const next = new Pyramid(capacity);
    next.levels.forEach((level, k) => {
      const old = this.levels[k];
      const finer = next.levels[k - 1];
      if (old) for (let r = 0; r < old.size; r++) level.data.set(old.row(r), r * level.size);
      else for (let r = 0; r < finer.size; r++) level.add(r, finer.row(r), finer.block);
    });
    next.rows = this.rows;
    return next;
  }

  private add(i: number, row: Float32Array): void {
    let unit = 1,
      source = row,
      at = i;
    for (const level of this.levels) {
      level.add(at, source, unit);
      // The next level folds in this level's changed row, as far as this row reaches (a causal row ends early).
      at = Math.floor(at / (level.block / unit));
      source = level.row(at).subarray(0, Math.ceil(row.length / level.block));
      unit = level.block;
    }
  }

  /** The level with blocks of `block` tokens (a power of 2 from 2), or null if there is none so coarse. */
  level(block: number): Pooled | null {
    return this.levels[Math.log2(block) - 1] ?? null;
  }
}
