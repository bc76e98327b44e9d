// The head measures people use on language models, read off a run's maps in one pass per head:
//   sink       the weight on the first token (BOS, where the model adds one), over queries 1…n−1;
//   duplicate  the weight on earlier copies of the query's own token;
//   induction  the weight on the token right after an earlier copy of the query's token (Olsson et al., 2022).
// The last two average over the queries whose token came before, and are NaN when no token repeats. Each
// query's earlier copies come from a list per token, so a head costs O(n + copies), not O(n²).
import { heldMap, type Maps } from './map-rows.js';
import type { HeadMeasures } from './protocol.js';

/** Per query i, the positions j < i holding the same token (by id, or by spelling without ids). */
function earlierCopies(keys: ArrayLike<number | string>): number[][] {
  const seen = new Map<number | string, number[]>();
  return Array.from({ length: keys.length }, (_, i) => {
    const list = seen.get(keys[i]) ?? [];
    const before = list.slice();
    list.push(i);
    seen.set(keys[i], list);
    return before;
  });
}

/** Every head's measures, layer by layer of the layers the maps hold (the engine's summaries' order). */
export function headMeasures(maps: Maps, keys: ArrayLike<number | string>): HeadMeasures[] {
  const [layers, heads, n] = maps.shape;
  const copies = earlierCopies(keys);
  const repeated = copies.reduce((count, c) => count + (c.length ? 1 : 0), 0);
  const out: HeadMeasures[] = [];
  for (let l = 0; l < layers; l++)
    for (let h = 0; h < heads; h++) {
      const map = heldMap(maps, l, h);
      let sink = 0,
        duplicate = 0,
        induction = 0;
      for (let i = 1; i < n; i++) sink += map[i * n];
      for (let i = 0; i < n; i++) {
        const row = i * n;
        for (const j of copies[i]) {
          duplicate += map[row + j];
          if (j + 1 < i) induction += map[row + j + 1];
        }
      }
      out.push({
        sink: n > 1 ? sink / (n - 1) : map[0],
        duplicate: repeated ? duplicate / repeated : NaN,
        induction: repeated ? induction / repeated : NaN,
      });
    }
  return out;
}

/**
 * The standard induction score on a sequence of `length` random tokens repeated twice after `lead` tokens:
 * per head, the mean weight each query in the second copy gives the token after its first occurrence.
 */
export function inductionScores(maps: Maps, lead: number, length: number): Float64Array {
  const [layers, heads, n] = maps.shape;
  const scores = new Float64Array(layers * heads);
  for (let l = 0; l < layers; l++)
    for (let h = 0; h < heads; h++) {
      const map = heldMap(maps, l, h);
      let sum = 0;
      for (let t = 0; t < length; t++) sum += map[(lead + length + t) * n + lead + t + 1];
      scores[l * heads + h] = sum / length;
    }
  return scores;
}

/** A row's entropy in nats, of its weights renormalized over `keys` (all when absent); NaN when they hold none. */
function entropyOf(row: Float32Array, keys?: readonly number[]): number {
  let total = 0;
  const each = (f: (w: number) => void) => (keys ? keys.forEach((k) => f(row[k])) : row.forEach((w) => f(w)));
  each((w) => (total += w));
  if (!(total > 0)) return NaN;
  let h = 0;
  each((w) => {
    const p = w / total;
    if (p > 0) h -= p * Math.log(p);
  });
  return h;
}

/** An image model's heads, measured over the patch grid (`grid` rows × cols, the patches after `prefix` tokens). */
export interface ImageHead {
  /**
   * How spread over the image a patch's attention is: the entropy of its weights on the patches, in nats (over the
   * patches that put weight on patches; NaN when none does).
   */
  spread: number;
  /** How far across the image a patch looks, in patches (its weights on the patches, renormalized; NaN likewise). */
  distance: number;
  /** Weight on the patch itself. */
  self: number;
  /** Weight on the 3 × 3 patches around it, itself included. */
  neighbourhood: number;
  /** Weight on the tokens before the registers: [CLS] (and DeiT's distillation token), over every query. */
  cls: number;
  /** Weight on the registers, over every query; NaN without registers. */
  registers: number;
}

export function imageMeasures(
  maps: Maps,
  grid: readonly [number, number],
  prefix: number,
  registers: number,
): ImageHead[] {
  const [layers, heads, n] = maps.shape;
  const [rows, cols] = grid;
  const first = prefix + registers;
  const patches = Array.from({ length: rows * cols }, (_, p) => first + p);
  const out: ImageHead[] = [];
  for (let l = 0; l < layers; l++)
    for (let h = 0; h < heads; h++) {
      const map = heldMap(maps, l, h);
      let spread = 0,
        distance = 0,
        looking = 0, // the patches that put any weight on patches: spread and distance are theirs
        self = 0,
        near = 0,
        cls = 0,
        regs = 0;
      for (let q = 0; q < n; q++) {
        const row = map.subarray(q * n, (q + 1) * n);
        for (let k = 0; k < prefix; k++) cls += row[k];
        for (let k = prefix; k < first; k++) regs += row[k];
        if (q < first) continue;
        const [r, c] = [Math.floor((q - first) / cols), (q - first) % cols];
        let mass = 0,
          far = 0;
        for (const k of patches) {
          const [kr, kc] = [Math.floor((k - first) / cols), (k - first) % cols];
          mass += row[k];
          far += row[k] * Math.hypot(kr - r, kc - c);
          if (Math.abs(kr - r) <= 1 && Math.abs(kc - c) <= 1) near += row[k];
        }
        if (mass > 0) {
          spread += entropyOf(row, patches);
          distance += far / mass;
          looking++;
        }
        self += row[q];
      }
      const count = patches.length || 1;
      out.push({
        spread: looking ? spread / looking : NaN,
        distance: looking ? distance / looking : NaN,
        self: self / count,
        neighbourhood: near / count,
        cls: cls / n,
        registers: registers ? regs / n : NaN,
      });
    }
  return out;
}

/** Cross-attention's heads, measured as an alignment of the queries (a target) to the keys (a source). */
export interface CrossHead {
  /** The entropy of a query's weights, in nats: 0 looks at one key. */
  entropy: number;
  /** The share of consecutive queries whose most-weighted key does not go back. */
  monotonicity: number;
  /** How far a query's weights lie from the diagonal: |key / (m − 1) − query / (n − 1)|, weighted, 0 to 1. */
  diagonal: number;
  /** The share of keys that are some query's most-weighted one. */
  coverage: number;
}

export function crossMeasures(maps: Maps): CrossHead[] {
  const [layers, heads, n, m] = maps.shape;
  const out: CrossHead[] = [];
  for (let l = 0; l < layers; l++)
    for (let h = 0; h < heads; h++) {
      const map = heldMap(maps, l, h);
      let entropy = 0,
        forward = 0,
        diagonal = 0,
        previous = -1;
      const covered = new Uint8Array(m);
      for (let q = 0; q < n; q++) {
        const row = map.subarray(q * m, (q + 1) * m);
        let best = 0;
        for (let k = 1; k < m; k++) if (row[k] > row[best]) best = k;
        covered[best] = 1;
        if (q > 0 && best >= previous) forward++;
        previous = best;
        entropy += entropyOf(row);
        const along = n > 1 ? q / (n - 1) : 0;
        for (let k = 0; k < m; k++) diagonal += row[k] * Math.abs((m > 1 ? k / (m - 1) : 0) - along);
      }
      out.push({
        entropy: entropy / n,
        monotonicity: n > 1 ? forward / (n - 1) : NaN,
        diagonal: diagonal / n,
        coverage: covered.reduce((a, b) => a + b, 0) / m,
      });
    }
  return out;
}
