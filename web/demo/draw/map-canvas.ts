// The large map: one n × n matrix (a head's weights, or rollout/flow; n × n_k in cross-attention) with the query
// tokens' labels on the rows and the key tokens' on the columns, drawn through a viewport. A frame colours only the
// cells in view: one pixel per cell while cells are at least a device pixel, else the blocks of the map's max-pooled
// level (pooled.ts) whose blocks are, so a frame costs the pixels in view, whatever n. Labels thin out to every k-th
// token when they would overlap; the hovered row and column are highlighted and always labelled.
import { colourBar, domain, table, viridis, type Colour } from './heatmap.js';
import { Pyramid, sharedRows, type MapRows } from './pooled.js';
import type { Viewport } from './viewport.js';

const NICE = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000];

export interface MapFrame {
  map: MapRows;
  /** What the map is of: its maps (or rollout's matrix) and which head; a new one builds its pooled levels anew. */
  source: unknown;
  key: string;
  /** The rows' (queries') labels. */
  tokens: string[];
  /** The columns' (keys') labels, where they are another text's (cross-attention); absent: `tokens`. */
  keyTokens?: string[];
  colour?: Colour;
  /** Stretch the colours from 0 to what the cells in view reach ("0–max"), not to 1. */
  stretch: boolean;
  /** Whether query i sees only keys 0 … i: the stretch then reads only those. */
  causal: boolean;
  hover: { i: number; j: number } | null;
  cursor: { i: number; j: number } | null;
  /** A token picked elsewhere (chips): its row is marked. */
  token: number | null;
  /** A local layer's sliding window: query i sees keys i − window + 1 … i, and a dashed line marks the edge. */
  window?: number;
  colours: { fg: string; muted: string; accent: string };
  /**
   * What a causal map's rows depend on: row i on the first i + 1 `ids` alone, under `of` (the model). A new map of
   * the same `of` and `key` whose ids start the same keeps those rows' pooled levels: typing at the end of a long
   * text folds only the rows after the edit.
   */
  lineage?: { of: unknown; ids: readonly number[] };
}

/** Room for labels on each axis, by canvas width (CSS pixels). */
export const labelRoom = (width: number) => Math.round(Math.min(110, Math.max(56, width * 0.16)));

/**
 * What a frame draws with, kept between frames: the shown map's pooled levels (built when first needed, grown
 * as the map grows) and the picture of the cells in view, reused while its size stays.
 */
export class MapCanvas {
  private shown: { source: unknown; key: string; lineage?: MapFrame['lineage'] } | null = null;
  private pyramid: Pyramid | null = null;
  private picture: { canvas: OffscreenCanvas; context: OffscreenCanvasRenderingContext2D; image: ImageData } | null =
    null;
  /** The colour scale's top in the last frame. */
  top = 1;

  /**
   * The pooled levels of `map`: the same `source` and `key` (a run's maps and a head in them) with rows added
   * since (generation) keeps its levels and folds the new rows in; a causal map that shares its first rows with
   * the last one (`lineage`) keeps those; anything else builds them anew.
   */
  levels(map: MapRows, source: unknown, key: string, lineage?: MapFrame['lineage']): Pyramid {
    const shown = this.shown;
    const same = shown?.source === source && shown?.key === key;
    const capacity = 2 ** Math.ceil(Math.log2(Math.max(2, map.n, map.cols))); // a square pyramid holds a rectangle
    const before = shown?.key === key && shown.lineage?.of === lineage?.of ? shown.lineage?.ids : undefined;
    if (!same && before && lineage && this.pyramid?.capacity === capacity) {
      this.pyramid.keep(sharedRows(before, lineage.ids, map.n));
    } else if (same && this.pyramid && map.n >= this.pyramid.rows && capacity > this.pyramid.capacity)
      this.pyramid = this.pyramid.widened(capacity); // a generation's map past a power of 2
    else if (!this.pyramid || !same || map.n < this.pyramid.rows || capacity > this.pyramid.capacity)
      this.pyramid = new Pyramid(capacity);
    this.shown = { source, key, lineage };
    this.pyramid.extend(map);
    return this.pyramid;
  }

  /** A picture of w × h pixels to colour into. */
  image(
    w: number,
    h: number,
  ): { canvas: OffscreenCanvas; context: OffscreenCanvasRenderingContext2D; image: ImageData } {
    if (this.picture?.image.width !== w || this.picture.image.height !== h) {
      const canvas = new OffscreenCanvas(w, h);
      this.picture = { canvas, context: canvas.getContext('2d')!, image: new ImageData(w, h) };
    }
    return this.picture;
  }
}

/** The cells of a grid a frame reads: rows and columns [r0, r1) × [c0, c1), each from `row(r)`. */
interface Region {
  rows: [number, number];
  cols: [number, number];
  row(r: number): Float32Array;
}

const BINS = 2048;
const histogram = new Uint32Array(BINS);

/**
 * "0–max": the weight the brightest colour stands for, read off the cells in view: the 99th percentile of their
 * weights above 0, leaving out each query's first key and its own position, where attention piles up (a causal
 * map's first row is always 1, and a sink column draws most rows), and on causal maps the keys a query cannot
 * see. Weights above it show at full colour. At a pooled level the same, by blocks: the first column of blocks
 * and the diagonal ones are left out. 1 when nothing is left.
 */
export function stretchTop(region: Region, causal: boolean, self = true): number {
  histogram.fill(0);
  let count = 0,
    largest = 0;
  for (let r = region.rows[0]; r < region.rows[1]; r++) {
    const row = region.row(r);
    const end = Math.min(region.cols[1], causal ? r + 1 : Infinity, row.length);
    // Across texts no key is the query's own, and the first key is an ordinary one.
    for (let c = Math.max(region.cols[0], self ? 1 : 0); c < end; c++) {
      if (self && c === r) continue;
      const v = row[c];
      if (!(v > 0)) continue;
      if (v > largest) largest = v;
      histogram[Math.min(BINS - 1, Math.floor(Math.sqrt(v) * BINS))]++;
      count++;
    }
  }
  if (!count) return 1;
  let seen = 0,
    k = 0;
  const want = 0.99 * count;
  for (; k < BINS - 1 && seen + histogram[k] < want; k++) seen += histogram[k];
  const top = ((k + 1) / BINS) ** 2;
  return Math.min(top, largest);
}

/** Colours `region` into a picture, one pixel per cell, with `gain` = 1 / the scale's top. */
function colourRegion(target: ImageData, region: Region, colour: Colour, gain: number): void {
  const out = new Uint32Array(target.data.buffer);
  const rgba = table(colour, ...domain(colour));
  const [c0, c1] = region.cols;
  const w = c1 - c0;
  const zero = rgba(0);
  for (let r = region.rows[0], at = 0; r < region.rows[1]; r++, at += w) {
    const row = region.row(r);
    const end = Math.min(c1, row.length);
    let c = c0;
    for (; c < end; c++) out[at + c - c0] = rgba(row[c] * gain);
    for (; c < c1; c++) out[at + c - c0] = zero; // past a causal row's end
  }
}

/** Shortens text with an ellipsis to fit `max` pixels. */
function fit(ctx: CanvasRenderingContext2D, text: string, max: number): string {
  if (ctx.measureText(text).width <= max) return text;
  let end = text.length;
  while (end > 1 && ctx.measureText(`${text.slice(0, end)}…`).width > max) end = Math.floor(end * 0.8);
  return `${text.slice(0, end)}…`;
}

/**
 * Draws a frame on `ctx` (CSS pixels, `width` × `height`, `dpr` device pixels each) from the cells in view.
 * Returns how many cells (or blocks) it coloured.
 */
export function drawMap(
  ctx: CanvasRenderingContext2D,
  width: number,
  height: number,
  f: MapFrame,
  vp: Viewport,
  canvas: MapCanvas,
  dpr = 1,
): number {
  const n = f.tokens.length,
    m = f.keyTokens?.length ?? n;
  const { box } = vp;
  const colour = f.colour ?? viridis;
  ctx.clearRect(0, 0, width, height);
  const rows = vp.visible('rows'),
    cols = vp.visible('cols');
  // The finest level whose blocks cover at least a device pixel.
  let block = 1;
  while (vp.cell * block * dpr < 1 && block < Math.max(n, m)) block *= 2;
  const level = block > 1 ? canvas.levels(f.map, f.source, f.key, f.lineage).level(block) : null;
  const region: Region = level
    ? {
        rows: [Math.floor(rows[0] / block), Math.ceil(rows[1] / block)],
        cols: [Math.floor(cols[0] / block), Math.ceil(cols[1] / block)],
        row: (r) => level.row(r),
      }
    : { rows, cols, row: (i) => f.map.row(i) };
  if (!level) block = 1;
  const top = f.stretch ? stretchTop(region, f.causal, !f.keyTokens) : 1;
  canvas.top = top;
  const [w, h] = [region.cols[1] - region.cols[0], region.rows[1] - region.rows[0]];
  ctx.save();
  ctx.beginPath();
  // The plot box, and within it the map's own extent (a last block may reach past the last token).
  const right = Math.min(box.x + box.w, vp.x(m)),
    bottom = Math.min(box.y + box.h, vp.y(n));
  ctx.rect(box.x, box.y, right - box.x, bottom - box.y);
  ctx.clip();
  if (w > 0 && h > 0) {
    const picture = canvas.image(w, h);
    colourRegion(picture.image, region, colour, 1 / top);
    picture.context.putImageData(picture.image, 0, 0);
    ctx.imageSmoothingEnabled = false; // a cell or block covers at least a device pixel
    ctx.drawImage(
      picture.canvas,
      vp.x(region.cols[0] * block),
      vp.y(region.rows[0] * block),
      w * block * vp.cell,
      h * block * vp.cell,
    );
  }
  marks(ctx, f, vp);
  ctx.restore();
  labels(ctx, f, vp, rows, cols);
  // The colour bar, in the corner the two axes leave free.
  const bar = {
    x: box.x - Math.min(box.x, 110) + 10,
    y: Math.round(box.y / 2) - 2,
    w: Math.min(box.x, 110) - 24,
    h: 8,
  };
  ctx.fillStyle = f.colours.muted;
  ctx.font = '10px system-ui, sans-serif';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'bottom';
  ctx.fillText(f.stretch ? 'weight (0–max in view)' : 'weight', bar.x, bar.y - 3);
  const format = (t: number) => (top < 1 ? t.toPrecision(2) : String(t));
  const ticks = top < 1 ? [0, top] : [0, 0.5, 1];
  colourBar(ctx, bar, { colour, lo: 0, hi: top, ticks, format }, f.colours.fg);
  return w * h;
}

/** The hovered row and column, the picked token's row, and the keyboard's cell. */
function marks(ctx: CanvasRenderingContext2D, f: MapFrame, vp: Viewport): void {
  const { box, cell } = vp;
  ctx.lineWidth = 1.5;
  const band = (i: number | null, j: number | null, colour: string) => {
    ctx.strokeStyle = colour;
    if (i !== null) ctx.strokeRect(box.x, vp.y(i), box.w, cell);
    if (j !== null) ctx.strokeRect(vp.x(j), box.y, cell, box.h);
  };
  if (f.token !== null) band(f.token, null, f.colours.muted);
  const w = f.keyTokens ? 0 : (f.window ?? 0);
  const n = f.tokens.length;
  if (w > 0 && w < n) {
    // Between key i − window (hidden) and i − window + 1 (seen), from row `window` down to the last row.
    ctx.save();
    ctx.setLineDash([5, 4]);
    ctx.lineWidth = 1.5;
    ctx.strokeStyle = f.colours.accent;
    ctx.beginPath();
    for (let i = w; i < n; i++) {
      const x = vp.x(i - w + 1);
      if (i === w) ctx.moveTo(x, vp.y(i));
      else ctx.lineTo(x, vp.y(i));
      ctx.lineTo(x, vp.y(i + 1));
    }
    ctx.stroke();
    ctx.restore();
  }
  if (f.hover && cell >= 3) band(f.hover.i, f.hover.j, f.colours.accent);
  if (f.cursor) {
    ctx.lineWidth = 2;
    ctx.strokeStyle = f.colours.fg;
    ctx.strokeRect(vp.x(f.cursor.j) - 1, vp.y(f.cursor.i) - 1, cell + 2, cell + 2);
  }
}

/** The labels' font size for a cell size: three quarters of it, from 9 to 13 px. */
const labelSize = (cell: number) => Math.max(9, Math.min(13, cell * 0.75));

/**
 * Which tokens are labelled at a cell size: every k-th, k as small as leaves a pixel between one label's text and
 * the next (so a 10 px row takes every 9 px label; 8 px rows, every other one).
 */
export const labelStep = (cell: number) => {
  const need = labelSize(cell) + 1;
  return NICE.find((k) => k * cell >= need) ?? Math.ceil(need / cell);
};

/** Every k-th visible token on each axis (k as small as keeps them apart), and the hovered ones. */
function labels(ctx: CanvasRenderingContext2D, f: MapFrame, vp: Viewport, rows: number[], cols: number[]): void {
  const { box, cell } = vp;
  const size = labelSize(cell);
  const step = labelStep(cell);
  ctx.font = `${size}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  const room = box.x - 10;
  const label = (axis: 'row' | 'col', t: number, strong: boolean) => {
    const text = fit(ctx, (axis === 'col' ? (f.keyTokens ?? f.tokens) : f.tokens)[t], room);
    const mid = (axis === 'row' ? vp.y(t) : vp.x(t)) + cell / 2;
    ctx.save();
    // Row labels end at the map; column labels start at it and read upwards.
    if (axis === 'col') {
      ctx.translate(mid, box.y - 6);
      ctx.rotate(-Math.PI / 2);
    } else ctx.translate(box.x - 6, mid);
    ctx.textAlign = axis === 'row' ? 'right' : 'left';
    if (strong) {
      const w = ctx.measureText(text).width + 6;
      ctx.fillStyle = f.colours.accent;
      ctx.fillRect(axis === 'row' ? -w + 3 : -3, -size / 2 - 2, w, size + 4);
    }
    ctx.fillStyle = strong ? '#fff' : f.colours.fg;
    ctx.fillText(text, 0, 0);
    ctx.restore();
  };
  const axis = (which: 'row' | 'col', [first, end]: number[], hovered: number | undefined) => {
    ctx.save();
    ctx.beginPath();
    if (which === 'row') ctx.rect(0, box.y, box.x, box.h);
    else ctx.rect(box.x, 0, box.w, box.y);
    ctx.clip();
    for (let t = Math.ceil(first / step) * step; t < end; t += step) if (t !== hovered) label(which, t, false);
    if (hovered !== undefined) label(which, hovered, true);
    ctx.restore();
  };
  axis('row', rows, f.hover?.i);
  axis('col', cols, f.hover?.j);
}
