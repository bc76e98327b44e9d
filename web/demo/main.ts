// The page: sends text to the worker, shows the newest result, never blocks.
import { cellAt, drawHead, drawLegend, paintMatrix } from './heatmap.js';
import type { Mode, Reply, Request } from './worker.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const text = $<HTMLTextAreaElement>('text');
const status = $<HTMLParagraphElement>('status');
const tokenList = $<HTMLOListElement>('tokens');
const grid = $<HTMLCanvasElement>('grid');
const map = $<HTMLCanvasElement>('map');
const cell = $<HTMLElement>('cell');
const layerSelect = $<HTMLSelectElement>('layer');
const headSelect = $<HTMLSelectElement>('head');
const engineInfo = $<HTMLParagraphElement>('engine-info');

type Result = Extract<Reply, { kind: 'result' }>;
let shown: Result | null = null;
let layer = 0;
let head = 0;
let mode: Mode = 'model';

const foreground = () => getComputedStyle(document.body).color;

/** Offset of (layer, head)'s n×n block in the attentions array. */
function offsetOf(r: Result, l: number, h: number): number {
  const [, heads, n] = r.shape;
  return (l * heads + h) * n * n;
}

function setOptions(select: HTMLSelectElement, count: number, value: number): void {
  if (select.options.length !== count) {
    select.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i + 1), String(i))));
  }
  select.value = String(value);
}

const THUMB = 96;
const GAP = 8;

function drawGrid(r: Result): void {
  const [layers, heads, n] = r.shape;
  grid.width = heads * (THUMB + GAP) + 40;
  grid.height = layers * (THUMB + GAP) + 24;
  const ctx = grid.getContext('2d')!;
  ctx.clearRect(0, 0, grid.width, grid.height);
  ctx.fillStyle = foreground();
  ctx.font = '12px system-ui, sans-serif';
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
  // Token strings come from the model's vocabulary: always text, never HTML.
  tokenList.replaceChildren(
    ...r.tokens.map((t) => {
      const li = document.createElement('li');
      li.textContent = t;
      return li;
    }),
  );
  drawGrid(r);
  drawHead(map, r.attentions, offsetOf(r, layer, head), r.tokens, foreground());
  map.dataset.tokens = JSON.stringify(r.tokens);
  map.dataset.layer = String(layer);
  map.dataset.head = String(head);
}

function select(l: number, h: number): void {
  layer = l;
  head = h;
  render();
}

map.addEventListener('pointermove', (event) => {
  if (!shown) return;
  const at = cellAt(map, event, shown.tokens.length);
  if (!at) return;
  const w = shown.attentions[offsetOf(shown, layer, head) + at.i * shown.tokens.length + at.j];
  cell.textContent = `“${shown.tokens[at.i]}” → “${shown.tokens[at.j]}”: ${w.toFixed(6)}`;
  Object.assign(cell.dataset, { row: String(at.i), col: String(at.j), weight: String(w) });
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
  const moves: Record<string, [number, number]> = {
    ArrowLeft: [0, -1],
    ArrowRight: [0, 1],
    ArrowUp: [-1, 0],
    ArrowDown: [1, 0],
  };
  const move = moves[event.key];
  if (!move) return;
  event.preventDefault();
  select(Math.min(Math.max(layer + move[0], 0), layers - 1), Math.min(Math.max(head + move[1], 0), heads - 1));
});

layerSelect.addEventListener('change', () => select(Number(layerSelect.value), head));
headSelect.addEventListener('change', () => select(layer, Number(headSelect.value)));

const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
let latest = 0;

function request(): void {
  latest += 1;
  worker.postMessage({ id: latest, text: text.value, mode } satisfies Request);
}

worker.onmessage = (event: MessageEvent<Reply>) => {
  const reply = event.data;
  if (reply.kind === 'ready') {
    const { build, threads, simd, version } = reply.engine;
    $('model-name').textContent = `${reply.model.name} (${reply.model.layers} layers × ${reply.model.heads} heads)`;
    engineInfo.textContent =
      `attnscope ${version} · ${build} build · ${threads} thread${threads > 1 ? 's' : ''}` +
      (simd ? ' · SIMD128' : '') +
      (reply.isolated ? '' : ' · this page is not cross-origin isolated, so it runs single-threaded');
    engineInfo.dataset.build = build;
    request();
    return;
  }
  if (reply.id !== 0 && reply.id < latest) return; // superseded by newer input: never shown out of order
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
drawLegend($<HTMLCanvasElement>('legend'));
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', render);
