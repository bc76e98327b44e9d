// Canvas heatmaps of attention weights, coloured with viridis (perceptually
// uniform, colour-blind safe). Canvas, not SVG: 512 tokens are 262,144 cells.

// Viridis at nine stops, interpolated linearly.
const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725'].map(
  (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)),
);

export function viridis(t: number): [number, number, number] {
  const x = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - i;
  const [r, g, b] = VIRIDIS[i].map((c, k) => Math.round(c + f * (VIRIDIS[i + 1][k] - c)));
  return [r, g, b];
}

// Red for positive, blue for negative, white at 0 (ColorBrewer RdBu's ends): for differences in [−1, 1].
export function diverging(t: number): [number, number, number] {
  const x = Math.min(Math.max(t, -1), 1);
  const end = x >= 0 ? [178, 24, 43] : [33, 102, 172];
  const f = Math.abs(x);
  return [0, 1, 2].map((k) => Math.round(247 + f * (end[k] - 247))) as [number, number, number];
}

export type Colour = (t: number) => [number, number, number];

/** Paints a rows×cols matrix into `ctx` at (x, y), w × h pixels, one pixel block per cell. */
export function paintGrid(
  ctx: CanvasRenderingContext2D,
  values: Float32Array,
  offset: number,
  rows: number,
  cols: number,
  box: { x: number; y: number; w: number; h: number },
  colour: Colour = viridis,
): void {
  // Draw at one pixel per cell, then scale: fast for any n, crisp with smoothing off.
  const image = new ImageData(cols, rows);
  for (let i = 0; i < rows * cols; i++) {
    const [r, g, b] = colour(values[offset + i]);
    image.data.set([r, g, b, 255], i * 4);
  }
  const tile = new OffscreenCanvas(cols, rows);
  tile.getContext('2d')!.putImageData(image, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(tile, box.x, box.y, box.w, box.h);
}

/** Paints an n×n matrix into `ctx` at (x, y) with the given size. */
export function paintMatrix(
  ctx: CanvasRenderingContext2D,
  weights: Float32Array,
  offset: number,
  n: number,
  x: number,
  y: number,
  size: number,
  colour: Colour = viridis,
): void {
  paintGrid(ctx, weights, offset, n, n, { x, y, w: size, h: size }, colour);
}

export const LABEL = 110; // px reserved for token labels on each axis of the large map

/** The large map: one head's weights with token labels on both axes (queries down, keys across). */
export function drawHead(
  canvas: HTMLCanvasElement,
  weights: Float32Array,
  offset: number,
  tokens: string[],
  fg: string,
  colour: Colour = viridis,
): void {
  const ctx = canvas.getContext('2d')!;
  const size = canvas.width;
  const n = tokens.length;
  ctx.clearRect(0, 0, size, size);
  if (n === 0) return;
  const cell = (size - LABEL) / n;
  paintMatrix(ctx, weights, offset, n, LABEL, LABEL, size - LABEL, colour);
  if (cell < 6) return; // too many tokens to label legibly; hover shows them
  ctx.fillStyle = fg;
  ctx.font = `${Math.min(14, cell * 0.7)}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  for (let i = 0; i < n; i++) {
    ctx.textAlign = 'right';
    ctx.fillText(tokens[i], LABEL - 6, LABEL + (i + 0.5) * cell, LABEL - 8);
    ctx.save();
    ctx.translate(LABEL + (i + 0.5) * cell, LABEL - 6);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'left';
    ctx.fillText(tokens[i], 0, 0, LABEL - 8);
    ctx.restore();
  }
}

/** The cell (query row i, key column j) under a pointer event on the large map, or null. */
export function cellAt(canvas: HTMLCanvasElement, event: MouseEvent, n: number): { i: number; j: number } | null {
  const rect = canvas.getBoundingClientRect();
  const scale = canvas.width / rect.width;
  const cell = (canvas.width - LABEL) / n;
  const j = Math.floor(((event.clientX - rect.left) * scale - LABEL) / cell);
  const i = Math.floor(((event.clientY - rect.top) * scale - LABEL) / cell);
  return i >= 0 && j >= 0 && i < n && j < n ? { i, j } : null;
}

/** The colour scale from 0 to 1, left to right. */
export function drawLegend(canvas: HTMLCanvasElement): void {
  const ctx = canvas.getContext('2d')!;
  for (let x = 0; x < canvas.width; x++) {
    const [r, g, b] = viridis(x / (canvas.width - 1));
    ctx.fillStyle = `rgb(${r},${g},${b})`;
    ctx.fillRect(x, 0, 1, canvas.height);
  }
}
