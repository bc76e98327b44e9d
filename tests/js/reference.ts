// An independent JS reference for the tests: plain loops in float64, written
// from the formulas, sharing no code with the C++ engine.
import type { Mask, MultiHeadParams, Tensor } from '../../dist/node.js';

export function tensor(shape: number[], data?: ArrayLike<number>): Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  return { shape, data: data ? Float32Array.from(data) : new Float32Array(size) };
}

/** Deterministic normal(0, std) values (mulberry32 + Box-Muller). */
export function randn(shape: number[], seed: number, std = 1): Tensor {
  let s = seed >>> 0;
  const uniform = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = tensor(shape);
  for (let i = 0; i < out.data.length; i++) {
    const u = Math.max(uniform(), 1e-12);
    out.data[i] = std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
  }
  return out;
}

export interface RefOptions {
  causal?: boolean;
  mask?: Mask;
  scale?: number;
}

/** softmax(q kᵀ · scale + mask) v for [n, d] or [heads, n, d] inputs. */
export function refAttention(q: Tensor, k: Tensor, v: Tensor, o: RefOptions = {}) {
  const r = q.shape.length;
  const heads = r === 3 ? q.shape[0] : 1;
  const [nQ, dK] = q.shape.slice(-2);
  const nK = k.shape[r - 2];
  const dV = v.shape[r - 1];
  const scale = o.scale ?? 1 / Math.sqrt(dK);
  const lead = r === 3 ? [heads] : [];
  const output = tensor([...lead, nQ, dV]);
  const weights = tensor([...lead, nQ, nK]);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < nQ; i++) {
      const s = new Float64Array(nK);
      for (let j = 0; j < nK; j++) {
        let dot = 0;
        for (let t = 0; t < dK; t++) dot += q.data[(h * nQ + i) * dK + t] * k.data[(h * nK + j) * dK + t];
        let x = dot * scale;
        const m = ((o.mask && o.mask.shape.length === 3 ? h : 0) * nQ + i) * nK + j;
        if (o.causal && j > i) x = -Infinity;
        if (o.mask instanceof Object && o.mask.data instanceof Uint8Array && o.mask.data[m] === 0) x = -Infinity;
        if (o.mask && o.mask.data instanceof Float32Array) x += o.mask.data[m];
        s[j] = x;
      }
      const max = Math.max(...s);
      let sum = 0;
      for (let j = 0; j < nK; j++) sum += s[j] = max === -Infinity ? 0 : Math.exp(s[j] - max);
      for (let j = 0; j < nK; j++) weights.data[(h * nQ + i) * nK + j] = sum > 0 ? s[j] / sum : 0;
      for (let c = 0; c < dV; c++) {
        let acc = 0;
        for (let j = 0; j < nK; j++) acc += weights.data[(h * nQ + i) * nK + j] * v.data[(h * nK + j) * dV + c];
        output.data[(h * nQ + i) * dV + c] = acc;
      }
    }
  }
  return { output, weights };
}

/** a [m, k] · b [k, n] + bias [n] */
export function refMatmul(a: Tensor, b: Tensor, bias?: Tensor): Tensor {
  const [m, kk] = a.shape;
  const n = b.shape[1];
  const c = tensor([m, n]);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let acc = bias ? bias.data[j] : 0;
      for (let t = 0; t < kk; t++) acc += a.data[i * kk + t] * b.data[t * n + j];
      c.data[i * n + j] = acc;
    }
  return c;
}

/** Columns h·d … (h+1)·d − 1 of a [n, heads·d] matrix, as [heads, n, d]. */
export function splitHeads(a: Tensor, heads: number): Tensor {
  const [n, width] = a.shape;
  const d = width / heads;
  const out = tensor([heads, n, d]);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < n; i++)
      for (let j = 0; j < d; j++) out.data[(h * n + i) * d + j] = a.data[i * width + h * d + j];
  return out;
}

export function refMultiHead(
  x: Tensor,
  p: MultiHeadParams,
  o: { heads: number; causal?: boolean; mask?: Mask; context?: Tensor },
) {
  const c = o.context ?? x;
  const q = splitHeads(refMatmul(x, p.wq, p.bq), o.heads);
  const k = splitHeads(refMatmul(c, p.wk, p.bk), o.heads);
  const v = splitHeads(refMatmul(c, p.wv, p.bv), o.heads);
  const a = refAttention(q, k, v, { causal: o.causal, mask: o.mask });
  const [heads, n, dV] = a.output.shape;
  const concat = tensor([n, heads * dV]);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < n; i++)
      for (let j = 0; j < dV; j++) concat.data[i * heads * dV + h * dV + j] = a.output.data[(h * n + i) * dV + j];
  return { output: refMatmul(concat, p.wo, p.bo), weights: a.weights, q, k, v };
}

/** Asserts |a − b| ≤ atol + rtol·|b| element-wise and equal shapes; returns the worst error. */
export function expectClose(actual: Tensor | undefined, expected: Tensor, atol = 1e-5, rtol = 1e-4): number {
  if (!actual) throw new Error('missing tensor');
  if (JSON.stringify(actual.shape) !== JSON.stringify(expected.shape))
    throw new Error(`shape ${JSON.stringify(actual.shape)} vs ${JSON.stringify(expected.shape)}`);
  if (actual.data.length !== expected.data.length)
    throw new Error(`length ${actual.data.length} vs ${expected.data.length}`);
  let worst = 0;
  for (let i = 0; i < actual.data.length; i++) {
    const err = Math.abs(actual.data[i] - expected.data[i]);
    if (!(err <= atol + rtol * Math.abs(expected.data[i])))
      throw new Error(`index ${i}: ${actual.data[i]} vs ${expected.data[i]} (|diff| ${err})`);
    worst = Math.max(worst, err);
  }
  return worst;
}
