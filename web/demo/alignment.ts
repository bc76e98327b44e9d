// An encoder-decoder's alignment: its cross-attention over a whole layer rather than one head, target rows and
// source columns. Two ways of taking the heads together: their mean (each row still sums to 1), or the one head
// whose rows are most peaked, the head of lowest mean row entropy −Σ_j p_ij ln p_ij (the average over the target
// rows i), which is the head that commits to a source token per target token, as a word alignment does.
import type { MapRows } from './draw/pooled.js';
import { headRows, type Maps } from './map-rows.js';
import type { Aggregate } from './state.js';

export interface Alignment {
  map: MapRows;
  aggregate: Aggregate;
  /** The head shown: the chosen one, or the lowest-entropy one; absent for the mean. */
  head?: number;
  /** Every head's mean row entropy in nats, [heads] (the entropy choice). */
  entropies?: Float64Array;
}

/** The mean over the layer's heads, [n, m] row-major; null when the maps do not hold the layer. */
export function meanOverHeads(maps: Maps, layer: number): MapRows | null {
  const [, heads, n, m] = maps.shape;
  const rows = Array.from({ length: heads }, (_, h) => headRows(maps, layer, h));
  if (rows.some((r) => !r)) return null;
  const mean = new Float32Array(n * m);
  for (let i = 0; i < n; i++) {
    // Summed in float64, then rounded once: the value is the heads' mean to float32's precision.
    const sum = new Float64Array(m);
    for (const r of rows) {
      const row = r!.row(i);
      for (let j = 0; j < row.length; j++) sum[j] += row[j];
    }
    for (let j = 0; j < m; j++) mean[i * m + j] = sum[j] / heads;
  }
  return { n, cols: m, row: (i) => mean.subarray(i * m, (i + 1) * m) };
}

/** Each head's mean row entropy in nats, −Σ_j p ln p averaged over the rows (0 ln 0 = 0); null without the layer. */
export function rowEntropies(maps: Maps, layer: number): Float64Array | null {
  const [, heads, n] = maps.shape;
  const out = new Float64Array(heads);
  for (let h = 0; h < heads; h++) {
    const r = headRows(maps, layer, h);
    if (!r) return null;
    let total = 0;
    for (let i = 0; i < n; i++) for (const p of r.row(i)) if (p > 0) total -= p * Math.log(p);
    out[h] = total / n;
  }
  return out;
}

/** What the alignment map shows for the layer: the head, the mean, or the lowest-entropy head (first of ties). */
export function alignment(maps: Maps, layer: number, head: number, aggregate: Aggregate): Alignment | null {
  if (aggregate === 'mean') {
    const map = meanOverHeads(maps, layer);
    return map && { map, aggregate };
  }
  if (aggregate === 'entropy') {
    const entropies = rowEntropies(maps, layer);
    if (!entropies) return null;
    let best = 0;
    for (let h = 1; h < entropies.length; h++) if (entropies[h] < entropies[best]) best = h;
    const map = headRows(maps, layer, best);
    return map && { map, aggregate, head: best, entropies };
  }
  const map = headRows(maps, layer, head);
  return map && { map, aggregate, head };
}

/** The note under the map: how the aggregate is computed, and which head it chose. */
export function describe(a: Alignment, layer: number): string {
  const L = layer + 1;
  const heads = a.entropies?.length;
  if (a.aggregate === 'mean')
    return `Mean over layer ${L}'s heads: each cell is the average of the heads' weights for that target token (row) and source token (column); rows still sum to 1.`;
  if (a.aggregate === 'entropy' && a.entropies && a.head !== undefined) {
    const e = Array.from(a.entropies);
    return (
      `Best head by entropy: head ${a.head + 1}, the most peaked of layer ${L}'s ${heads} heads: its rows' entropy ` +
      `−Σ p ln p, averaged over the target rows, is ${e[a.head].toFixed(3)} nats ` +
      `(${e.map((x, h) => `H${h + 1} ${x.toFixed(3)}`).join(', ')}).`
    );
  }
  return '';
}
