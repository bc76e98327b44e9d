// The Why pane: one score of the map taken apart by its sources (click a cell), or one next-token logit (click
// "why?" beside a candidate). A score is a sum of query source × key source terms: the pane draws them as a heatmap
// (rows the query's sources, columns the key's, red pushes the score up, blue down), lists the ten largest in words,
// and shows that they add up to the engine's score before the softmax. A logit's sources are each head's and each
// MLP's output through the frozen final norm: a layers × heads grid with the MLPs beside it, and the same list.
import type { Source, Term } from 'attnscope';

import { weightAt } from '../map-rows.js';
import type { Explained, RunResult } from '../protocol.js';
import { explainAsk, type State } from '../state.js';
import { $, changes, setProp, setText, type Page, type View } from './view.js';

const HINT =
  "Click a cell of the map to take that score apart by what the two tokens' residual streams hold; click “why?” " +
  'beside a next-token candidate to see what pushes it.';

/** The heatmap's largest side, in CSS pixels, and its margins for the layer labels. */
const SIDE = 360,
  LEFT = 44,
  TOP = 18;

/** A diverging colour: red for positive, blue for negative, paler towards 0 (v in [-1, 1]). */
function colour(v: number): [number, number, number] {
  const t = Math.min(1, Math.abs(v)) ** 0.5;
  return v >= 0
    ? [255, Math.round(255 * (1 - t * 0.85)), Math.round(255 * (1 - t))]
    : [Math.round(255 * (1 - t)), Math.round(255 * (1 - t * 0.6)), 255];
}

/**
 * A source in the page's words: layers and heads counted from 1 as the page counts them, tokens as the chips show
 * them; `at`: with the token whose stream holds it (a logit's sources are all at one token).
 */
export function sourceLabel(s: Source, r: RunResult, at = true): string {
  // An encoder-decoder's sequences: 0 the source (the encoder's), 1 the target; a model of one stack has one.
  const tokens = r.sets ? (s.sequence === 0 ? r.sets.encoder?.tokens : r.sets.decoder?.tokens) : r.tokens;
  const token = `“${tokens?.[s.position] ?? s.position + 1}”`;
  const stack = r.sets ? (s.sequence === 0 ? 'encoder ' : 'decoder ') : '';
  const L = `${stack}L${s.layer + 1}`;
  const where = at ? ` at ${token}` : '';
  switch (s.kind) {
    case 'token':
      return `embedding of ${token}`;
    case 'position':
      return `position ${s.position + 1}`;
    case 'prefix':
    case 'register':
      return `${token} embedding`;
    case 'patch':
      return `${token} pixels`;
    case 'patchBias':
      return 'patch projection bias';
    case 'audio':
      return `sound at ${token}`;
    case 'head':
      return `${L} H${s.head + 1}${where}`;
    case 'attentionBias':
      return `${L} W_O bias`;
    case 'cross':
      return `${L} cross-attention${where}`;
    case 'mlp':
      return `${L} MLP${where}`;
    case 'normBias':
      return s.norm === 'embeddings' || s.norm === 'final' ? `${stack}${s.norm} norm bias` : `${L} ${s.norm} norm bias`;
    case 'widenBias':
      return `${L} widening bias`;
    case 'queryBias':
      return `${L} b_Q`;
    case 'keyBias':
      return `${L} b_K`;
    case 'logitBias':
      return 'logit bias';
  }
}

/** Where each layer's sources start along a side: [index, label]. */
function groups(sources: Source[]): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  let last = '';
  sources.forEach((s, i) => {
    const name = s.layer < 0 ? 'emb' : s.kind === 'queryBias' || s.kind === 'keyBias' ? 'b' : `L${s.layer + 1}`;
    const key = `${s.sequence}:${name}`;
    if (key !== last) out.push([i, name]);
    last = key;
  });
  return out;
}

const signed = (x: number) => (x >= 0 ? '+' : '−') + Math.abs(x).toPrecision(4);

/** A table of values [rows, cols] drawn cell by cell, `cell` px each, after the margins, scaled to ±max. */
function drawCells(
  ctx: CanvasRenderingContext2D,
  values: ArrayLike<number>,
  rows: number,
  cols: number,
  cell: number,
  left: number,
  top: number,
) {
  let max = 1e-30;
  for (let i = 0; i < values.length; i++) max = Math.max(max, Math.abs(values[i]!));
  const image = ctx.createImageData(cols, rows);
  for (let i = 0; i < rows * cols; i++) {
    const [r, g, b] = colour(values[i]! / max);
    image.data.set([r, g, b, 255], i * 4);
  }
  const tile = document.createElement('canvas');
  Object.assign(tile, { width: cols, height: rows });
  tile.getContext('2d')!.putImageData(image, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(tile, left, top, cols * cell, rows * cell);
  return max;
}

/** Labels along both sides at the groups' starts, where there is room for them. */
function drawGroups(
  ctx: CanvasRenderingContext2D,
  rows: Array<[number, string]>,
  cols: Array<[number, string]>,
  cell: number,
  fg: string,
) {
  ctx.fillStyle = fg;
  ctx.strokeStyle = fg;
  ctx.globalAlpha = 0.7;
  ctx.font = '10px system-ui, sans-serif';
  let room = -Infinity;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'top';
  for (const [i, name] of rows) {
    const y = TOP + i * cell;
    ctx.fillRect(LEFT - 3, y, 3, 1);
    if (y >= room) (ctx.fillText(name, LEFT - 5, y), (room = y + 11));
  }
  room = -Infinity;
  ctx.textAlign = 'left';
  for (const [j, name] of cols) {
    const x = LEFT + j * cell;
    ctx.fillRect(x, TOP - 3, 1, 3);
    if (x >= room) (ctx.fillText(name, x + 1, 2), (room = x + ctx.measureText(name).width + 6));
  }
  ctx.globalAlpha = 1;
}

/** The picture: a score's terms, or a logit's layers × heads grid with the MLPs in a column of their own. */
function draw(canvas: HTMLCanvasElement, e: Explained, fg: string): { cell: number; rows: number; cols: number } {
  const ctx = canvas.getContext('2d')!;
  if (e.what === 'score') {
    const rows = e.querySources.length,
      cols = e.keySources.length;
    const cell = Math.max(1, Math.min(32, Math.floor(SIDE / Math.max(rows, cols))));
    Object.assign(canvas, { width: LEFT + cols * cell + 4, height: TOP + rows * cell + 4 });
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    drawCells(ctx, e.terms, rows, cols, cell, LEFT, TOP);
    drawGroups(ctx, groups(e.querySources), groups(e.keySources), cell, fg);
    return { cell, rows, cols };
  }
  const layers = e.mlps.length,
    heads = e.heads.length / layers;
  const cols = heads + 2; // the heads, a gap, the MLP
  const cell = Math.max(4, Math.min(32, Math.floor(SIDE / Math.max(layers, cols))));
  const values = new Float64Array(layers * cols);
  for (let l = 0; l < layers; l++) {
    values.set(e.heads.subarray(l * heads, (l + 1) * heads), l * cols);
    values[l * cols + heads + 1] = e.mlps[l]!;
  }
  Object.assign(canvas, { width: LEFT + cols * cell + 4, height: TOP + layers * cell + 4 });
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  drawCells(ctx, values, layers, cols, cell, LEFT, TOP);
  ctx.clearRect(LEFT + heads * cell, TOP, cell, layers * cell);
  const every = (n: number, label: (i: number) => string) =>
    Array.from({ length: n }, (_, i) => [i, label(i)] as [number, string]);
  drawGroups(
    ctx,
    every(layers, (l) => `L${l + 1}`),
    [...every(heads, (h) => `H${h + 1}`), [heads + 1, 'MLP']],
    cell,
    fg,
  );
  return { cell, rows: layers, cols };
}

export function whyView(page: Page): View {
  const title = $('why-title');
  const note = $('why-note');
  const body = $('why-body');
  const sum = $('why-sum');
  const canvas = $<HTMLCanvasElement>('why-map');
  const caption = $('why-caption');
  const readout = $('why-cell');
  const list = $<HTMLOListElement>('why-terms');
  const dirty = changes();
  let shown: { e: Explained; r: RunResult; cell: number; rows: number; cols: number } | null = null;

  /** The term under the pointer, in words. */
  canvas.addEventListener('pointermove', (event) => {
    if (!shown) return;
    const rect = canvas.getBoundingClientRect();
    const x = ((event.clientX - rect.left) * canvas.width) / rect.width - LEFT;
    const y = ((event.clientY - rect.top) * canvas.height) / rect.height - TOP;
    const i = Math.floor(y / shown.cell),
      j = Math.floor(x / shown.cell);
    if (i < 0 || j < 0 || i >= shown.rows || j >= shown.cols) return;
    const e = shown.e;
    const r = shown.r;
    if (e.what === 'score')
      readout.textContent = `${sourceLabel(e.querySources[i]!, r)} (query) × ${sourceLabel(e.keySources[j]!, r)} (key): ${signed(e.terms[i * e.keySources.length + j]!)}`;
    else {
      const heads = e.heads.length / e.mlps.length;
      if (j < heads) readout.textContent = `L${i + 1} H${j + 1}: ${signed(e.heads[i * heads + j]!)}`;
      else if (j === heads + 1) readout.textContent = `L${i + 1} MLP: ${signed(e.mlps[i]!)}`;
    }
  });

  return {
    id: 'why',
    pane: 'why',
    render(s: Readonly<State>) {
      const ask = explainAsk(s);
      const reply = s.explained?.explained ?? null;
      const current = !!ask && !!reply && JSON.stringify(reply.ask) === JSON.stringify(ask);
      const error = s.errors.explain;
      const r = s.result;
      note.dataset.state = error ? 'error' : 'ok';
      setText(
        note,
        error ??
          (!s.explain
            ? HINT
            : !ask
              ? 'Why takes apart a model’s own run: type a text (the parameter-free form and two texts have no sources).'
              : current
                ? ''
                : 'Taking it apart…'),
      );
      setProp(note, 'hidden', !!current && !error);
      setProp(body, 'hidden', !current || !!error);
      list.setAttribute('aria-busy', String(!current));
      if (!current || !r || error) return;
      const e = reply!;
      if (!dirty(e, page.colours().fg)) return;
      const token = (i: number, keys = false) => `“${((keys && r.keyTokens) || r.tokens)[i] ?? i}”`;
      let total = 0;
      for (const t of e.terms) total += t;
      if (e.what === 'score' && e.ask.what === 'score') {
        const { layer, head, query, key } = e.ask;
        setText(title, `Why layer ${layer + 1}, head ${head + 1} attends from ${token(query)} to ${token(key, true)}`);
        const weight = weightAt(r, layer, head, query, key);
        const parts = [
          `Score before the softmax: ${e.score.toPrecision(6)} = the sum of ${e.terms.length.toLocaleString()} terms (${total.toPrecision(6)})`,
        ];
        if (e.positionBias) parts.push(` + T5's position bias ${signed(e.positionBias)}, which no source writes`);
        parts.push('.');
        if (e.softcap)
          parts.push(
            ` Gemma 2 soft-caps it: the softmax reads ${e.softcap}·tanh(score / ${e.softcap}) = ${(e.softcap * Math.tanh(e.score / e.softcap)).toPrecision(6)}; the terms take apart the score before the cap.`,
          );
        if (Number.isFinite(weight))
          parts.push(` Its weight in the map, after the softmax over the row: ${weight.toFixed(6)}.`);
        setText(sum, parts.join(''));
        caption.textContent =
          `Rows: the ${e.querySources.length} sources of ${token(query)}'s stream (query); columns: the ${e.keySources.length} of ${token(key, true)}'s (key), ` +
          'from the embeddings through each earlier layer. Red raises the score, blue lowers it.';
        Object.assign(body.dataset, {
          what: 'score',
          score: String(e.score),
          sum: String(total),
          layer: String(layer),
          head: String(head),
          query: String(query),
          key: String(key),
        });
      } else if (e.what === 'logit' && e.ask.what === 'logit') {
        const { position } = e.ask;
        setText(title, `What pushes “${e.text}” after ${token(position)}`);
        const parts = [
          `Logit: ${e.logit.toPrecision(6)} = the sum of ${e.terms.length.toLocaleString()} direct contributions (${total.toPrecision(6)}), each through the final norm at this token's own scale.`,
        ];
        if (e.softcap)
          parts.push(
            ` The model soft-caps logits: the softmax reads ${e.softcap}·tanh(logit / ${e.softcap}) = ${(e.softcap * Math.tanh(e.logit / e.softcap)).toPrecision(6)}.`,
          );
        setText(sum, parts.join(''));
        caption.textContent = `Each head's and each MLP's direct push on the logit of “${e.text}”, layer by layer. Red raises it, blue lowers it.`;
        Object.assign(body.dataset, {
          what: 'logit',
          score: String(e.logit),
          sum: String(total),
          position: String(position),
          token: String(e.ask.token),
        });
      }
      const size = draw(canvas, e, page.colours().fg);
      shown = { e, r, ...size };
      canvas.setAttribute('aria-label', caption.textContent ?? '');
      readout.textContent = 'Hover the picture to read a term.';
      const words = (t: Term) =>
        e.what === 'score'
          ? `${sourceLabel(e.querySources[t.query]!, r)} (query) × ${sourceLabel(e.keySources[t.key]!, r)} (key)`
          : sourceLabel(e.sources[t.query]!, r, false);
      list.replaceChildren(
        ...e.largest.map((t) => {
          const li = document.createElement('li');
          const value = document.createElement('span');
          value.className = t.value >= 0 ? 'up' : 'down';
          value.textContent = signed(t.value);
          li.append(`${words(t)}: `, value);
          li.dataset.value = String(t.value);
          return li;
        }),
      );
    },
    export: {
      canvas: () => canvas,
      draw: (c) => shown && draw(c, shown.e, page.colours().fg),
    },
  };
}
