// The smaller figures: bars over the tokens, a layer × head grid of one number per head, two
// runs side by side with their difference, and the cost plot. Each draws on the canvas it is
// given at that canvas's size, so the same code paints the page and the SVG export.
import type { Contrast } from '../protocol.js';
import { colourBar, diverging, paintGrid, paintMatrix } from './heatmap.js';

export interface Colours {
  fg: string;
  muted: string;
  accent: string;
}

const FONT = '12px system-ui, sans-serif';

/** One bar per token, its label under it (every k-th when they would overlap); bars scale to the largest value. */
export function drawBars(canvas: HTMLCanvasElement, tokens: string[], values: Float32Array, c: Colours): void {
  const ctx = canvas.getContext('2d')!;
  const { width, height } = canvas;
  ctx.clearRect(0, 0, width, height);
  const n = tokens.length;
  const label = 80,
    top = 16,
    left = 44;
  const slot = (width - left - 8) / n;
  const every = Math.ceil(14 / slot);
  const max = values.reduce((m, x) => Math.max(m, x), 0) || 1;
  ctx.strokeStyle = c.muted;
  ctx.fillStyle = c.muted;
  ctx.font = FONT;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (const t of [0, 0.5, 1]) {
    const y = height - label - t * (height - label - top);
    ctx.fillRect(left - 4, y, 4, 1);
    ctx.fillText((t * max).toFixed(2), left - 6, y);
  }
  for (let j = 0; j < n; j++) {
    const h = (values[j] / max) * (height - label - top);
    ctx.fillStyle = c.accent;
    ctx.fillRect(left + j * slot + slot * 0.1, height - label - h, Math.max(1, slot * 0.8), h);
    if (j % every) continue;
    ctx.fillStyle = c.fg;
    ctx.save();
    ctx.translate(left + (j + 0.5) * slot, height - label + 6);
    ctx.rotate(Math.PI / 3);
    ctx.textAlign = 'left';
    ctx.fillText(tokens[j], 0, 0, label);
    ctx.restore();
  }
}

/** A layers × heads grid, one cell per head with its value written in it, and a colour bar. */
export function drawHeadGrid(
  canvas: HTMLCanvasElement,
  values: Float32Array,
  layers: number,
  heads: number,
  c: Colours,
  selected?: { layer: number; head: number },
): void {
  const cell = Math.max(18, Math.min(56, Math.floor(560 / heads)));
  canvas.width = Math.max(40 + heads * cell, 220);
  canvas.height = 24 + layers * cell + 40;
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const max = values.reduce((m, x) => Math.max(m, x), 0) || 1;
  const box = { x: 40, y: 24, w: heads * cell, h: layers * cell };
  paintGrid(
    ctx,
    values.map((x) => x / max),
    layers,
    heads,
    box,
  );
  ctx.font = `${Math.min(12, cell / 3)}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'center';
  ctx.fillStyle = c.fg;
  for (let h = 0; h < heads; h++) ctx.fillText(`H${h + 1}`, 40 + (h + 0.5) * cell, 12);
  for (let l = 0; l < layers; l++) {
    ctx.fillStyle = c.fg;
    ctx.textAlign = 'left';
    ctx.fillText(`L${l + 1}`, 4, 24 + (l + 0.5) * cell);
    ctx.textAlign = 'center';
    for (let h = 0; h < heads; h++) {
      const v = values[l * heads + h];
      ctx.fillStyle = v / max > 0.6 ? '#111' : '#eee'; // readable on viridis
      if (cell >= 30) ctx.fillText(v.toFixed(2), 40 + (h + 0.5) * cell, 24 + (l + 0.5) * cell);
    }
  }
  if (selected) {
    ctx.strokeStyle = c.fg;
    ctx.lineWidth = 2;
    ctx.strokeRect(40 + selected.head * cell, 24 + selected.layer * cell, cell, cell);
  }
  const bar = { x: 40, y: box.y + box.h + 10, w: Math.min(160, canvas.width - 56), h: 8 };
  colourBar(ctx, bar, { lo: 0, hi: max, ticks: [0, max / 2, max] }, c.fg);
}

/** Run A's map, run B's map and A − B over the aligned tokens, side by side, each titled, with colour bars. */
export function drawContrast(canvas: HTMLCanvasElement, k: Contrast, c: Colours): void {
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const gap = 16,
    top = 20;
  const size = Math.min((canvas.width - 2 * gap) / 3, canvas.height - top - 36);
  // Differences are small next to the weights: the colours span ± the largest one.
  const largest = k.difference?.data.reduce((m, x) => Math.max(m, Math.abs(x)), 0) || 1;
  const panels: Array<{ title: string; draw: (x: number) => void }> = [
    { title: `A (${k.tokensA.length} tokens)`, draw: (x) => paintMatrix(ctx, k.a, k.tokensA.length, x, top, size) },
    { title: `B (${k.tokensB.length} tokens)`, draw: (x) => paintMatrix(ctx, k.b, k.tokensB.length, x, top, size) },
    {
      title: `A − B, ${k.pairs.length} aligned`,
      draw: (x) =>
        k.difference &&
        paintMatrix(
          ctx,
          k.difference.data.map((d) => d / largest),
          k.pairs.length,
          x,
          top,
          size,
          diverging,
        ),
    },
  ];
  panels.forEach(({ title, draw }, p) => {
    const x = p * (size + gap);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'left';
    ctx.fillStyle = c.fg;
    ctx.fillText(title, x, 10);
    draw(x);
    const bar = { x, y: top + size + 8, w: Math.min(size, 160), h: 8 };
    if (p < 2) colourBar(ctx, bar, { lo: 0, hi: 1, ticks: [0, 0.5, 1] }, c.fg);
    else if (k.difference) {
      const ticks = [-largest, 0, largest];
      colourBar(ctx, bar, { colour: diverging, lo: -largest, hi: largest, ticks, format: (t) => t.toFixed(3) }, c.fg);
    }
  });
}

/** The least-squares a·n² + b·n through the measured points. */
export function quadraticFit(points: Array<{ n: number; ms: number }>): { a: number; b: number } {
  let s4 = 0,
    s3 = 0,
    s2 = 0,
    t2 = 0,
    t1 = 0;
  for (const { n, ms } of points) {
    s4 += n ** 4;
    s3 += n ** 3;
    s2 += n ** 2;
    t2 += ms * n * n;
    t1 += ms * n;
  }
  const det = s4 * s2 - s3 * s3;
  return { a: (t2 * s2 - s3 * t1) / det, b: (s4 * t1 - s3 * t2) / det };
}

/** The measured points, the fitted curve, and ticked axes. */
export function drawCost(canvas: HTMLCanvasElement, points: Array<{ n: number; ms: number }>, c: Colours): void {
  const ctx = canvas.getContext('2d')!;
  const { width: w, height: h } = canvas;
  const pad = { left: 72, right: 16, top: 16, bottom: 36 };
  const maxN = points.at(-1)!.n;
  const maxMs = points.reduce((m, p) => Math.max(m, p.ms), 0);
  const X = (n: number) => pad.left + (n / maxN) * (w - pad.left - pad.right);
  const Y = (ms: number) => h - pad.bottom - (ms / maxMs) * (h - pad.top - pad.bottom);
  const { a, b } = quadraticFit(points);
  ctx.clearRect(0, 0, w, h);
  ctx.strokeStyle = ctx.fillStyle = c.muted;
  ctx.font = FONT;
  ctx.lineWidth = 1;
  ctx.strokeRect(pad.left, pad.top, w - pad.left - pad.right, h - pad.top - pad.bottom);
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    ctx.fillRect(pad.left - 4, Y(t * maxMs), 4, 1);
    ctx.fillText(`${(t * maxMs).toPrecision(3)} ms`, pad.left - 6, Y(t * maxMs));
  }
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const p of points.filter((p) => p.n >= maxN / 8)) {
    ctx.fillRect(X(p.n), h - pad.bottom, 1, 4);
    ctx.fillText(String(p.n), X(p.n), h - pad.bottom + 6);
  }
  ctx.fillText('tokens n', (pad.left + w - pad.right) / 2, h - 14);
  ctx.strokeStyle = c.fg;
  ctx.beginPath();
  for (let n = 0; n <= maxN; n += maxN / 64) ctx[n ? 'lineTo' : 'moveTo'](X(n), Y(a * n * n + b * n));
  ctx.stroke();
  ctx.fillStyle = c.accent;
  for (const p of points) ctx.fillRect(X(p.n) - 3, Y(p.ms) - 3, 6, 6);
}
