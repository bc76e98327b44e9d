// What the image pane lays over a vision model's picture, read off a run: one number per patch (and per [CLS],
// distillation and register token, shown apart), for each overlay:
//   head     the selected head's [CLS] row over the patches (DINO's figures);
//   heads    every head of the layer at once: each head's patches that hold 60% of its [CLS] attention, one colour
//            per head, as DINO's visualize_attention.py thresholds them (sorted, cumulative mass above 1 − 0.6);
//   rollout  rollout's [CLS] row (every layer, heads averaged, with the residual);
//   norms    each token's hidden-state norm after the chosen layer, with high-norm outliers flagged:
//            a patch whose norm is above median + 5 × MAD of the patches' norms (MAD: the median absolute
//            deviation from the median), the rule docs/analysis.md gives.
// Hovering a patch shows, in the head and heads overlays the selected head's, in rollout rollout's: its row (what
// it attends to) or its column (what attends to it).
import { columnOf, rowOf, slotOf } from './map-rows.js';
import type { Shape, VisionRun } from './protocol.js';
import type { Overlay } from './state.js';

/** A run the pane draws: the loaded model's, or the second model's beside it. */
export interface FigureRun {
  title: string;
  tokens: string[];
  attentions: Float32Array;
  shape: Shape;
  mapLayers: number[];
  vision: VisionRun;
}

export interface Choice {
  overlay: Overlay;
  layer: number;
  head: number;
  /** Null: the last layer's output. */
  normLayer: number | null;
  activeHeads: boolean[];
}

/** What one figure shows: a value per patch (row by row), and per token before the patches. */
export interface Shown {
  what: Overlay | 'from' | 'to';
  layer: number;
  head: number;
  values: Float32Array;
  /** [CLS], distillation, registers: their label and value. */
  extras: Array<{ label: string; value: number; register: boolean }>;
  /** The colour scale's ends. */
  lo: number;
  hi: number;
  /** Heads: each head's patches (null for a head switched off). */
  masks?: Array<number[] | null>;
  /** Norms: the patches above the threshold. */
  outliers: number[];
  threshold?: number;
  /** One line that says what the figure shows. */
  caption: string;
}

/** The mass DINO keeps of each head's [CLS] attention in its figures. */
export const KEEP_MASS = 0.6;
/** How many MADs above the median a patch's norm must be to count as an outlier. */
export const OUTLIER_MADS = 5;

/** The first patch's token index. */
export const firstPatch = (v: VisionRun) => v.prefix + v.registers;

/** Row `i` of (layer, head)'s map, or column `i` with `column`. */
function line(run: FigureRun, layer: number, head: number, i: number, column = false): Float32Array {
  const slot = Math.max(0, slotOf(run, layer));
  return column ? columnOf(run, slot, head, i) : rowOf(run, slot, head, i);
}

/** Rollout's row i (what token i draws on, through every layer) or its column. */
function rolloutLine(v: VisionRun, n: number, i: number, column = false): Float32Array {
  if (!column) return v.rollout.subarray(i * n, (i + 1) * n);
  const out = new Float32Array(n);
  for (let q = 0; q < n; q++) out[q] = v.rollout[q * n + i];
  return out;
}

const median = (xs: ArrayLike<number>) => {
  const sorted = Float64Array.from(xs).sort();
  const m = sorted.length >> 1;
  return sorted.length % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
};

/** The patches whose value is above median + OUTLIER_MADS × MAD (none when the MAD is 0). */
export function outliers(values: Float32Array): { outliers: number[]; threshold: number } {
  const m = median(values);
  const mad = median(Array.from(values, (x) => Math.abs(x - m)));
  const threshold = m + OUTLIER_MADS * mad;
  const out: number[] = [];
  if (mad > 0) values.forEach((x, k) => x > threshold && out.push(k));
  return { outliers: out, threshold };
}

/** DINO's mask of one head: the patches, largest first, whose weights sum to KEEP_MASS of the head's. */
export function keptMass(values: Float32Array): number[] {
  const order = Array.from(values.keys()).sort((a, b) => values[a] - values[b]);
  const total = values.reduce((s, x) => s + x, 0) || 1;
  const kept: number[] = [];
  let cumulative = 0;
  for (const k of order) {
    cumulative += values[k] / total;
    if (cumulative > 1 - KEEP_MASS) kept.push(k);
  }
  return kept.sort((a, b) => a - b);
}

const range = (values: Float32Array) => {
  let lo = Infinity,
    hi = -Infinity;
  for (const v of values) [lo, hi] = [Math.min(lo, v), Math.max(hi, v)];
  return [lo, hi];
};

/** The labels of the tokens before the patches, and their values in `full` (an n-long row, column or norms). */
function extrasOf(run: FigureRun, full: Float32Array): Shown['extras'] {
  const v = run.vision;
  return Array.from({ length: firstPatch(v) }, (_, j) => ({
    label: run.tokens[j],
    value: full[j],
    register: j >= v.prefix,
  }));
}

/** What a figure shows for the choice, and while a patch is hovered (`hover`: its patch index and which way). */
export function shownOf(run: FigureRun, c: Choice, hover: { patch: number; shows: 'from' | 'to' } | null): Shown {
  const v = run.vision;
  const [layers, heads, n] = [run.vision.tokenNorms.length / run.tokens.length - 1, run.shape[1], run.tokens.length];
  const layer = Math.min(c.layer, layers - 1);
  const head = Math.min(c.head, heads - 1);
  const p0 = firstPatch(v);
  const patches = (full: Float32Array) => full.slice(p0, n);
  const where = `layer ${layer + 1}`;
  /** A figure of attention weights over the patches, from 0 to their largest, the non-patch tokens apart. */
  const weights = (what: Shown['what'], full: Float32Array, caption: string): Shown => {
    const values = patches(full);
    return {
      what,
      layer,
      head,
      values,
      extras: extrasOf(run, full),
      lo: 0,
      hi: range(values)[1] || 1,
      outliers: [],
      caption,
    };
  };
  if (hover && c.overlay !== 'norms') {
    const token = p0 + hover.patch;
    const column = hover.shows === 'to';
    const full = c.overlay === 'rollout' ? rolloutLine(v, n, token, column) : line(run, layer, head, token, column);
    const label = run.tokens[token];
    const by = c.overlay === 'rollout' ? 'rollout' : `${where}, head ${head + 1}`;
    return weights(hover.shows, full, column ? `What attends to ${label} (${by})` : `What ${label} attends to (${by})`);
  }
  if (c.overlay === 'norms') {
    const at = c.normLayer === null ? layers : Math.min(c.normLayer, layers);
    const full = v.tokenNorms.subarray(at * n, (at + 1) * n);
    const values = patches(full);
    const [lo, hi] = range(values);
    const flagged = outliers(values);
    const after = at === 0 ? 'at the input' : `after layer ${at}`;
    return {
      what: 'norms',
      layer,
      head,
      values,
      extras: extrasOf(run, full),
      lo,
      hi: hi > lo ? hi : lo + 1,
      ...flagged,
      caption: `Token norms ${after}: ${flagged.outliers.length} high-norm patch${flagged.outliers.length === 1 ? '' : 'es'}`,
    };
  }
  if (c.overlay === 'rollout')
    return weights('rollout', rolloutLine(v, n, 0), `Rollout: what [CLS] draws on through all ${layers} layers`);
  const full = line(run, layer, head, 0);
  if (c.overlay === 'heads') {
    const masks = Array.from({ length: heads }, (_, h) =>
      c.activeHeads[h] === false ? null : keptMass(patches(line(run, layer, h, 0))),
    );
    return {
      ...weights('heads', full, `${where}: each head's patches holding ${KEEP_MASS * 100}% of its [CLS] attention`),
      masks,
    };
  }
  return weights('head', full, `${where}, head ${head + 1}: [CLS] → patches`);
}

/** A categorical colour per head (Tableau's 10, then two more), repeating past 12. */
export const HEAD_COLOURS = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
  '#17becf',
  '#bcbd22',
];
export const headColour = (h: number) => HEAD_COLOURS[h % HEAD_COLOURS.length];
