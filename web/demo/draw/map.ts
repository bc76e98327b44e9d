// The large map: one n × n matrix (a head's weights, or rollout/flow) with token labels on both
// axes, drawn through a viewport. On the page it draws from tiles of 256 × 256 cells, each
// coloured once when it first comes into view, so a frame costs the visible tiles' blits and the
// visible labels: 2,048 tokens pan and zoom as fast as 20. Labels thin out to every k-th token
// when they would overlap; the hovered row and column are highlighted and always labelled.
import { cellImage, colourBar, viridis, type Colour } from './heatmap.js';
import type { Viewport } from './viewport.js';

const TILE = 256;
const NICE = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000];

export interface MapFrame {
  values: Float32Array; // [n, n]
  tokens: string[];
  colour?: Colour;
  /** The weight the brightest colour stands for: 1, or the map's largest weight when stretched. */
  top: number;
  hover: { i: number; j: number } | null;
  cursor: { i: number; j: number } | null;
  /** A token picked elsewhere (chips): its row is marked. */
  token: number | null;
  /** A local layer's sliding window: query i sees keys i − window + 1 … i, and a dashed line marks the edge. */
  window?: number;
  colours: { fg: string; muted: string; accent: string };
}

/** Room for labels on each axis, by canvas width (CSS pixels). */
export const labelRoom = (width: number) => Math.round(Math.min(110, Math.max(56, width * 0.16)));

/** The colour tiles of one matrix, made when first drawn and kept until the matrix changes. */
export class Tiles {
  private values: Float32Array | null = null;
  private colour: Colour = viridis;
  private top = 1;
  private readonly made = new Map<number, OffscreenCanvas>();

  tile(values: Float32Array, n: number, colour: Colour, top: number, [tr, tc]: number[]): OffscreenCanvas {
    if (values !== this.values || colour !== this.colour || top !== this.top) {
      this.made.clear();
      [this.values, this.colour, this.top] = [values, colour, top];
    }
    const key = tr * 65536 + tc;
    let tile = this.made.get(key);
    if (!tile) {
      const rows: [number, number] = [tr * TILE, Math.min(n, (tr + 1) * TILE)];
      tile = cellImage(values, n, rows, [tc * TILE, Math.min(n, (tc + 1) * TILE)], colour, 1 / top);
      this.made.set(key, tile);
    }
    return tile;
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
 * Draws a frame on `ctx` (CSS pixels, `width` × `height`). With `tiles`, from cached tiles,
 * clipped to the plot; without (exports), as one picture of the cells wholly in view.
 * Returns how many cells it drew.
 */
export function drawMap(
  ctx: CanvasRenderingContext2D,
  width: number,
  height: number,
  f: MapFrame,
  vp: Viewport,
  tiles?: Tiles,
): number {
  const n = f.tokens.length;
  const { box } = vp;
  const colour = f.colour ?? viridis;
  ctx.clearRect(0, 0, width, height);
  let rows = vp.visible('rows'),
    cols = vp.visible('cols');
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y, box.w, box.h);
  ctx.clip();
  ctx.imageSmoothingEnabled = vp.cell < 1; // averaging when several cells share a pixel
  if (tiles) {
    for (let tr = Math.floor(rows[0] / TILE); tr * TILE < rows[1]; tr++)
      for (let tc = Math.floor(cols[0] / TILE); tc * TILE < cols[1]; tc++) {
        const tile = tiles.tile(f.values, n, colour, f.top, [tr, tc]);
        // Edges on whole pixels: no seams between tiles.
        const x0 = Math.round(vp.x(tc * TILE)),
          y0 = Math.round(vp.y(tr * TILE));
        const x1 = Math.round(vp.x(tc * TILE + tile.width)),
          y1 = Math.round(vp.y(tr * TILE + tile.height));
        ctx.drawImage(tile, x0, y0, x1 - x0, y1 - y0);
      }
  } else {
    rows = [Math.ceil(-vp.oy / vp.cell), Math.min(n, Math.floor((box.h - vp.oy) / vp.cell))];
    cols = [Math.ceil(-vp.ox / vp.cell), Math.min(n, Math.floor((box.w - vp.ox) / vp.cell))];
    const image = cellImage(f.values, n, rows, cols, colour, 1 / f.top);
    ctx.drawImage(image, vp.x(cols[0]), vp.y(rows[0]), (cols[1] - cols[0]) * vp.cell, (rows[1] - rows[0]) * vp.cell);
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
  ctx.fillText('weight', bar.x, bar.y - 3);
  const format = (t: number) => (f.top < 1 ? t.toPrecision(2) : String(t));
  const ticks = f.top < 1 ? [0, f.top] : [0, 0.5, 1];
  colourBar(ctx, bar, { colour, lo: 0, hi: f.top, ticks, format }, f.colours.fg);
  return (rows[1] - rows[0]) * (cols[1] - cols[0]);
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
  const w = f.window ?? 0;
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

/** Every k-th visible token on each axis (k as small as keeps them apart), and the hovered ones. */
function labels(ctx: CanvasRenderingContext2D, f: MapFrame, vp: Viewport, rows: number[], cols: number[]): void {
  const { box, cell } = vp;
  const size = Math.max(9, Math.min(13, cell * 0.75));
  const step = NICE.find((k) => k * cell >= size + 3) ?? Math.ceil((size + 3) / cell);
  ctx.font = `${size}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  const room = box.x - 10;
  const label = (axis: 'row' | 'col', t: number, strong: boolean) => {
    const text = fit(ctx, f.tokens[t], room);
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
