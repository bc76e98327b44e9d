// The image pane's picture: each figure is the model's input (as the model saw it, after its resize and crop) with
// one coloured square per patch laid over it at the chosen opacity, crisp (a patch is what the model reads, so the
// squares are not smoothed into a blur); under it the tokens that are no patch ([CLS], distillation, registers),
// apart, in the same colours with their values; and a colour bar. Two figures stand side by side when a second
// model runs beside the first. Canvas 2D only (fillRect, drawImage of pixel tiles, text), so the SVG recorder
// draws the same picture for the SVG export.
import type { Colours } from './charts.js';
import { colourBar, table, viridis } from './heatmap.js';
import type { Box } from './heatmap.js';
import { headColour, type FigureRun, type Shown } from '../vision.js';

export interface Figure {
  run: FigureRun;
  shown: Shown;
}

export interface FigureLayout {
  title: { x: number; y: number; w: number };
  /** The picture, in CSS pixels of the canvas. */
  box: Box;
  /** Where the tokens that are no patch stand, one chip each. */
  chips: Box[];
  bar: Box;
}

/** The caption's line (what every figure shows), then each figure's model. */
const CAPTION = 14;
const TITLE = 36;
const CHIP = 22;
const BAR = 34;
const GAP = 16;

/** What stands beside the picture when there is room to its right: the chips, then the colour bar. */
const ASIDE = 170;

/**
 * Where each figure goes on a canvas `width` CSS pixels wide, with `room` CSS pixels of height to fill (the pane's);
 * the height it needs. A figure alone with room to its right has its chips and colour bar beside the picture, which
 * then takes the height; otherwise they go under it.
 */
export function layoutFigures(
  width: number,
  figures: Figure[],
  room = 600,
): { figures: FigureLayout[]; height: number } {
  const k = Math.max(1, figures.length);
  const column = (width - GAP * (k - 1)) / k;
  const out: FigureLayout[] = [];
  let height = 0;
  figures.forEach((f, i) => {
    const { width: pw, height: ph } = f.run.vision.picture;
    const left = i * (column + GAP);
    const extras = f.shown.extras.length;
    // Beside: the picture as tall as the room allows, if that leaves ASIDE pixels to its right.
    const tall = Math.max(120, Math.min(560, room - TITLE - 8));
    const asideScale = Math.min(tall / ph, (column - ASIDE) / pw);
    const aside = k === 1 && asideScale * ph >= Math.min(tall, 200);
    const below =
      26 + (extras ? Math.ceil(extras / Math.max(1, Math.floor(column / (CHIP + 58)))) * (CHIP + 6) : 0) + BAR;
    const scale = aside ? asideScale : Math.min(column / pw, Math.max(120, Math.min(560, room - TITLE - below)) / ph);
    const [w, h] = [Math.round(pw * scale), Math.round(ph * scale)];
    const box = { x: Math.round(aside ? left : left + (column - w) / 2), y: TITLE, w, h };
    // The chips: in a column beside the picture, or in rows under it.
    const x0 = aside ? box.x + w + GAP : left;
    const top = aside ? box.y : box.y + h + 10;
    const per = aside ? 1 : Math.max(1, Math.floor(column / (CHIP + 58)));
    const chips = Array.from({ length: extras }, (_, j) => ({
      x: Math.round(x0 + (j % per) * (CHIP + 58)),
      y: top + Math.floor(j / per) * (CHIP + 6),
      w: CHIP,
      h: CHIP,
    }));
    const barTop = top + (extras ? Math.ceil(extras / per) * (CHIP + 6) + 4 : 0) + 14;
    const bar = {
      x: Math.round(x0),
      y: barTop,
      w: Math.round(Math.min(aside ? column - x0 + left : column, 260)),
      h: 8,
    };
    out.push({ title: { x: Math.round(left), y: 30, w: column }, box, chips, bar });
    height = Math.max(height, barTop + BAR - 6, box.y + h + 4);
  });
  return { figures: out, height: Math.ceil(height) };
}

/** The model's input as a canvas to draw from: made once per run. */
export function pictureCanvas(picture: FigureRun['vision']['picture']): OffscreenCanvas {
  const canvas = new OffscreenCanvas(picture.width, picture.height);
  const image = new ImageData(picture.width, picture.height);
  image.data.set(picture.data);
  canvas.getContext('2d')!.putImageData(image, 0, 0);
  return canvas;
}

const hex = (c: string) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));

/** One pixel per patch, in the shown values' colours (or the heads' masks'); transparent where nothing is shown. */
export function heatTile(shown: Shown, rows: number, cols: number): OffscreenCanvas {
  const image = new ImageData(cols, rows);
  const out = new Uint32Array(image.data.buffer);
  if (shown.masks) {
    // Each patch in the mix of the colours of the heads whose mask holds it.
    const sums = Array.from({ length: rows * cols }, () => [0, 0, 0, 0]);
    shown.masks.forEach((mask, h) => {
      const rgb = hex(headColour(h));
      for (const k of mask ?? []) for (let c = 0; c < 3; c++) ((sums[k][c] += rgb[c]), c === 0 && sums[k][3]++);
    });
    sums.forEach((s, k) => s[3] && image.data.set([s[0] / s[3], s[1] / s[3], s[2] / s[3], 255], k * 4));
  } else {
    const colour = table(viridis, 0, 1);
    const span = shown.hi - shown.lo || 1;
    shown.values.forEach((v, k) => (out[k] = colour((v - shown.lo) / span)));
  }
  const tile = new OffscreenCanvas(cols, rows);
  tile.getContext('2d')!.putImageData(image, 0, 0);
  return tile;
}

export interface Paint {
  opacity: number;
  colours: Colours & { bg: string };
  /** The hovered patch of a figure, outlined. */
  hover: { figure: number; patch: number } | null;
  /** The model's input per figure, made by pictureCanvas. */
  pictures: OffscreenCanvas[];
  tiles: OffscreenCanvas[];
}

/** Draws every figure on `ctx` (CSS pixels). */
export function drawFigures(
  ctx: CanvasRenderingContext2D,
  width: number,
  height: number,
  figures: Figure[],
  layout: FigureLayout[],
  p: Paint,
): void {
  ctx.clearRect(0, 0, width, height);
  // One caption for all (the figures show the same thing, of their own model); each figure is titled by its model.
  if (figures.length) {
    ctx.font = '600 12px system-ui, sans-serif';
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    ctx.fillStyle = p.colours.fg;
    ctx.fillText(fit(ctx, figures[0].shown.caption, width), 0, CAPTION - 2);
  }
  figures.forEach((f, i) => {
    const L = layout[i];
    const { box } = L;
    const [rows, cols] = f.run.vision.grid;
    const s = f.shown;
    ctx.font = '12px system-ui, sans-serif';
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    ctx.fillStyle = p.colours.muted;
    // A figure whose hover shows another thing (its grid differs) says so in its own title.
    const own = s.caption === figures[0].shown.caption ? '' : `: ${s.caption}`;
    ctx.fillText(fit(ctx, `${f.run.title}${own}`, L.title.w), L.title.x, L.title.y);
    ctx.imageSmoothingEnabled = true;
    ctx.drawImage(p.pictures[i], box.x, box.y, box.w, box.h);
    ctx.save();
    ctx.globalAlpha = p.opacity;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(p.tiles[i], box.x, box.y, box.w, box.h);
    ctx.restore();
    const [cw, ch] = [box.w / cols, box.h / rows];
    const square = (k: number, colour: string, line: number) => {
      ctx.strokeStyle = colour;
      ctx.lineWidth = line;
      ctx.strokeRect(
        box.x + (k % cols) * cw + line / 2,
        box.y + Math.floor(k / cols) * ch + line / 2,
        cw - line,
        ch - line,
      );
    };
    // High-norm outliers: a red square each, in the danger colour the page uses.
    for (const k of s.outliers) square(k, '#e53935', 2);
    if (p.hover?.figure === i) square(p.hover.patch, p.colours.fg, 2);
    // The tokens that are no patch, apart: a chip each in the same colours, its value beside it.
    const colour = table(viridis, 0, 1);
    const span = s.hi - s.lo || 1;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    s.extras.forEach((e, j) => {
      const c = L.chips[j];
      const word = colour((e.value - s.lo) / span);
      ctx.fillStyle = s.masks ? p.colours.muted : `rgb(${word & 255}, ${(word >> 8) & 255}, ${(word >> 16) & 255})`;
      ctx.fillRect(c.x, c.y, c.w, c.h);
      if (!s.masks && s.threshold !== undefined && e.value > s.threshold) {
        ctx.strokeStyle = '#e53935';
        ctx.lineWidth = 2;
        ctx.strokeRect(c.x + 1, c.y + 1, c.w - 2, c.h - 2);
      }
      ctx.fillStyle = p.colours.fg;
      ctx.fillText(e.label, c.x + c.w + 4, c.y + 6);
      ctx.fillStyle = p.colours.muted;
      ctx.fillText(format(e.value), c.x + c.w + 4, c.y + c.h - 4);
    });
    if (s.masks) {
      // The heads' legend in place of a colour bar.
      ctx.textBaseline = 'middle';
      let x = L.bar.x;
      s.masks.forEach((mask, h) => {
        if (x > L.title.x + L.title.w - 30) return;
        ctx.globalAlpha = mask ? 1 : 0.25;
        ctx.fillStyle = headColour(h);
        ctx.fillRect(x, L.bar.y - 2, 12, 12);
        ctx.fillStyle = p.colours.fg;
        ctx.fillText(`H${h + 1}`, x + 15, L.bar.y + 4);
        ctx.globalAlpha = 1;
        x += 42;
      });
      return;
    }
    const label = s.what === 'norms' ? 'norm' : s.what === 'rollout' ? 'rollout' : 'weight';
    ctx.fillStyle = p.colours.muted;
    ctx.textBaseline = 'bottom';
    ctx.fillText(label, L.bar.x, L.bar.y - 2);
    colourBar(
      ctx,
      L.bar,
      { colour: viridis, lo: s.lo, hi: s.hi, ticks: [s.lo, s.hi], format: (t) => format(t) },
      p.colours.fg,
    );
  });
}

/** A value as the chips and the colour bar write it: 3 significant digits. */
export const format = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(3));

function fit(ctx: CanvasRenderingContext2D, text: string, max: number): string {
  if (ctx.measureText(text).width <= max) return text;
  let end = text.length;
  while (end > 1 && ctx.measureText(`${text.slice(0, end)}…`).width > max) end--;
  return `${text.slice(0, end)}…`;
}

/** The patch under (x, y) in CSS pixels of the canvas, and its figure; null off the pictures. */
export function patchAt(
  x: number,
  y: number,
  figures: Figure[],
  layout: FigureLayout[],
): { figure: number; patch: number } | null {
  for (let i = 0; i < layout.length; i++) {
    const { box } = layout[i];
    if (x < box.x || y < box.y || x >= box.x + box.w || y >= box.y + box.h) continue;
    const [rows, cols] = figures[i].run.vision.grid;
    const c = Math.min(cols - 1, Math.floor(((x - box.x) / box.w) * cols));
    const r = Math.min(rows - 1, Math.floor(((y - box.y) / box.h) * rows));
    return { figure: i, patch: r * cols + c };
  }
  return null;
}
