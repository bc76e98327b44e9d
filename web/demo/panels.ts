// The views beyond one head's map: bars over the input tokens, a layer × head
// grid of one number per head, two runs side by side with their difference, and
// the sortable table of head summaries. Each draws on the canvas it is given, so
// the same code paints the page and the SVG export.
import type { HeadSummary } from 'attnscope';

import { diverging, paintGrid, paintMatrix } from './heatmap.js';
import type { Contrast } from './worker.js';

/**
 * Gives a select one "i: token" option per token, unless it has exactly those already;
 * true when it replaced them (the selection then restarts at the first token).
 */
export function fillTokenOptions(select: HTMLSelectElement, tokens: string[]): boolean {
  const labels = tokens.map((t, i) => `${i + 1}: ${t}`);
  if ([...select.options].map((o) => o.text).join('\n') === labels.join('\n')) return false;
  select.replaceChildren(...labels.map((label, i) => new Option(label, String(i))));
  return true;
}

/** One bar per token, with its label under it; bars scale to the largest value. */
export function drawBars(
  canvas: HTMLCanvasElement,
  tokens: string[],
  values: Float32Array,
  fg: string,
  accent: string,
): void {
  const ctx = canvas.getContext('2d')!;
  const { width, height } = canvas;
  ctx.clearRect(0, 0, width, height);
  const n = tokens.length;
  const label = 90,
    top = 16;
  const slot = (width - 40) / n;
  const max = values.reduce((m, x) => Math.max(m, x), 0) || 1;
  ctx.font = `${Math.min(13, slot * 0.8)}px system-ui, sans-serif`;
  for (let j = 0; j < n; j++) {
    const h = (values[j] / max) * (height - label - top);
    ctx.fillStyle = accent;
    ctx.fillRect(40 + j * slot + slot * 0.1, height - label - h, slot * 0.8, h);
    ctx.fillStyle = fg;
    ctx.save();
    ctx.translate(40 + (j + 0.5) * slot, height - label + 6);
    ctx.rotate(Math.PI / 3);
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    ctx.fillText(tokens[j], 0, 0, label);
    ctx.restore();
  }
  ctx.fillStyle = fg;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  ctx.font = '12px system-ui, sans-serif';
  ctx.fillText(max.toFixed(2), 36, top);
  ctx.fillText('0', 36, height - label);
}

/** A layers × heads grid, one cell per head, with its value written in it. */
export function drawHeadGrid(
  canvas: HTMLCanvasElement,
  values: Float32Array,
  layers: number,
  heads: number,
  fg: string,
  selected?: { layer: number; head: number },
): void {
  const cell = Math.max(18, Math.min(56, Math.floor(560 / heads)));
  canvas.width = 40 + heads * cell;
  canvas.height = 24 + layers * cell;
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const max = values.reduce((m, x) => Math.max(m, x), 0) || 1;
  paintGrid(
    ctx,
    values.map((x) => x / max),
    0,
    layers,
    heads,
    { x: 40, y: 24, w: heads * cell, h: layers * cell },
  );
  ctx.font = `${Math.min(12, cell / 3)}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'center';
  for (let h = 0; h < heads; h++) {
    ctx.fillStyle = fg;
    ctx.fillText(`H${h + 1}`, 40 + (h + 0.5) * cell, 12);
  }
  for (let l = 0; l < layers; l++) {
    ctx.fillStyle = fg;
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
    ctx.strokeStyle = fg;
    ctx.lineWidth = 2;
    ctx.strokeRect(40 + selected.head * cell, 24 + selected.layer * cell, cell, cell);
  }
}

/** Run A's map, run B's map and A − B over the aligned tokens, side by side, each labelled. */
export function drawContrast(canvas: HTMLCanvasElement, c: Contrast, fg: string): void {
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const gap = 16,
    size = (canvas.width - 2 * gap) / 3,
    top = 20;
  // Differences are small next to the weights: the colours span ± the largest one, which the title gives.
  const largest = c.difference?.data.reduce((m, x) => Math.max(m, Math.abs(x)), 0) || 1;
  const panels: Array<{ title: string; draw: (x: number) => void }> = [
    { title: 'A', draw: (x) => paintMatrix(ctx, c.a, 0, c.tokensA.length, x, top, size) },
    { title: 'B', draw: (x) => paintMatrix(ctx, c.b, 0, c.tokensB.length, x, top, size) },
    {
      title: `A − B over aligned tokens (red +, blue −, ±${largest.toFixed(3)})`,
      draw: (x) =>
        c.difference &&
        paintMatrix(ctx, c.difference.data, 0, c.pairs.length, x, top, size, (t) => diverging(t / largest)),
    },
  ];
  ctx.font = '12px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  panels.forEach(({ title, draw }, k) => {
    const x = k * (size + gap);
    ctx.fillStyle = fg;
    ctx.fillText(title, x, 10);
    draw(x);
  });
}

export const MEASURES: Array<{ key: keyof HeadSummary & string; title: string; explain: string }> = [
  {
    key: 'entropy',
    title: 'Entropy',
    explain: 'How spread out the attention is, in nats: 0 looks at one token, ln n at all alike.',
  },
  {
    key: 'distance',
    title: 'Distance',
    explain: 'How many tokens away a head looks, on average: small for local heads.',
  },
  { key: 'previous', title: 'Previous', explain: 'Weight on the token just before: high for previous-token heads.' },
  { key: 'self', title: 'Self', explain: 'Weight on the token itself.' },
  {
    key: 'special',
    title: 'Special',
    explain: 'Weight on [CLS], [SEP] and the first token: often a "no-op" place to park attention.',
  },
  {
    key: 'punctuation',
    title: 'Punctuation',
    explain: 'Weight on tokens that are only punctuation, such as "." and ",".',
  },
];

/** Fills the table body with one row per head, sorted; clicking a row selects that head. */
export function fillSummaries(
  body: HTMLTableSectionElement,
  summaries: HeadSummary[],
  sort: { key: keyof HeadSummary; descending: boolean },
  selected: { layer: number; head: number },
  onSelect: (layer: number, head: number) => void,
): void {
  const sorted = [...summaries].sort((a, b) => {
    const d = (a[sort.key] as number) - (b[sort.key] as number);
    return sort.descending ? -d : d;
  });
  body.replaceChildren(
    ...sorted.map((s) => {
      const tr = document.createElement('tr');
      tr.tabIndex = 0;
      tr.dataset.layer = String(s.layer);
      tr.dataset.head = String(s.head);
      if (s.layer === selected.layer && s.head === selected.head) tr.setAttribute('aria-selected', 'true');
      const cells = [`L${s.layer + 1}`, `H${s.head + 1}`, ...MEASURES.map((m) => (s[m.key] as number).toFixed(3))];
      for (const text of cells) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      tr.addEventListener('click', () => onSelect(s.layer, s.head));
      tr.addEventListener('keydown', (e) => e.key === 'Enter' && onSelect(s.layer, s.head));
      return tr;
    }),
  );
}
