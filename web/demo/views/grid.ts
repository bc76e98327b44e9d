// The navigator: every layer × head as a small map, rows layers and columns heads, sized to its
// pane. Under grouped-query attention the query heads stand in groups under the key/value head they
// share (bracketed "KV 1", "KV 2", …). Click one, or use the arrow keys (up and down for layers, left
// and right for heads). The thumbnails are pooled maps (draw/thumbnails.ts), folded in a slice at a time and
// grown a row per generated token; a frame paints at most 64 × 64 blocks per head, and at most one frame is
// painted per animation frame.
import type { Colours } from '../draw/charts.js';
import { Thumbnails } from '../draw/thumbnails.js';
import { ownRows } from '../map-rows.js';
import type { RunResult } from '../protocol.js';
import type { State } from '../state.js';
import { $, changes, type Page, type View } from './view.js';

const LEFT = 30;
/** How often the grid repaints while a generation streams (ms). */
const GENERATING_MS = 1000;

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
  canvas: HTMLCanvasElement | OffscreenCanvas,
  r: RunResult,
  thumbnails: Thumbnails,
  g: Geometry,
  c: Colours,
  selected: { layer: number; head: number },
): void {
  const heads = r.shape[1];
  const layers = r.layers;
  const ctx = canvas.getContext('2d') as CanvasRenderingContext2D;
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
  const atlas = thumbnails.paintAtlas();
  for (let l = 0; l < layers; l++) {
    if (l % Math.ceil(14 / g.step) === 0) ctx.fillText(`L${l + 1}`, 2, g.top + l * g.step + g.thumb / 2);
    for (let h = 0; h < heads; h++) {
      const picture = thumbnails.picture(l, h);
      if (atlas && picture) {
        const { width, height } = picture;
        // Averaging when a thumbnail has more blocks than pixels; crisp blocks when fewer.
        ctx.imageSmoothingEnabled = width > g.thumb;
        // A map with more keys than queries (across two texts) keeps its shape: as wide as the cell, less tall.
        const fit = g.thumb / Math.max(width, height);
        const [tw, th] = [width * fit, height * fit];
        const [x, y] = [xOf(g, h) + (g.thumb - tw) / 2, g.top + l * g.step + (g.thumb - th) / 2];
        ctx.drawImage(atlas, picture.x, picture.y, width, height, x, y, tw, th);
      } else ctx.strokeRect(xOf(g, h) + 0.5, g.top + l * g.step + 0.5, g.thumb - 1, g.thumb - 1); // another run away
    }
  }
  ctx.strokeStyle = c.accent;
  ctx.lineWidth = 2.5;
  ctx.strokeRect(xOf(g, selected.head) - 2, g.top + selected.layer * g.step - 2, g.thumb + 4, g.thumb + 4);
}

export function gridView(page: Page): View & { thumbnails(): ReturnType<Thumbnails['snapshot']> } {
  const canvas = $<HTMLCanvasElement>('grid');
  const dirty = changes();
  let g: Geometry | null = null;
  let state: { result: RunResult; layer: number; head: number } | null = null;
  let pending = 0;
  const thumbnails = new Thumbnails(() => redraw());
  /** Model loads so far: rows are kept only between runs of the same model. */
  let model: unknown = null;
  let loads = 0;

  function draw(): void {
    pending = 0;
    painted = performance.now();
    if (!state) return;
    const { result: r, layer, head } = state;
    const [layers, heads] = [r.layers, r.shape[1]];
    const width = Math.max(120, Math.round(room));
    const kvHeads = (page.store.get().model as { kvHeads?: number } | null)?.kvHeads ?? heads;
    g = geometry(width, heads, kvHeads);
    const height = g.top + layers * g.step + 4;
    if (canvas.width !== width || canvas.height !== height) Object.assign(canvas, { width, height });
    paint(canvas, r, thumbnails, g, page.colours(), { layer, head });
    Object.assign(canvas.dataset, {
      held: r.mapLayers.join(),
      complete: String(thumbnails.complete),
      x0: String(LEFT),
      y0: String(g.top),
      step: String(g.step),
      thumb: String(g.thumb),
      group: String(g.group),
      groupGap: String(g.groupGap),
    });
  }
  // While a generation streams, the grid repaints once a second: all of its thumbnails change with every token, and
  // painting them is the page's largest cost then (the map and the head view keep the tokens' pace).
  let painted = 0,
    timer = 0;
  const redraw = () => {
    if (pending || timer) return;
    const wait = page.store.get().generation ? painted + GENERATING_MS - performance.now() : 0;
    if (wait > 0)
      timer = window.setTimeout(() => {
        timer = 0;
        redraw();
      }, wait);
    else pending = requestAnimationFrame(draw);
  };

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
  // The pane's width, kept as it changes: a frame reads nothing of the page's layout.
  let room = canvas.parentElement!.clientWidth;
  new ResizeObserver(([entry]) => {
    room = entry.contentRect.width;
    redraw();
  }).observe(canvas.parentElement!);

  return {
    id: 'grid',
    render(s: Readonly<State>) {
      // A paint held back while a generation streamed goes at the next frame once it ends: the last tokens' rows
      // show at once, not up to a second later.
      if (timer && !s.generation) {
        clearTimeout(timer);
        timer = 0;
        redraw();
      }
      if (!s.result || !dirty(s.result, s.layer, s.head, page.colours().fg)) return;
      if (s.model !== model) [model, loads] = [s.model, loads + 1];
      const r = s.result;
      if (state?.result !== r)
        thumbnails.update({
          maps: r,
          ids: r.ids,
          layers: r.layers,
          key: JSON.stringify([loads, r.mode, r.shape[1]]),
          ownRows: ownRows(r),
          fresh: r.fresh,
        });
      state = { result: r, layer: s.layer, head: s.head };
      redraw();
    },
    export: {
      canvas: () => canvas,
      draw: (c) => state && g && paint(c, state.result, thumbnails, g, page.colours(), state),
    },
    thumbnails: () => thumbnails.snapshot(),
  };
}
