// The logit lens (nostalgebraist, 2020): for every layer (rows) and position (columns), the token the model's
// final norm and head read off that layer's output, on a background coloured by its probability. Only the
// columns in view are drawn, so 2,048 positions scroll as easily as 20. Hover a cell to read it; click it to
// select that layer and position in the maps.
import { colourBar, viridis } from '../draw/heatmap.js';
import type { State } from '../state.js';
import { visible } from './next.js';
import { $, changes, type Page, type View } from './view.js';

const CELL_W = 72,
  CELL_H = 22,
  LEFT = 40,
  TOP = 26,
  BAR = 34;

type Lens = NonNullable<NonNullable<State['result']>['logitLens']>;

interface Frame {
  lens: Lens;
  inputs: string[];
  layers: number;
  selected: { layer: number; position: number | null };
  hover: { layer: number; position: number } | null;
}

/** Draws the columns from `first` that fit `width` CSS pixels. */
function draw(
  ctx: CanvasRenderingContext2D,
  width: number,
  f: Frame,
  first: number,
  c: { fg: string; accent: string },
): void {
  const n = f.inputs.length;
  const height = TOP + f.layers * CELL_H + BAR;
  ctx.clearRect(0, 0, width, height);
  ctx.font = '12px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  const last = Math.min(n, first + Math.ceil((width - LEFT) / CELL_W) + 1);
  for (let i = first; i < last; i++) {
    const x = LEFT + (i - first) * CELL_W;
    ctx.fillStyle = c.fg;
    ctx.textAlign = 'center';
    ctx.fillText(visible(f.inputs[i]), x + CELL_W / 2, TOP / 2, CELL_W - 6);
    for (let l = 0; l < f.layers; l++) {
      const p = f.lens.probs[l * n + i];
      const [r, g, b] = viridis(p);
      ctx.fillStyle = `rgb(${r},${g},${b})`;
      ctx.fillRect(x + 1, TOP + l * CELL_H + 1, CELL_W - 2, CELL_H - 2);
      ctx.fillStyle = p > 0.6 ? '#111' : '#f4f4f8';
      ctx.fillText(visible(f.lens.tokens[l][i]), x + CELL_W / 2, TOP + (l + 0.5) * CELL_H, CELL_W - 8);
    }
  }
  ctx.clearRect(0, 0, LEFT, height);
  ctx.textAlign = 'left';
  ctx.fillStyle = c.fg;
  for (let l = 0; l < f.layers; l++) ctx.fillText(`L${l + 1}`, 4, TOP + (l + 0.5) * CELL_H);
  const mark = (at: { layer: number; position: number } | null, colour: string) => {
    if (!at || at.position < first || at.position >= last) return;
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2;
    ctx.strokeRect(LEFT + (at.position - first) * CELL_W, TOP + at.layer * CELL_H, CELL_W, CELL_H);
  };
  const { layer, position } = f.selected;
  mark(position === null ? null : { layer, position }, c.accent);
  mark(f.hover, c.fg);
  const bar = { x: LEFT, y: TOP + f.layers * CELL_H + 8, w: Math.min(160, width - LEFT - 8), h: 8 };
  colourBar(ctx, bar, { lo: 0, hi: 1, ticks: [0, 0.5, 1], title: 'p' }, c.fg);
}

export function lensView(page: Page): View {
  const scroll = $('lens-scroll');
  const track = $('lens-track');
  const canvas = $<HTMLCanvasElement>('lens');
  const readout = $('lens-cell');
  const note = $('lens-note');
  const dirty = changes();
  let frame: Frame | null = null;

  const first = () => Math.floor(scroll.scrollLeft / CELL_W);
  function paint(): void {
    if (!frame) return;
    const dpr = window.devicePixelRatio || 1;
    const width = scroll.clientWidth;
    const height = TOP + frame.layers * CELL_H + BAR;
    Object.assign(canvas.style, { width: `${width}px`, height: `${height}px` });
    [canvas.width, canvas.height] = [Math.round(width * dpr), Math.round(height * dpr)];
    const ctx = canvas.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    draw(ctx, width, frame, first(), page.colours());
  }
  /** The cell under a pointer, in layers and positions. */
  function cellAt(e: MouseEvent): { layer: number; position: number } | null {
    if (!frame) return null;
    const rect = canvas.getBoundingClientRect();
    const x = e.clientX - rect.left - LEFT,
      y = e.clientY - rect.top - TOP;
    const position = first() + Math.floor(x / CELL_W),
      layer = Math.floor(y / CELL_H);
    const inside = x >= 0 && y >= 0 && layer < frame.layers && position < frame.inputs.length;
    return inside ? { layer, position } : null;
  }
  function read(at: { layer: number; position: number }): void {
    if (!frame) return;
    const n = frame.inputs.length;
    const p = frame.lens.probs[at.layer * n + at.position];
    const token = frame.lens.tokens[at.layer][at.position];
    readout.textContent = `Layer ${at.layer + 1} after “${frame.inputs[at.position]}” (position ${at.position + 1}): “${token}”, p = ${p.toFixed(4)}`;
    Object.assign(readout.dataset, {
      layer: String(at.layer),
      position: String(at.position),
      id: String(frame.lens.ids[at.layer * n + at.position]),
      token,
      p: String(p),
    });
  }
  canvas.addEventListener('pointermove', (e) => {
    const at = cellAt(e);
    if (at) read(at);
    if (frame && JSON.stringify(at) !== JSON.stringify(frame.hover)) {
      frame.hover = at;
      paint();
    }
  });
  canvas.addEventListener('pointerleave', () => {
    if (frame) frame.hover = null;
    paint();
  });
  canvas.addEventListener('click', (e) => {
    const at = cellAt(e);
    if (at) page.store.select({ layer: at.layer, token: at.position, view: 'head' });
  });
  scroll.addEventListener('scroll', paint);
  /** The export's size: the positions from the first in view, up to the pane's width; every layer and the bar. */
  const exported = () => {
    if (!frame) return { width: 0, height: 0 };
    const columns = frame.inputs.length - first();
    return {
      width: Math.min(scroll.clientWidth, LEFT + columns * CELL_W),
      height: TOP + frame.layers * CELL_H + BAR,
    };
  };
  const drawExport = (c: HTMLCanvasElement) =>
    frame && draw(c.getContext('2d')!, exported().width, { ...frame, hover: null }, first(), page.colours());
  new ResizeObserver(paint).observe(scroll);
  $('lens-choose').addEventListener('click', () => $('model-pick').focus());

  return {
    id: 'lens',
    pane: 'lens',
    render(s) {
      const lm = !!s.model?.languageModel && s.mode === 'model';
      $('lens-empty').hidden = lm;
      $('lens-body').hidden = !lm;
      const r = s.result;
      const lens = r?.logitLens;
      note.textContent = !lm
        ? ''
        : lens
          ? `Each layer's most likely next token at each position, read through the final norm and the head; the last row is the model's own prediction. Click a cell to open that layer and position.`
          : r?.origin === 'generation'
            ? 'The lens comes back when the generation ends.'
            : 'Computing the logit lens (one head per layer and position)…';
      if (!lm || !r || !lens) {
        frame = null;
        track.style.width = '0px';
        return;
      }
      if (!dirty(lens, s.layer, s.token, page.colours().fg)) return;
      const previous = frame?.lens;
      if (previous !== lens) {
        // A reading of the previous lens names positions and tokens this one may not have.
        readout.textContent = 'Hover a cell to read it; click it to open that layer and position.';
        for (const key of ['layer', 'position', 'id', 'token', 'p']) delete readout.dataset[key];
      }
      frame = {
        lens,
        inputs: r.tokens,
        layers: r.layers,
        selected: { layer: s.layer, position: s.token },
        hover: null,
      };
      track.style.width = `${LEFT + r.tokens.length * CELL_W}px`;
      canvas.dataset.positions = String(r.tokens.length);
      Object.assign(canvas.dataset, {
        x0: String(LEFT),
        y0: String(TOP),
        cellW: String(CELL_W),
        cellH: String(CELL_H),
      });
      // The selected position stays in view; a new text starts at its end, where typing happens.
      const column = s.token ?? (previous === lens ? null : r.tokens.length - 1);
      if (column !== null) {
        const x = column * CELL_W;
        const room = scroll.clientWidth - LEFT - CELL_W;
        if (x < scroll.scrollLeft || x > scroll.scrollLeft + room) scroll.scrollLeft = Math.max(0, x - room / 2);
      }
      paint();
    },
    export: {
      // The columns in view and no more: a short text's lens is as wide as its positions, not the pane.
      canvas: () => {
        const c = document.createElement('canvas');
        const { width, height } = exported();
        [c.width, c.height] = [width, height];
        drawExport(c);
        return c;
      },
      size: exported,
      draw: drawExport,
    },
  };
}
