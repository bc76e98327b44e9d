// The distribution the engine's sampler draws the next token from (cpp/src/models/sampling.cpp), computed
// here from one position's logits so that the next-token bars re-rank as the sliders move, with no worker
// round trip: logits ÷ temperature, then the top-k (ties with the k-th kept), then the smallest set of the
// most likely holding top-p of the probability (the best always stays), renormalized. Temperature 0 is
// greedy: all the probability on the largest logit.
import type { Sampling } from './protocol.js';

/** Probabilities over the vocabulary (0 for tokens the limits drop), in float64. */
export function distribution(logits: Float32Array, o: Sampling): Float64Array {
  const vocab = logits.length;
  const p = new Float64Array(vocab);
  if (!vocab) return p;
  if (o.temperature === 0) {
    let best = 0;
    for (let i = 1; i < vocab; i++) if (logits[i] > logits[best]) best = i;
    p[best] = 1;
    return p;
  }
  // Scores as the engine holds them: float32 logits divided in float32.
  const s = new Float32Array(logits);
  if (o.temperature !== 1) for (let i = 0; i < vocab; i++) s[i] = Math.fround(s[i] / Math.fround(o.temperature));
  if (o.topK > 0 && o.topK < vocab) {
    const kth = [...s].sort((a, b) => b - a)[o.topK - 1];
    for (let i = 0; i < vocab; i++) if (s[i] < kth) s[i] = -Infinity;
  }
  if (o.topP < 1) {
    const q = softmax(s);
    // Ascending by score, ties in id order (a stable sort): the least likely are dropped first.
    const order = Array.from({ length: vocab }, (_, i) => i).sort((a, b) => s[a] - s[b] || a - b);
    let cumulative = 0;
    for (let k = 0; k + 1 < vocab; k++) {
      cumulative += Math.fround(q[order[k]]);
      if (cumulative > 1 - Math.fround(o.topP)) break;
      s[order[k]] = -Infinity;
    }
  }
  return softmax(s);
}

function softmax(s: Float32Array): Float64Array {
  let max = -Infinity;
  for (const x of s) if (x > max) max = x;
  const out = new Float64Array(s.length);
  if (max === -Infinity) return out;
  let sum = 0;
  for (let i = 0; i < s.length; i++) sum += out[i] = Math.exp(s[i] - max);
  for (let i = 0; i < s.length; i++) out[i] /= sum;
  return out;
}

/** The `count` most likely tokens of a distribution, best first (ties in id order), with their probabilities. */
export function best(p: Float64Array, count: number): Array<{ id: number; p: number }> {
  const top: Array<{ id: number; p: number }> = [];
  for (let i = 0; i < p.length; i++) {
    if (p[i] <= 0 || (top.length === count && p[i] <= top[count - 1].p)) continue;
    let at = top.length;
    while (at > 0 && top[at - 1].p < p[i]) at--;
    top.splice(at, 0, { id: i, p: p[i] });
    if (top.length > count) top.pop();
  }
  return top;
}
