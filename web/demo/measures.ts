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
