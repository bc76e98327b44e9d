// The page: sends text to the worker, draws the latest result, never blocks.
import type { Reply, Request } from './worker.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const text = $<HTMLTextAreaElement>('text');
const status = $<HTMLParagraphElement>('status');
const canvas = $<HTMLCanvasElement>('map');
const cell = $<HTMLElement>('cell');
const engineInfo = $<HTMLParagraphElement>('engine-info');

// Viridis at nine stops (perceptually uniform, colour-blind safe), interpolated linearly.
const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725'].map(
  (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)),
);
function viridis(t: number): string {
  const x = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - i;
  const [r, g, b] = VIRIDIS[i].map((c, k) => Math.round(c + f * (VIRIDIS[i + 1][k] - c)));
  return `rgb(${r},${g},${b})`;
}

let shown: Extract<Reply, { kind: 'result' }> | null = null;
const LABEL = 110; // px reserved for token labels on each axis

function draw(): void {
  const ctx = canvas.getContext('2d')!;
  const size = canvas.width;
  const fg = getComputedStyle(document.body).color;
  ctx.clearRect(0, 0, size, size);
  if (!shown || shown.n === 0) return;
  const { n, tokens, weights } = shown;
  const cellSize = (size - LABEL) / n;
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      ctx.fillStyle = viridis(weights[i * n + j]);
      ctx.fillRect(LABEL + j * cellSize, LABEL + i * cellSize, Math.ceil(cellSize), Math.ceil(cellSize));
    }
  ctx.fillStyle = fg;
  ctx.font = `${Math.min(14, Math.max(8, cellSize * 0.6))}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  for (let i = 0; i < n; i++) {
    ctx.textAlign = 'right';
    ctx.fillText(tokens[i], LABEL - 6, LABEL + (i + 0.5) * cellSize, LABEL - 8); // queries down the side
    ctx.save();
    ctx.translate(LABEL + (i + 0.5) * cellSize, LABEL - 6);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'left';
    ctx.fillText(tokens[i], 0, 0, LABEL - 8); // keys across the top
    ctx.restore();
  }
  canvas.dataset.n = String(n);
}

canvas.addEventListener('pointermove', (event) => {
  if (!shown || shown.n === 0) return;
  const rect = canvas.getBoundingClientRect();
  const scale = canvas.width / rect.width;
  const cellSize = (canvas.width - LABEL) / shown.n;
  const j = Math.floor(((event.clientX - rect.left) * scale - LABEL) / cellSize);
  const i = Math.floor(((event.clientY - rect.top) * scale - LABEL) / cellSize);
  if (i < 0 || j < 0 || i >= shown.n || j >= shown.n) return;
  const w = shown.weights[i * shown.n + j];
  cell.textContent = `“${shown.tokens[i]}” → “${shown.tokens[j]}”: ${w.toFixed(6)}`;
  cell.dataset.row = String(i);
  cell.dataset.col = String(j);
  cell.dataset.weight = String(w);
});

const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
let latest = 0;

function request(): void {
  latest += 1;
  worker.postMessage({ id: latest, text: text.value } satisfies Request);
}

worker.onmessage = (event: MessageEvent<Reply>) => {
  const reply = event.data;
  if (reply.kind === 'ready') {
    const { build, threads, simd, version } = reply.info;
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
  status.textContent = `${reply.n} tokens · ${reply.ms.toFixed(2)} ms`;
  canvas.dataset.tokens = JSON.stringify(reply.tokens);
  draw();
};
worker.onerror = (event) => {
  status.textContent = `Error: the worker failed (${event.message})`;
  status.dataset.state = 'error';
};

text.addEventListener('input', request);
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', draw);
