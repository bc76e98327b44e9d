// The navigator: every layer × head as a small map, rows layers and columns heads, sized to its
// pane. Under grouped-query attention the query heads stand in groups under the key/value head they
// share (bracketed "KV 1", "KV 2", …). Click one, or use the arrow keys (up and down for layers, left
// and right for heads). The thumbnails are painted once per run; moving the selection only redraws its outline.
import type { Colours } from '../draw/charts.js';
import { paintMatrix } from '../draw/heatmap.js';
import { headMap } from '../maps.js';
import type { RunResult } from '../protocol.js';
import { $, changes, type Page, type View } from './view.js';

const LEFT = 30;

interface Geometry {
  thumb: number;
  step: number;
  /** Extra room between groups of query heads that share a key/value head. */
  group: number;
  groupGap: number;
  /** Room above the thumbnails: head labels, and the key/value groups' brackets when heads share them. */
  top: number;
}

function geometry(width: number, heads: number, kvHeads: number): Geometry {
  const group = kvHeads > 0 && kvHeads < heads ? heads / kvHeads : heads;
  const groupGap = group < heads ? 6 : 0;
  const free = width - LEFT - 4 - (heads / group - 1) * groupGap;
  const step = Math.max(10, Math.min(104, Math.floor(free / heads)));
  const thumb = step - (step >= 40 ? 8 : 2);
  return { thumb, step, group, groupGap, top: group < heads ? 34 : 18 };
}

const xOf = (g: Geometry, h: number) => LEFT + h * g.step + Math.floor(h / g.group) * g.groupGap;

/** Draws every thumbnail with its labels; `selected` gets an outline. */
function paint(
  canvas: HTMLCanvasElement,
  r: RunResult,
  g: Geometry,
  c: Colours,
  selected: { layer: number; head: number },
): void {
  const [, heads, n] = r.shape;
  const layers = r.layers;
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'center';
  ctx.fillStyle = c.muted;
  ctx.strokeStyle = c.muted;
  const every = Math.ceil(24 / g.step);
  for (let h = 0; h < heads; h += every) ctx.fillText(`H${h + 1}`, xOf(g, h) + g.thumb / 2, g.top - 9);
  if (g.group < heads)
    for (let kv = 0; kv < heads / g.group; kv++) {
      const [x0, x1] = [xOf(g, kv * g.group), xOf(g, (kv + 1) * g.group - 1) + g.thumb];
      ctx.fillRect(x0, 13, x1 - x0, 1);
      ctx.fillRect(x0, 13, 1, 4);
      ctx.fillRect(x1 - 1, 13, 1, 4);
      ctx.fillText(x1 - x0 >= 34 ? `KV ${kv + 1}` : `${kv + 1}`, (x0 + x1) / 2, 6);
    }
  ctx.textAlign = 'left';
  for (let l = 0; l < layers; l++) {
    if (l % Math.ceil(14 / g.step) === 0) ctx.fillText(`L${l + 1}`, 2, g.top + l * g.step + g.thumb / 2);
    for (let h = 0; h < heads; h++) {
      const map = headMap(r, l, h);
      if (map) paintMatrix(ctx, map, n, xOf(g, h), g.top + l * g.step, g.thumb);
      else ctx.strokeRect(xOf(g, h) + 0.5, g.top + l * g.step + 0.5, g.thumb - 1, g.thumb - 1); // another run away
    }
  }
  ctx.strokeStyle = c.accent;
  ctx.lineWidth = 2.5;
  ctx.strokeRect(xOf(g, selected.head) - 2, g.top + selected.layer * g.step - 2, g.thumb + 4, g.thumb + 4);
}

export function gridView(page: Page): View {
  const canvas = $<HTMLCanvasElement>('grid');
  const dirty = changes();
  const painted = changes();
  let g: Geometry | null = null;
  let thumbs: OffscreenCanvas | null = null;
  let state: { result: RunResult; layer: number; head: number } | null = null;

  function draw(): void {
    if (!state) return;
    const { result: r, layer, head } = state;
    const [layers, heads] = [r.layers, r.shape[1]];
    const width = Math.max(120, canvas.clientWidth);
    const kvHeads = (page.store.get().model as { kvHeads?: number } | null)?.kvHeads ?? heads;
    g = geometry(width, heads, kvHeads);
    const height = g.top + layers * g.step + 4;
    if (canvas.width !== width || canvas.height !== height) Object.assign(canvas, { width, height });
    const c = page.colours();
    if (painted(r, width, c.fg) || !thumbs) {
      thumbs = new OffscreenCanvas(width, height);
      // The thumbnails are the costly part: painted once, without an outline.
      paint(thumbs as unknown as HTMLCanvasElement, r, g, c, { layer: -9, head: -9 });
    }
    const ctx = canvas.getContext('2d')!;
    ctx.clearRect(0, 0, width, height);
    ctx.drawImage(thumbs, 0, 0);
    ctx.strokeStyle = c.accent;
    ctx.lineWidth = 2.5;
    ctx.strokeRect(xOf(g, head) - 2, g.top + layer * g.step - 2, g.thumb + 4, g.thumb + 4);
    Object.assign(canvas.dataset, {
      held: r.mapLayers.join(),
      x0: String(LEFT),
      y0: String(g.top),
      step: String(g.step),
      thumb: String(g.thumb),
      group: String(g.group),
      groupGap: String(g.groupGap),
    });
  }

  function headAt(e: MouseEvent): { layer: number; head: number } | null {
    if (!state || !g) return null;
    const rect = canvas.getBoundingClientRect();
    const scale = canvas.width / rect.width;
    const x = (e.clientX - rect.left) * scale,
      y = (e.clientY - rect.top) * scale;
    const [layers, heads] = [state.result.layers, state.result.shape[1]];
    const layer = Math.floor((y - g!.top) / g.step);
    const head = Array.from({ length: heads }, (_, h) => h).find((h) => x >= xOf(g!, h) && x < xOf(g!, h) + g!.step);
    return head !== undefined && layer >= 0 && layer < layers ? { layer, head } : null;
  }

  canvas.addEventListener('click', (e) => {
    const at = headAt(e);
    if (at) page.store.select(at);
  });
  canvas.addEventListener('mousemove', (e) => {
    const at = headAt(e);
    const held = at && state && state.result.mapLayers.includes(at.layer);
    canvas.title = at
      ? `Layer ${at.layer + 1}, head ${at.head + 1}${held ? '' : ': choose it to compute its maps'}`
      : '';
  });
  canvas.addEventListener('keydown', (e) => {
    const moves: Record<string, [number, number]> = {
      ArrowLeft: [0, -1],
      ArrowRight: [0, 1],
      ArrowUp: [-1, 0],
      ArrowDown: [1, 0],
    };
    const move = moves[e.key];
    if (!move || !state) return;
    e.preventDefault();
    page.store.select({ layer: state.layer + move[0], head: state.head + move[1] });
  });
  new ResizeObserver(draw).observe(canvas.parentElement!);

  return {
    id: 'grid',
    render(s) {
      if (!s.result || !dirty(s.result, s.layer, s.head, page.colours().fg)) return;
      state = { result: s.result, layer: s.layer, head: s.head };
      draw();
    },
    export: {
      canvas: () => canvas,
      draw: (c) => state && g && paint(c, state.result, g, page.colours(), state),
    },
  };
}
