// The head view: for one layer, a line from every token (left, the query) to every token (right, the key; another
// text's tokens in cross-attention) with opacity by weight, one colour per head. An encoder-decoder's
// cross-attention is drawn the other way round (`flip`), as a translation reads: the source (keys) on the left, the
// target (queries) on the right. Long inputs scroll: a frame draws
// the query rows in view, and about LINES of their strongest lines (weights under 1% are never drawn), batched by head
// and opacity, so a frame costs the rows in view, whatever n.
import type { MapRows } from './pooled.js';

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

export const MARGIN = 16;
/** Lines a frame draws at most: the strongest of those in view. */
const LINES = 4000;
/** Opacity steps: lines are stroked in one path per head and step. */
const STEPS = 16;
/** Room for the token labels on each side: less on narrow canvases. */
const labelRoom = (width: number) => Math.min(120, Math.max(60, Math.round(width * 0.2)));

export function rowHeight(n: number): number {
  return Math.max(6, Math.min(22, 640 / Math.max(n, 1)));
}

/**
 * The row height of a side of `count` tokens in a view of `n` rows (the taller side's): each side spans the whole
 * track, so that cross-attention between a short source and a long target lines up end to end wherever it scrolls.
 */
export const sideRow = (n: number, count: number) => (n * rowHeight(n)) / Math.max(count, 1);

/** The height of the whole view of n tokens (the scroll track's). */
export const viewHeight = (n: number) => Math.ceil(n * rowHeight(n) + 2 * MARGIN);

export interface HeadView {
  /** One entry per head of the layer: its map, or null when hidden (or not held). */
  maps: Array<MapRows | null>;
  /** The queries, on the left. */
  tokens: string[];
  /** The keys, on the right, where they are another text's (cross-attention); absent: `tokens`. */
  keyTokens?: string[];
  /** Queries on the right and keys on the left. */
  flip?: boolean;
  /** Titles over the left and the right column. */
  sides?: [string, string];
  /** A query whose lines alone are drawn (hovered, or the token in focus). */
  focus: number | null;
  /** The view's pixels from the top of the whole view to the canvas's top. */
  scroll: number;
  fg: string;
}

/**
 * Draws the head view on `canvas` at its size: the rows from `v.scroll` down. Returns how many lines it drew. One
 * pass over the rows in view gathers the lines of 1% and more; when there are more than LINES, the weakest go.
 */
export function drawHeadView(canvas: HTMLCanvasElement, v: HeadView): number {
  const keys = v.keyTokens ?? v.tokens;
  const n = Math.max(v.tokens.length, keys.length); // rows of the taller side
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const LABEL = labelRoom(canvas.width);
  const left = LABEL,
    right = canvas.width - LABEL;
  const [queryX, keyX] = v.flip ? [right, left] : [left, right];
  // Each side spans the track: the shorter side's rows are taller.
  const [rowQ, rowK] = [sideRow(n, v.tokens.length), sideRow(n, keys.length)];
  const yq = (i: number) => MARGIN + (i + 0.5) * rowQ - v.scroll;
  const yk = (j: number) => MARGIN + (j + 0.5) * rowK - v.scroll;
  const visible = (rowSide: number, count: number) => [
    Math.max(0, Math.floor((v.scroll - MARGIN) / rowSide)),
    Math.min(count, Math.ceil((v.scroll + canvas.height - MARGIN) / rowSide)),
  ];
  const [first, last] = visible(rowQ, v.tokens.length);
  // The candidates: head, query, key and weight, and a histogram of the weights in steps of 0.1%.
  const found: number[] = [];
  const bins = new Uint32Array(1000);
  v.maps.forEach((map, h) => {
    if (!map) return;
    for (let i = first; i < last; i++) {
      if (v.focus !== null && i !== v.focus) continue;
      const r = map.row(i);
      for (let j = 0; j < r.length; j++)
        if (r[j] >= 0.01) {
          found.push(h, i, j, r[j]);
          bins[Math.min(999, Math.floor(r[j] * 1000))]++;
        }
    }
  });
  let least = 0.01;
  if (found.length / 4 > LINES) {
    let above = 0,
      k = 999;
    for (; k > 10 && above + bins[k] <= LINES; k--) above += bins[k];
    least = (k + 1) / 1000;
  }
  // One path per head and opacity step (the context's own path, so that the SVG recorder records it too).
  const groups = new Map<number, number[]>();
  let drawn = 0;
  for (let at = 0; at < found.length; at += 4) {
    const w = found[at + 3];
    if (w < least) continue;
    const key = found[at] * STEPS + Math.min(STEPS - 1, Math.floor(w * STEPS));
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key)!.push(at);
    drawn++;
  }
  ctx.lineWidth = Math.max(1, Math.min(rowQ, rowK) / 8);
  for (const [key, lines] of groups) {
    ctx.strokeStyle = HEAD_COLOURS[Math.floor(key / STEPS) % HEAD_COLOURS.length];
    ctx.globalAlpha = ((key % STEPS) + 1) / STEPS;
    ctx.beginPath();
    for (const at of lines) {
      ctx.moveTo(queryX, yq(found[at + 1]));
      ctx.lineTo(keyX, yk(found[at + 2]));
    }
    ctx.stroke();
  }
  ctx.globalAlpha = 1;
  ctx.fillStyle = v.fg;
  ctx.textBaseline = 'middle';
  if (v.sides) {
    // In the margin above the first row.
    ctx.font = '600 11px system-ui, sans-serif';
    ctx.textAlign = 'right';
    ctx.fillText(v.sides[0], left - 8, MARGIN / 2 - v.scroll, LABEL - 12);
    ctx.textAlign = 'left';
    ctx.fillText(v.sides[1], right + 8, MARGIN / 2 - v.scroll, LABEL - 12);
  }
  // Each side's labels at its own rows (none where they are too close to read; hover names them).
  const sides: Array<[string[], number, number, boolean]> = v.flip
    ? [
        [keys, rowK, left - 8, false],
        [v.tokens, rowQ, right + 8, true],
      ]
    : [
        [v.tokens, rowQ, left - 8, true],
        [keys, rowK, right + 8, false],
      ];
  sides.forEach(([labels, rowSide, x, queries], k) => {
    if (rowSide < 8) return;
    ctx.font = `${Math.min(14, rowSide * 0.75)}px system-ui, sans-serif`;
    ctx.textAlign = k === 0 ? 'right' : 'left';
    const [from, to] = visible(rowSide, labels.length);
    for (let i = from; i < to; i++) {
      ctx.globalAlpha = v.focus === null || v.keyTokens || !queries || v.focus === i ? 1 : 0.4;
      ctx.fillText(labels[i], x, MARGIN + (i + 0.5) * rowSide - v.scroll, LABEL - 12);
    }
  });
  ctx.globalAlpha = 1;
  return drawn;
}

/** The query token under the pointer on the queries' side (the left, or the right when flipped), or null. */
export function queryAt(
  canvas: HTMLCanvasElement,
  event: MouseEvent,
  n: number,
  scroll: number,
  rows = n,
  flip = false,
): number | null {
  const rect = canvas.getBoundingClientRect();
  const scale = canvas.width / rect.width;
  const x = (event.clientX - rect.left) * scale;
  const i = Math.floor(((event.clientY - rect.top) * scale + scroll - MARGIN) / sideRow(rows, n));
  return x < canvas.width / 2 !== flip && i >= 0 && i < n ? i : null;
}
