// The head view: for one layer, a line from every token (left, the query) to
// every token (right, the key) with opacity by weight, one colour per head.
import { headMap, type Maps } from '../maps.js';

// Colour-blind-safe categorical colours (Okabe–Ito, then Paul Tol's muted set), one per head.
export const HEAD_COLOURS = [
  '#E69F00',
  '#56B4E9',
  '#009E73',
  '#F0E442',
  '#0072B2',
  '#D55E00',
  '#CC79A7',
  '#999999',
  '#882255',
  '#44AA99',
  '#117733',
  '#AA4499',
  '#332288',
  '#DDCC77',
  '#88CCEE',
  '#CC6677',
];

const MARGIN = 16;
/** Room for the token labels on each side: less on narrow canvases. */
const labelRoom = (width: number) => Math.min(120, Math.max(60, Math.round(width * 0.2)));

export function rowHeight(n: number): number {
  return Math.max(6, Math.min(22, 640 / Math.max(n, 1)));
}

/** Draws layer `layer` of `attentions` [layers, heads, n, n]; `focus` limits lines to one query. */
export function drawHeadView(
  canvas: HTMLCanvasElement,
  maps: Maps,
  layer: number,
  tokens: string[],
  active: boolean[],
  focus: number | null,
  fg: string,
): void {
  const [, heads, n] = maps.shape;
  const row = rowHeight(n);
  canvas.height = Math.ceil(n * row + 2 * MARGIN);
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const LABEL = labelRoom(canvas.width);
  const left = LABEL,
    right = canvas.width - LABEL;
  const y = (i: number) => MARGIN + (i + 0.5) * row;
  ctx.lineWidth = Math.max(1, row / 8);
  for (let h = 0; h < heads; h++) {
    if (!active[h]) continue;
    ctx.strokeStyle = HEAD_COLOURS[h % HEAD_COLOURS.length];
    const map = headMap(maps, layer, h);
    if (!map) continue; // the run holds another layer's maps; the page asks for this one's
    for (let i = 0; i < n; i++) {
      if (focus !== null && i !== focus) continue;
      for (let j = 0; j < n; j++) {
        const w = map[i * n + j];
        if (w < 0.01) continue; // invisible anyway; keeps 512 tokens fast
        ctx.globalAlpha = Math.min(1, w);
        ctx.beginPath();
        ctx.moveTo(left, y(i));
        ctx.lineTo(right, y(j));
        ctx.stroke();
      }
    }
  }
  ctx.globalAlpha = 1;
  if (row < 8) return; // too many tokens to label; hover names them
  ctx.fillStyle = fg;
  ctx.font = `${Math.min(14, row * 0.75)}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  for (let i = 0; i < n; i++) {
    ctx.globalAlpha = focus === null || focus === i ? 1 : 0.4;
    ctx.textAlign = 'right';
    ctx.fillText(tokens[i], left - 8, y(i), LABEL - 12);
    ctx.textAlign = 'left';
    ctx.fillText(tokens[i], right + 8, y(i), LABEL - 12);
  }
  ctx.globalAlpha = 1;
}

/** The query token under the pointer on the left side, or null. */
export function queryAt(canvas: HTMLCanvasElement, event: MouseEvent, n: number): number | null {
  const rect = canvas.getBoundingClientRect();
  const scale = canvas.width / rect.width;
  const x = (event.clientX - rect.left) * scale;
  const i = Math.floor(((event.clientY - rect.top) * scale - MARGIN) / rowHeight(n));
  return x < canvas.width / 2 && i >= 0 && i < n ? i : null;
}
