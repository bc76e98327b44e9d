// The page: sends text and model choices to the worker, shows the newest result, never blocks.
import { AnalysisPanels } from './analysis-ui.js';
import { attentionsJson, download, downloadPng, downloadSvg } from './export.js';
import { cellAt, drawHead, drawLegend, paintMatrix } from './heatmap.js';
import { drawHeadView, HEAD_COLOURS, queryAt } from './headview.js';
import { columns, headOf, paint, steps, whole, type MatrixView } from './math.js';
import { drawBars, fillTokenOptions } from './panels.js';
import { readShared, writeShared, type View } from './share.js';
import type { Mode, Reply, Request, Source } from './worker.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const text = $<HTMLTextAreaElement>('text');
const status = $<HTMLParagraphElement>('status');
const grid = $<HTMLCanvasElement>('grid');
const map = $<HTMLCanvasElement>('map');
const lines = $<HTMLCanvasElement>('lines');
const cell = $<HTMLElement>('cell');
const layerSelect = $<HTMLSelectElement>('layer');
const headSelect = $<HTMLSelectElement>('head');
const progress = $<HTMLProgressElement>('progress');
const loadStatus = $<HTMLParagraphElement>('load-status');

type Result = Extract<Reply, { kind: 'result' }>;
type LayerWeights = Extract<Reply, { kind: 'weights' }>;
const weightsByLayer = new Map<number, LayerWeights | 'pending'>(); // for the loaded model
let shown: Result | null = null;
let layer = 0;
let head = 0;
let mode: Mode = 'model';
let activeHeads: boolean[] = [];
let focus: number | null = null;
let view: View = 'head';
let across: Extract<Reply, { kind: 'across' }> | null = null; // rollout or flow of the shown run
let costShown: Extract<Reply, { kind: 'cost' }> | null = null;
let modelId = 'default'; // for the shareable link: 'default', a Hub id, or 'files' (cannot be shared)

const foreground = () => getComputedStyle(document.body).color;

/** Offset of (layer, head)'s n×n block in the attentions array. */
function offsetOf(r: Result, l: number, h: number): number {
  const [, heads, n] = r.shape;
  return (l * heads + h) * n * n;
}

function setOptions(select: HTMLSelectElement, count: number, value: number): void {
  if (select.options.length !== count)
    select.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i + 1), String(i))));
  select.value = String(value);
}

const THUMB = 96;
const GAP = 8;

function drawGrid(r: Result, canvas = grid): void {
  const [layers, heads, n] = r.shape;
  const grid = canvas;
  grid.width = heads * (THUMB + GAP) + 40;
  grid.height = layers * (THUMB + GAP) + 24;
  const ctx = grid.getContext('2d')!;
  ctx.clearRect(0, 0, grid.width, grid.height);
  ctx.font = '12px system-ui, sans-serif';
  ctx.fillStyle = foreground();
  for (let h = 0; h < heads; h++) ctx.fillText(`H${h + 1}`, 40 + h * (THUMB + GAP) + THUMB / 2 - 8, 14);
  for (let l = 0; l < layers; l++) {
    ctx.fillStyle = foreground();
    ctx.fillText(`L${l + 1}`, 4, 24 + l * (THUMB + GAP) + THUMB / 2);
    for (let h = 0; h < heads; h++) {
      const x = 40 + h * (THUMB + GAP);
      const y = 24 + l * (THUMB + GAP);
      paintMatrix(ctx, r.attentions, offsetOf(r, l, h), n, x, y, THUMB);
      if (l === layer && h === head) {
        ctx.strokeStyle = foreground();
        ctx.lineWidth = 3;
        ctx.strokeRect(x - 2, y - 2, THUMB + 4, THUMB + 4);
      }
    }
  }
}

function drawToggles(heads: number): void {
  if (activeHeads.length !== heads) activeHeads = Array(heads).fill(true);
  const box = $('head-toggles');
  if (box.children.length !== heads) {
    box.replaceChildren(
      ...Array.from({ length: heads }, (_, h) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.textContent = `H${h + 1}`;
        b.style.setProperty('--head', HEAD_COLOURS[h % HEAD_COLOURS.length]);
        b.addEventListener('click', () => {
          activeHeads[h] = !activeHeads[h];
          render();
        });
        b.addEventListener('dblclick', () => {
          activeHeads = activeHeads.map((_, k) => k === h);
          render();
        });
        return b;
      }),
    );
  }
  [...box.children].forEach((b, h) => b.setAttribute('aria-pressed', String(activeHeads[h])));
}

/** A figure for one step: title, formula, shape, heatmap, value range. */
function stepFigure(title: string, formula: string, m: MatrixView): HTMLLIElement {
  const li = document.createElement('li');
  const h = document.createElement('h3');
  h.textContent = title;
  const f = document.createElement('code');
  f.textContent = formula;
  const canvas = document.createElement('canvas');
  const { min, max } = paint(canvas, m);
  canvas.setAttribute('aria-label', `${title}, ${m.rows} by ${m.cols}`);
  const caption = document.createElement('p');
  caption.className = 'note';
  caption.textContent = `[${m.rows} × ${m.cols}] · from ${min.toPrecision(3)} (dark) to ${max.toPrecision(3)} (bright)`;
  li.append(h, f, canvas, caption);
  return li;
}

function drawMath(r: Result): void {
  $('math-layer').textContent = String(layer + 1);
  $('math-head').textContent = String(head + 1);
  const list = $('steps');
  if (!r.q || !r.k || !r.v) return list.replaceChildren();
  const q = headOf(r.q[layer], head),
    k = headOf(r.k[layer], head),
    v = headOf(r.v[layer], head);
  const w = r.mode === 'model' ? weightsByLayer.get(layer) : undefined;
  if (r.mode === 'model' && w === undefined) {
    weightsByLayer.set(layer, 'pending');
    worker.postMessage({ id: 0, kind: 'weights', layer } satisfies Request);
  }
  const learned = w && w !== 'pending' ? w : null;
  const scale = $<HTMLInputElement>('scale').checked;
  const causal = $<HTMLInputElement>('causal').checked;
  const s = steps(q, k, v, { scale, causal });
  const dk = q.cols;
  const [, heads] = r.shape;
  // The concatenated heads: each head's weights · V side by side, as W_O receives them.
  const outs = Array.from(
    { length: heads },
    (_, h) =>
      steps(headOf(r.q![layer], h), headOf(r.k![layer], h), headOf(r.v![layer], h), { scale: true, causal: false })
        .output,
  );
  const n = q.rows,
    dv = v.cols;
  const concat = { data: new Float32Array(n * heads * dv), rows: n, cols: heads * dv };
  outs.forEach((o, h) => {
    for (let i = 0; i < n; i++) concat.data.set(o.data.subarray(i * dv, (i + 1) * dv), i * heads * dv + h * dv);
  });
  const inputs =
    r.mode === 'model' && r.inputs ? [stepFigure('Input', 'X: each token as a vector', whole(r.inputs[layer]))] : [];
  const projections = learned
    ? [
        stepFigure('Query weights', `W_Q, head ${head + 1}'s columns`, columns(learned.wq, head * q.cols, q.cols)),
        stepFigure('Key weights', `W_K, head ${head + 1}'s columns`, columns(learned.wk, head * k.cols, k.cols)),
        stepFigure('Value weights', `W_V, head ${head + 1}'s columns`, columns(learned.wv, head * v.cols, v.cols)),
      ]
    : [];
  list.replaceChildren(
    ...inputs,
    ...projections,
    stepFigure('Queries', r.mode === 'model' ? 'Q = X · W_Q (+ b)' : 'Q = X', s.q),
    stepFigure('Keys', r.mode === 'model' ? 'K = X · W_K (+ b)' : 'K = X', s.k),
    stepFigure('Values', r.mode === 'model' ? 'V = X · W_V (+ b)' : 'V = X', s.v),
    stepFigure('Scores', 'Q · Kᵀ', s.scores),
    stepFigure('Scaled', scale ? `÷ √d_k = ÷ √${dk}` : 'not scaled: the softmax saturates', s.scaled),
    stepFigure('Masked', causal ? 'later keys → −∞ (blank)' : 'no mask', s.masked),
    stepFigure('Weights', 'softmax, row by row', s.weights),
    stepFigure('Head output', 'weights · V', s.output),
    stepFigure('All heads side by side', `concat over ${heads} heads, then · W_O`, concat),
    ...(learned ? [stepFigure('Output weights', 'W_O: heads back to the model width', whole(learned.wo))] : []),
  );
  // For the tests: how far this page's arithmetic is from the engine's weights (same switches as the model).
  const engine = r.attentions.subarray(offsetOf(r, layer, head), offsetOf(r, layer, head) + n * n);
  const same = steps(q, k, v, { scale: true, causal: r.mode === 'model' && shownCausal }).weights.data;
  list.dataset.maxDifference = String(engine.reduce((worst, x, i) => Math.max(worst, Math.abs(x - same[i])), 0));
}
let shownCausal = false; // GPT-2 style models are causal

function render(): void {
  if (!shown) return;
  const r = shown;
  const [layers, heads] = r.shape;
  layer = Math.min(layer, layers - 1);
  head = Math.min(head, heads - 1);
  setOptions(layerSelect, layers, layer);
  setOptions(headSelect, heads, head);
  $('layer-label').textContent = String(layer + 1);
  $('head-label').textContent = String(head + 1);
  $('lines-layer').textContent = String(layer + 1);
  // Token strings come from the model's vocabulary: always text, never HTML.
  $('tokens').replaceChildren(
    ...r.tokens.map((t) => {
      const li = document.createElement('li');
      li.textContent = t;
      return li;
    }),
  );
  drawGrid(r);
  drawMap(map);
  drawToggles(heads);
  drawHeadView(lines, r.attentions, r.shape, layer, r.tokens, activeHeads, focus, foreground());
  drawMath(r);
  map.dataset.tokens = JSON.stringify(r.tokens);
  map.dataset.layer = String(layer);
  map.dataset.head = String(head);
  map.dataset.view = view;
  drawAcross();
  panels.render();
  share();
}

/** The large map's values now: the selected head's, or the rollout/flow matrix once it has arrived. */
function mapValues(): { data: Float32Array; offset: number } | null {
  if (!shown) return null;
  if (view === 'head') return { data: shown.attentions, offset: offsetOf(shown, layer, head) };
  return across?.matrix && acrossIsCurrent() ? { data: across.matrix, offset: 0 } : null;
}

const acrossIsCurrent = () =>
  !!across &&
  across.view === view &&
  across.residual === $<HTMLInputElement>('residual').checked &&
  JSON.stringify(across.tokens) === JSON.stringify(shown?.tokens);

function drawMap(canvas: HTMLCanvasElement): void {
  const values = mapValues();
  if (values) drawHead(canvas, values.data, values.offset, shown!.tokens, foreground());
  else canvas.getContext('2d')!.clearRect(0, 0, canvas.width, canvas.height);
}

/** Rollout or flow: the bars of the chosen token, the note, and a request when they are out of date. */
function drawAcross(): void {
  const box = $('bars-box');
  box.hidden = view === 'head';
  $('view-note').hidden = view === 'head';
  if (view === 'head' || !shown) return;
  const select = $<HTMLSelectElement>('bar-token');
  fillTokenOptions(select, shown.tokens);
  const token = Math.min(Number(select.value) || 0, shown.tokens.length - 1);
  select.value = String(token);
  const bars = $<HTMLCanvasElement>('bars');
  if (!acrossIsCurrent() || across!.token !== token) {
    send({ kind: 'across', view, residual: $<HTMLInputElement>('residual').checked, token });
    return;
  }
  drawBars(bars, across!.tokens, across!.bar, foreground(), accent());
  bars.dataset.values = JSON.stringify(Array.from(across!.bar));
  bars.dataset.view = across!.view;
  $('across-note').textContent = across!.note;
}

function select(l: number, h: number): void {
  layer = l;
  head = h;
  render();
}

/** [rows, columns] to move for an arrow key (and claims the key), or null for other keys. */
function arrowMove(event: KeyboardEvent): [number, number] | null {
  const moves: Record<string, [number, number]> = {
    ArrowLeft: [0, -1],
    ArrowRight: [0, 1],
    ArrowUp: [-1, 0],
    ArrowDown: [1, 0],
  };
  const move = moves[event.key] ?? null;
  if (move) event.preventDefault();
  return move;
}

/** Shows the weight of cell (i, j) of the large map in the readout. */
function readCell(i: number, j: number): void {
  if (!shown) return;
  const values = mapValues();
  if (!values) return;
  const w = values.data[values.offset + i * shown.tokens.length + j];
  cell.textContent = `“${shown.tokens[i]}” → “${shown.tokens[j]}”: ${w.toFixed(6)}`;
  Object.assign(cell.dataset, { row: String(i), col: String(j), weight: String(w) });
}

map.addEventListener('pointermove', (event) => {
  if (!shown) return;
  const at = cellAt(map, event, shown.tokens.length);
  if (at) readCell(at.i, at.j);
});

// Keyboard: arrow keys move through the cells of the focused map.
map.addEventListener('keydown', (event) => {
  if (!shown) return;
  const move = arrowMove(event);
  if (!move) return;
  const n = shown.tokens.length;
  const i = Math.min(Math.max(Number(cell.dataset.row ?? 0) + move[0], 0), n - 1);
  const j = Math.min(Math.max(Number(cell.dataset.col ?? 0) + move[1], 0), n - 1);
  readCell(i, j);
});

lines.addEventListener('pointermove', (event) => {
  if (!shown) return;
  const i = queryAt(lines, event, shown.tokens.length);
  if (i === focus) return;
  focus = i;
  drawHeadView(lines, shown.attentions, shown.shape, layer, shown.tokens, activeHeads, focus, foreground());
});
lines.addEventListener('pointerleave', () => {
  focus = null;
  render();
});

grid.addEventListener('click', (event) => {
  if (!shown) return;
  const rect = grid.getBoundingClientRect();
  const scale = grid.width / rect.width;
  const h = Math.floor(((event.clientX - rect.left) * scale - 40) / (THUMB + GAP));
  const l = Math.floor(((event.clientY - rect.top) * scale - 24) / (THUMB + GAP));
  const [layers, heads] = shown.shape;
  if (l >= 0 && h >= 0 && l < layers && h < heads) select(l, h);
});

grid.addEventListener('keydown', (event) => {
  if (!shown) return;
  const [layers, heads] = shown.shape;
  const move = arrowMove(event);
  if (!move) return;
  select(Math.min(Math.max(layer + move[0], 0), layers - 1), Math.min(Math.max(head + move[1], 0), heads - 1));
});

layerSelect.addEventListener('change', () => select(Number(layerSelect.value), head));
headSelect.addEventListener('change', () => select(layer, Number(headSelect.value)));
for (const id of ['scale', 'causal']) $(id).addEventListener('change', render);

const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
let counter = 0;
let latest = 0; // the newest run or load: older results are never shown
let latestLoad = 0;
const newest: Partial<Record<Request['kind'], number>> = {}; // per kind, the request whose reply counts

type Ask = Request extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;
function send(ask: Ask, transfer: Transferable[] = []): number {
  const id = ++counter;
  newest[ask.kind] = id;
  worker.postMessage({ ...ask, id } as Request, transfer);
  return id;
}

function request(): void {
  latest = send({ kind: 'run', text: text.value, mode, projections: true });
}

function load(source: Source, transfer: Transferable[] = []): void {
  modelId = source.kind === 'hub' ? source.id : source.kind;
  latest = latestLoad = send({ kind: 'load', source }, transfer);
  progress.hidden = source.kind !== 'hub';
  progress.value = 0;
  loadStatus.textContent = source.kind === 'hub' ? `Downloading ${source.id}…` : 'Loading…';
  loadStatus.dataset.state = 'loading';
}

worker.onmessage = (event: MessageEvent<Reply>) => {
  const reply = event.data;
  if (reply.kind === 'progress') {
    if (reply.id !== latestLoad) return;
    progress.value = reply.total ? reply.loaded / reply.total : 0;
    const mb = (x: number) => (x / 2 ** 20).toFixed(1);
    loadStatus.textContent = `${reply.file}: ${mb(reply.loaded)} MB${reply.total ? ` of ${mb(reply.total)} MB` : ''}`;
    return;
  }
  if (reply.kind === 'weights') {
    weightsByLayer.set(reply.layer, reply);
    render();
    return;
  }
  if (reply.kind === 'cost') {
    costShown = reply;
    drawCost(reply);
    return;
  }
  if (reply.kind === 'across' || reply.kind === 'compare' || reply.kind === 'intervene' || reply.kind === 'ablate') {
    if (reply.id !== newest[reply.kind]) return; // superseded by a newer request of the same kind
    if (reply.kind === 'across') {
      across = reply;
      render();
    } else panels.onReply(reply);
    return;
  }
  if (reply.kind === 'npy') {
    download(
      'attentions.npy',
      new Blob([reply.bytes as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }),
    );
    return;
  }
  if (reply.kind === 'error' && panels.onError(reply.during, reply.message)) return;
  if (reply.kind === 'error' && reply.during === 'across') {
    $('across-note').textContent = reply.message;
    return;
  }
  if (reply.kind === 'ready') {
    weightsByLayer.clear();
    across = null;
    if (restore && reply.id === 0 && restoreHub) {
      $<HTMLInputElement>('hub-id').value = restoreHub;
      queueMicrotask(() => load({ kind: 'hub', id: restoreHub }));
    } else if (restore) applyRestore();
    const { build, threads, simd, relaxedSimd, version } = reply.engine;
    const m = reply.model;
    shownCausal = m.architecture.startsWith('GPT2');
    const title = m.name === m.architecture ? m.name : `${m.name} (${m.architecture})`;
    $('model-name').textContent = `${title}: ${m.layers} layers × ${m.heads} heads, up to ${m.maxTokens} tokens`;
    $('model-name').dataset.architecture = m.architecture;
    $<HTMLInputElement>('causal').checked = shownCausal;
    progress.hidden = true;
    loadStatus.textContent = reply.id === 0 ? '' : 'Loaded.';
    loadStatus.dataset.state = 'ok';
    const info = $('engine-info');
    info.textContent =
      `attnscope ${version} · ${build} build · ${threads} thread${threads > 1 ? 's' : ''}` +
      (simd ? ' · SIMD128' : '') +
      (relaxedSimd ? ' with relaxed SIMD (fused multiply-add)' : '') +
      (reply.isolated ? '' : ' · this page is not cross-origin isolated, so it runs single-threaded');
    info.dataset.build = build;
    request();
    return;
  }
  if (reply.kind === 'error' && reply.during === 'load') {
    restore = null;
    progress.hidden = true;
    loadStatus.textContent = `Could not load the model: ${reply.message}${reply.id ? ' The previous model is still loaded.' : ''}`;
    loadStatus.dataset.state = 'error';
    return;
  }
  if (reply.id < latest) return; // superseded by newer input: never shown out of order
  if (reply.kind === 'error') {
    status.textContent = `Error: ${reply.message}`;
    status.dataset.state = 'error';
    return;
  }
  shown = reply;
  status.dataset.state = 'ok';
  status.textContent =
    `${reply.tokens.length} tokens · ${reply.ms.toFixed(1)} ms` +
    (reply.truncated
      ? ` · truncated: the model reads at most ${reply.tokens.length} of ${reply.totalTokens} tokens`
      : '');
  render();
};
worker.onerror = (event) => {
  status.textContent = `Error: the worker failed (${event.message})`;
  status.dataset.state = 'error';
};

text.addEventListener('input', request);
for (const radio of document.querySelectorAll<HTMLInputElement>('input[name=mode]')) {
  radio.addEventListener('change', () => {
    mode = radio.value as Mode;
    request();
  });
}
$('shuffle').addEventListener('click', () => {
  const words = text.value.split(/\s+/).filter(Boolean);
  for (let i = words.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [words[i], words[j]] = [words[j], words[i]];
  }
  text.value = words.join(' ');
  request();
});
$('load-default').addEventListener('click', () => load({ kind: 'default' }));
$('load-hub').addEventListener('click', () => load({ kind: 'hub', id: $<HTMLInputElement>('hub-id').value.trim() }));
$('hub-id').addEventListener('keydown', (event) => {
  if (event.key === 'Enter') $('load-hub').click();
});

async function loadFiles(list: FileList | File[]): Promise<void> {
  const files: Record<string, ArrayBuffer> = {};
  for (const f of list) files[f.name] = await f.arrayBuffer();
  load({ kind: 'files', files }, Object.values(files));
}
$<HTMLInputElement>('files').addEventListener('change', (event) => {
  const input = event.target as HTMLInputElement;
  if (input.files?.length) void loadFiles(input.files);
});
document.addEventListener('dragover', (event) => event.preventDefault());
document.addEventListener('drop', (event) => {
  event.preventDefault();
  if (event.dataTransfer?.files.length) void loadFiles(event.dataTransfer.files);
});

/** The measured points, and the least-squares a·n² + b·n through them. */
function drawCost(r: Extract<Reply, { kind: 'cost' }>, canvas = $<HTMLCanvasElement>('cost')): void {
  const ctx = canvas.getContext('2d')!;
  const { width: w, height: h } = canvas;
  const pad = 40;
  const maxN = r.points.at(-1)!.n;
  const maxMs = r.points.reduce((m, p) => Math.max(m, p.ms), 0);
  const X = (n: number) => pad + (n / maxN) * (w - 2 * pad);
  const Y = (ms: number) => h - pad - (ms / maxMs) * (h - 2 * pad);
  // Fit ms ≈ a·n² + b·n (normal equations for two unknowns).
  let s4 = 0,
    s3 = 0,
    s2 = 0,
    t2 = 0,
    t1 = 0;
  for (const { n, ms } of r.points) {
    s4 += n ** 4;
    s3 += n ** 3;
    s2 += n ** 2;
    t2 += ms * n * n;
    t1 += ms * n;
  }
  const det = s4 * s2 - s3 * s3;
  const a = (t2 * s2 - s3 * t1) / det,
    b = (s4 * t1 - s3 * t2) / det;
  ctx.clearRect(0, 0, w, h);
  ctx.strokeStyle = ctx.fillStyle = foreground();
  ctx.font = '12px system-ui, sans-serif';
  ctx.strokeRect(pad, pad, w - 2 * pad, h - 2 * pad);
  ctx.fillText(`${maxMs.toFixed(1)} ms`, 2, pad);
  ctx.fillText('0', pad - 12, h - pad);
  ctx.fillText(`n = ${maxN}`, w - pad - 40, h - pad + 16);
  ctx.beginPath();
  for (let n = 0; n <= maxN; n += maxN / 64) ctx[n ? 'lineTo' : 'moveTo'](X(n), Y(a * n * n + b * n));
  ctx.stroke();
  ctx.fillStyle = HEAD_COLOURS[5];
  for (const p of r.points) ctx.fillRect(X(p.n) - 3, Y(p.ms) - 3, 6, 6);
  canvas.dataset.points = JSON.stringify(r.points);
  const last = r.points.at(-1)!,
    half = r.points.at(-2)!;
  $('cost-note').textContent =
    `${r.heads} heads × d_k ${r.dk}, every head's weights returned: doubling n from ${half.n} to ${last.n} took ` +
    `${(last.ms / half.ms).toFixed(1)}× as long (quadratic growth is 4×). Line: ${a.toExponential(2)}·n² ${b < 0 ? '−' : '+'} ${Math.abs(b).toExponential(2)}·n ms.`;
}
$('measure').addEventListener('click', () => worker.postMessage({ id: 0, kind: 'cost' } satisfies Request));

drawLegend($<HTMLCanvasElement>('legend'));
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', render);

// What the page shows, in its URL: restored from a shared link, kept up to date as it changes.
let restore: ReturnType<typeof readShared> | null = readShared(location.hash);
const restoreHub = restore.model && restore.model !== 'default' && restore.model !== 'files' ? restore.model : null;
if (restore.text !== undefined) text.value = restore.text;
if (restore.view) setView(restore.view);

/** Applies the link's layer and head once the model it names is loaded. */
function applyRestore(): void {
  if (restore?.layer !== undefined) layer = restore.layer;
  if (restore?.head !== undefined) head = restore.head;
  restore = null;
}

function share(): void {
  if (!shown || restore) return; // a link being restored is not overwritten
  const hash = writeShared({ text: text.value, model: modelId === 'files' ? 'default' : modelId, layer, head, view });
  if (location.hash !== hash) history.replaceState(null, '', hash);
  $<HTMLInputElement>('share-link').value = location.href;
}

function setView(next: View): void {
  view = next;
  for (const radio of document.querySelectorAll<HTMLInputElement>('input[name=view]'))
    radio.checked = radio.value === next;
}
for (const radio of document.querySelectorAll<HTMLInputElement>('input[name=view]'))
  radio.addEventListener('change', () => {
    setView(radio.value as View);
    render();
  });
$('residual').addEventListener('change', render);
$('bar-token').addEventListener('change', render);

$('copy-link').addEventListener('click', () => {
  share();
  const link = $<HTMLInputElement>('share-link');
  link.select();
  navigator.clipboard?.writeText(link.value).catch(() => undefined);
});

$('download-json').addEventListener('click', () => {
  if (!shown) return;
  const json = attentionsJson(
    { model: $('model-name').textContent ?? '', text: text.value },
    shown.tokens,
    shown.shape,
    shown.attentions,
  );
  download('attentions.json', new Blob([json], { type: 'application/json' }));
});
$('download-npy').addEventListener('click', () => send({ kind: 'npy' }));

// Every view exports as PNG (the canvas as shown) and SVG (its drawing code, recorded as SVG).
const accent = () => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim() || '#3b5bdb';
/** Every step of the math view in one picture: three per row, each titled. */
function composeMath(canvas: HTMLCanvasElement): HTMLCanvasElement {
  const steps = [...document.querySelectorAll<HTMLLIElement>('#steps > li')];
  const cell = 200,
    title = 24,
    per = 3;
  canvas.width = per * (cell + 16);
  canvas.height = Math.ceil(steps.length / per) * (cell + title + 16);
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.font = '13px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  steps.forEach((li, k) => {
    const x = (k % per) * (cell + 16),
      y = Math.floor(k / per) * (cell + title + 16);
    ctx.fillStyle = foreground();
    ctx.fillText(li.querySelector('h3')?.textContent ?? '', x, y + title / 2);
    const source = li.querySelector('canvas')!;
    const scale = Math.min(cell / source.width, cell / source.height);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(source, x, y + title, source.width * scale, source.height * scale);
  });
  return canvas;
}

const VIEWS: Record<string, { canvas: () => HTMLCanvasElement; draw: (c: HTMLCanvasElement) => void }> = {
  grid: { canvas: () => grid, draw: (c) => shown && drawGrid(shown, c) },
  map: { canvas: () => map, draw: drawMap },
  bars: {
    canvas: () => $('bars'),
    draw: (c) => across && drawBars(c, across.tokens, across.bar, foreground(), accent()),
  },
  lines: {
    canvas: () => lines,
    draw: (c) =>
      shown && drawHeadView(c, shown.attentions, shown.shape, layer, shown.tokens, activeHeads, focus, foreground()),
  },
  compare: { canvas: () => $('compare-map'), draw: (c) => panels.draw('compare', c) },
  intervene: { canvas: () => $('intervene-change'), draw: (c) => panels.draw('intervene', c) },
  cost: { canvas: () => $('cost'), draw: (c) => costShown && drawCost(costShown, c) },
  math: { canvas: () => composeMath(document.createElement('canvas')), draw: composeMath },
  ablate: { canvas: () => $('ablate-bars'), draw: (c) => panels.draw('ablate', c) },
};
document.addEventListener('click', (event) => {
  const button = (event.target as Element).closest<HTMLButtonElement>('button[data-export]');
  const target = button && VIEWS[button.dataset.export!];
  if (!target) return;
  const name = `attnscope-${button.dataset.export}-L${layer + 1}-H${head + 1}`;
  const canvas = target.canvas();
  if (button.dataset.format === 'png') downloadPng(name, canvas);
  else downloadSvg(name, canvas, getComputedStyle(document.body).backgroundColor, target.draw);
});

const panels = new AnalysisPanels({
  shown: () => shown,
  layer: () => layer,
  head: () => head,
  select,
  foreground,
  accent,
  send: (ask) => send(ask),
});
