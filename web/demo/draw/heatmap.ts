// Heatmaps on canvas, coloured with viridis (perceptually uniform, colour-blind safe) or a red–blue
// diverging scale; and the colour bars, with ticks, that say what the colours mean.
// Canvas, not SVG: 2,048 tokens are 4 million cells.

// Viridis at nine stops, interpolated linearly.
const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725'].map(
  (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)),
);

export type Colour = (t: number) => [number, number, number];

export const viridis: Colour = (t) => {
  const x = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - i;
  const [r, g, b] = VIRIDIS[i].map((c, k) => Math.round(c + f * (VIRIDIS[i + 1][k] - c)));
  return [r, g, b];
};

/** Red for positive, blue for negative, white at 0 (ColorBrewer RdBu's ends): for differences in [−1, 1]. */
export const diverging: Colour = (t) => {
  const x = Math.min(Math.max(t, -1), 1);
  const end = x >= 0 ? [178, 24, 43] : [33, 102, 172];
  const f = Math.abs(x);
  return [0, 1, 2].map((k) => Math.round(247 + f * (end[k] - 247))) as [number, number, number];
};

const STEPS = 1024;
const tables = new Map<Colour, { lo: number; hi: number; rgba: Uint32Array }>();

/** The colour of every value as one 32-bit RGBA word, from a 1,024-step table over [lo, hi]. */
export function table(colour: Colour, lo: number, hi: number): (x: number) => number {
  let t = tables.get(colour);
  if (!t || t.lo !== lo || t.hi !== hi) {
    const rgba = new Uint32Array(STEPS + 1);
    const bytes = new Uint8Array(rgba.buffer);
    for (let s = 0; s <= STEPS; s++) {
      bytes.set([...colour(lo + ((hi - lo) * s) / STEPS), 255], s * 4);
    }
    t = { lo, hi, rgba };
    tables.set(colour, t);
  }
  const { rgba } = t;
  const k = STEPS / (hi - lo);
  // Not a number, or ±∞ (a masked score): transparent, so the background shows.
  return (x) => (Number.isFinite(x) ? rgba[Math.min(STEPS, Math.max(0, Math.round((x - lo) * k)))] : 0);
}

/** Whether a colour scale spans [0, 1] (viridis, weights) or [−1, 1] (diverging, differences). */
export const domain = (colour: Colour): [number, number] => (colour === diverging ? [-1, 1] : [0, 1]);

/** Rows [r0, r1) × columns [c0, c1) of a row-major matrix with `stride` columns, one pixel per cell. */
export function cellImage(
  values: Float32Array,
  stride: number,
  rows: [number, number],
  cols: [number, number],
  colour: Colour = viridis,
  /** Values are multiplied by this before colouring: 1 / max stretches a map of small weights. */
  gain = 1,
): OffscreenCanvas {
  const [r0, r1] = rows;
  const [c0, c1] = cols;
  const w = Math.max(1, c1 - c0),
    h = Math.max(1, r1 - r0);
  const image = new ImageData(w, h);
  const out = new Uint32Array(image.data.buffer);
  const rgba = table(colour, ...domain(colour));
  for (let i = r0; i < r1; i++) {
    const row = i * stride;
    const at = (i - r0) * w - c0;
    for (let j = c0; j < c1; j++) out[at + j] = rgba(values[row + j] * gain);
  }
  const tile = new OffscreenCanvas(w, h);
  tile.getContext('2d')!.putImageData(image, 0, 0);
  return tile;
}

export type Box = { x: number; y: number; w: number; h: number };

/** Paints a rows×cols matrix into `box`: one pixel per cell, then scaled, crisp when cells are large. */
export function paintGrid(
  ctx: CanvasRenderingContext2D,
  values: Float32Array,
  rows: number,
  cols: number,
  box: Box,
  colour: Colour = viridis,
): void {
  const tile = cellImage(values, cols, [0, rows], [0, cols], colour);
  ctx.imageSmoothingEnabled = box.w < cols; // averaging when several cells share a pixel
  ctx.drawImage(tile, box.x, box.y, box.w, box.h);
}

/** Paints an n×n matrix into a square at (x, y). */
export function paintMatrix(
  ctx: CanvasRenderingContext2D,
  values: Float32Array,
  n: number,
  x: number,
  y: number,
  size: number,
  colour: Colour = viridis,
): void {
  paintGrid(ctx, values, n, n, { x, y, w: size, h: size }, colour);
}

/**
 * A horizontal colour bar in `box` with a tick and a label under it at each of `ticks`
 * (values within [lo, hi]), and a title to its left. Part of the figure, so exports carry it.
 */
export function colourBar(
  ctx: CanvasRenderingContext2D,
  box: Box,
  scale: { colour?: Colour; lo: number; hi: number; ticks: number[]; title?: string; format?: (x: number) => string },
  fg: string,
): void {
  const { colour = viridis, lo, hi, ticks, title, format = (x) => String(Math.round(x * 100) / 100) } = scale;
  const steps = Math.max(2, Math.round(box.w));
  const strip = new Float32Array(steps).map((_, s) => lo + ((hi - lo) * s) / (steps - 1));
  const [dlo, dhi] = domain(colour);
  const normal = strip.map((x) => dlo + ((x - lo) / (hi - lo || 1)) * (dhi - dlo));
  paintGrid(ctx, normal, 1, steps, box, colour);
  ctx.fillStyle = ctx.strokeStyle = fg;
  ctx.lineWidth = 1;
  ctx.font = '10px system-ui, sans-serif';
  ctx.textBaseline = 'top';
  ctx.textAlign = 'center';
  ticks.forEach((t, k) => {
    const x = box.x + ((t - lo) / (hi - lo || 1)) * box.w;
    ctx.fillRect(x - 0.5, box.y + box.h, 1, 3);
    // The end labels stay within the bar's width, clear of a neighbouring figure's.
    ctx.textAlign = k === 0 ? 'left' : k === ticks.length - 1 ? 'right' : 'center';
    ctx.fillText(format(t), x, box.y + box.h + 4);
  });
  if (title) {
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    ctx.fillText(title, box.x - 6, box.y + box.h / 2);
  }
}
