// Rollout, flow, head summaries, comparison, head ablation and .npy through the
// package, on real runs of the embedded model and the tiny BERT checkpoint, each
// against a direct computation written here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Model, ModelRunResult } from '../../dist/node.js';
import { safetensorsViews } from '../safetensors.mjs';
import { goldenModelFiles, TINY_BERT_VOCAB } from '../golden-models.mjs';
import { BUILDS, engineFor } from './engines.js';

type Matrix = number[][];
const identity = (n: number): Matrix =>
  Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => +(i === j)));
const multiply = (a: Matrix, b: Matrix): Matrix =>
  a.map((row) => b[0].map((_, j) => row.reduce((s, x, k) => s + x * b[k][j], 0)));

/** Layer l's head-averaged map, with the residual identity mixed in when asked. */
function layerGraph(r: ModelRunResult, l: number, residual: boolean): Matrix {
  const [, heads, n] = r.shape;
  const a = Array.from({ length: n }, (_, i) =>
    Array.from({ length: n }, (_, j) => {
      let s = 0;
      for (let h = 0; h < heads; h++) s += r.attentions[((l * heads + h) * n + i) * n + j];
      return s / heads;
    }),
  );
  return residual ? a.map((row, i) => row.map((x, j) => 0.5 * x + 0.5 * +(i === j))) : a;
}

function worst(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  return w;
}

/** A copy of a safetensors file with `zero(index, shape)` choosing F32 elements of `name` to zero. */
function zeroed(file: Uint8Array, name: string, zero: (index: number, shape: number[]) => boolean): Uint8Array {
  const copy = file.slice();
  const { dtype, shape, data } = safetensorsViews(copy)[name];
  expect(dtype).toBe('F32');
  for (let i = 0; i < data!.length; i++) if (zero(i, shape)) data![i] = 0;
  return copy;
}

const bertFiles = (): Record<string, Uint8Array> => ({
  ...goldenModelFiles('bert'),
  'vocab.txt': new TextEncoder().encode(TINY_BERT_VOCAB.join('\n')),
});

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  let use: Model;
  let bert: Model;
  let r: ModelRunResult;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
    use = await engine.loadModel('default');
    bert = await engine.loadModel({ files: bertFiles() });
    r = use.run('The quick brown fox jumps over the lazy dog, and then it sleeps.');
  });
  afterAll(() => engine.dispose());

  it('rollout is the product of the head-averaged layer maps, with and without the residual', () => {
    const [layers, , n] = r.shape;
    for (const residual of [true, false]) {
      const rolled = engine.rollout(r, { residual });
      expect(rolled.shape).toEqual([layers, n, n]);
      let want = identity(n);
      for (let l = 0; l < layers; l++) {
        want = multiply(layerGraph(r, l, residual), want);
        expect(worst(rolled.data.subarray(l * n * n, (l + 1) * n * n), want.flat())).toBeLessThan(1e-5);
      }
    }
  });

  it('flow through two layers is Σ_k min(Â₂[i,k], Â₁[k,j]), as the paths are disjoint', () => {
    const [, , n] = r.shape;
    for (const residual of [true, false]) {
      const flow = engine.attentionFlow(r, { residual });
      expect(flow.shape).toEqual([n, n]);
      const a1 = layerGraph(r, 0, residual),
        a2 = layerGraph(r, 1, residual);
      const want = a2.map((row) => a1[0].map((_, j) => row.reduce((s, x, k) => s + Math.min(x, a1[k][j]), 0)));
      expect(worst(flow.data, want.flat())).toBeLessThan(1e-5);
    }
    const rows = engine.attentionFlow(r, { rows: [3, 0] });
    expect(rows.shape).toEqual([2, n]);
    expect(worst(rows.data.subarray(0, n), engine.attentionFlow(r).data.subarray(3 * n, 4 * n))).toBe(0);
  });

  it('head summaries agree with a direct computation, special and punctuation tokens included', () => {
    const run = bert.run('the cat sat on the mat.');
    expect(run.tokens).toEqual(['[CLS]', 'the', 'cat', 'sat', 'on', 'the', 'mat', '.', '[SEP]']);
    expect(run.special).toEqual([true, false, false, false, false, false, false, false, true]);
    const [layers, heads, n] = run.shape;
    const summaries = engine.headSummaries(run);
    expect(summaries.length).toBe(layers * heads);
    for (const s of summaries) {
      const p = (i: number, j: number) => run.attentions[((s.layer * heads + s.head) * n + i) * n + j];
      let entropy = 0,
        distance = 0,
        previous = 0,
        self = 0,
        special = 0,
        punctuation = 0;
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < n; j++) {
          entropy -= p(i, j) > 0 ? p(i, j) * Math.log(p(i, j)) : 0;
          distance += p(i, j) * Math.abs(i - j);
        }
        if (i > 0) previous += p(i, i - 1);
        self += p(i, i);
        special += p(i, 0) + p(i, n - 1); // [CLS] and [SEP]
        punctuation += p(i, 7); // '.'
      }
      expect(s.entropy).toBeCloseTo(entropy / n, 5);
      expect(s.distance).toBeCloseTo(distance / n, 5);
      expect(s.previous).toBeCloseTo(previous / (n - 1), 5);
      expect(s.self).toBeCloseTo(self / n, 5);
      expect(s.special).toBeCloseTo(special / n, 5);
      expect(s.punctuation).toBeCloseTo(punctuation / n, 5);
    }
  });

  it('compares two sentences where their tokens align, and says where two models cannot be', () => {
    const a = bert.run('the cat sat on the mat');
    const b = bert.run('the w1 w2 sat on the mat');
    const c = engine.compare(a, b);
    expect(c.pairs).toEqual([
      [0, 0],
      [1, 1],
      [3, 4],
      [4, 5],
      [5, 6],
      [6, 7],
      [7, 8],
    ]);
    expect(c.unaligned).toEqual({ a: [2], b: [2, 3] });
    const [layers, heads, n] = a.shape;
    const m = b.shape[2];
    expect(c.change!.shape).toEqual([layers, heads]);
    const d = c.difference(1, 0);
    expect(d.shape).toEqual([7, 7]);
    expect(d.data[2 * 7 + 3]).toBeCloseTo(
      a.attentions[((1 * heads + 0) * n + 3) * n + 4] - b.attentions[((1 * heads + 0) * m + 4) * m + 5],
      6,
    );
    // Total variation over aligned tokens, averaged over aligned rows.
    let tv = 0;
    for (const [i, i2] of c.pairs) {
      let row = 0;
      for (const [j, j2] of c.pairs)
        row += Math.abs(a.attentions[(heads * n + i) * n + j] - b.attentions[(heads * m + i2) * m + j2]);
      tv += row / 2;
    }
    expect(c.change!.data[heads]).toBeCloseTo(tv / c.pairs.length, 5);
    expect(Array.from(engine.compare(a, a).change!.data).every((x) => x === 0)).toBe(true);

    // Two models: SentencePiece's '▁the' aligns with WordPiece's 'the'.
    const models = engine.compare(use.run('the cat sat on the mat'), a);
    expect(models.pairs.map(([, j]) => a.tokens[j])).toEqual(['the', 'cat', 'sat', 'on', 'the']);
    expect(models.change!.shape).toEqual([2, 4]);
    const oneLayer = { ...a, attentions: a.attentions.subarray(0, heads * n * n), shape: [1, heads, n, n] };
    const shallow = engine.compare(oneLayer, a);
    expect(shallow.change).toBeUndefined();
    expect(shallow.message).toBe('The runs have 1 × 4 and 2 × 4 layers × heads: only heads both have can be compared.');
    expect(shallow.difference(0, 3).shape).toEqual([8, 8]);
    expect(() => shallow.difference(1, 0)).toThrow('compare: layer 1 is not in both runs (0 to 0)');
    expect(engine.compare(a, { ...a, tokens: a.tokens.map((t) => `x${t}`) }).message).toBe(
      'No tokens align between the two runs, so their maps cannot be compared.',
    );
  });

  it('ablating a head equals zeroing its rows of W_O, and changes only what comes after it', async () => {
    const text = 'the cat sat on the mat.';
    const base = bert.run(text);
    const ablated = bert.run(text, { ablateHeads: [[0, 1]] });
    const [, heads, n] = base.shape;
    // Layer 0's maps are computed before its output projection: unchanged. Layer 1 reads the changed state.
    expect(worst(ablated.attentions.subarray(0, heads * n * n), base.attentions.subarray(0, heads * n * n))).toBe(0);
    expect(worst(ablated.attentions.subarray(heads * n * n), base.attentions.subarray(heads * n * n))).toBeGreaterThan(
      1e-4,
    );
    // The same model with head 1's input columns of layer 0's W_O ([out, in] in PyTorch) set to zero.
    const files = bertFiles();
    const dk = 32 / heads; // hidden_size 32
    files['model.safetensors'] = zeroed(
      files['model.safetensors'],
      'encoder.layer.0.attention.output.dense.weight',
      (index, shape) => Math.floor((index % shape[1]) / dk) === 1,
    );
    const surgery = await engine.loadModel({ files });
    expect(worst(ablated.hidden.data, surgery.run(text).hidden.data)).toBeLessThan(1e-5);
    surgery.dispose();
    const cos = engine.cosineSimilarity(base.hidden, ablated.hidden);
    expect(cos.length).toBe(n);
    expect(Math.min(...cos)).toBeLessThan(0.9999);
    expect(Math.max(...engine.cosineSimilarity(base.hidden, base.hidden))).toBeCloseTo(1, 6);
    // The embedded model ablates the same way (its heads are concatenated before W_O).
    const u = use.run(text, { ablateHeads: [[1, 2]] });
    const plain = use.run(text);
    const [, uh, un] = plain.shape;
    expect(worst(u.attentions, plain.attentions)).toBe(0); // only the last layer's output changes
    expect(Math.min(...engine.cosineSimilarity(plain.hidden, u.hidden))).toBeLessThan(0.9999);
    expect(u.shape).toEqual([2, uh, un, un]);
  });

  it('writes .npy files NumPy reads: header, shape and float32 data', () => {
    const npy = engine.toNpy({ data: r.attentions, shape: [...r.shape] });
    expect(Array.from(npy.subarray(0, 8))).toEqual([0x93, 78, 85, 77, 80, 89, 1, 0]);
    const headerLength = npy[8] | (npy[9] << 8);
    expect((10 + headerLength) % 64).toBe(0);
    const header = new TextDecoder().decode(npy.subarray(10, 10 + headerLength));
    expect(header).toMatch(
      new RegExp(`^\\{'descr': '<f4', 'fortran_order': False, 'shape': \\(${r.shape.join(', ')}\\), \\} *\\n$`),
    );
    const data = new Float32Array(npy.slice(10 + headerLength).buffer);
    expect(data).toEqual(r.attentions);
  });

  it('refuses bad input clearly and keeps working', () => {
    expect(() => engine.rollout({ attentions: new Float32Array(8), shape: [2, 2, 2] })).toThrow(
      'rollout: attentions must have rank 4, got shape [2, 2, 2]',
    );
    expect(() =>
      engine.rollout({ attentions: new Float32Array(8), shape: [1, 2, 2, 2] }, { residual: 1 as never }),
    ).toThrow('rollout: options.residual must be a boolean, got number');
    expect(() => engine.attentionFlow(r, { rows: [99] })).toThrow(
      'attentionFlow: rows[0] must be a whole number from 0 to',
    );
    expect(() => engine.headSummaries({ ...r, tokens: ['a'], special: undefined })).toThrow(
      'headSummaries: 1 tokens for maps over',
    );
    const nan = new Float32Array(r.attentions);
    nan[5] = NaN;
    expect(() => engine.rollout({ attentions: nan, shape: r.shape })).toThrow(
      'rollout: attentions has a non-finite value (NaN)',
    );
    expect(() => use.run('x', { ablateHeads: [[2, 0]] })).toThrow(
      "run: ablateHeads names layer 2, head 0, outside the model's 2 layers × 4 heads (both count from 0)",
    );
    expect(() => use.run('x', { ablateHeads: [[0]] as never })).toThrow(
      'run: ablateHeads[0] must be a [layer, head] pair',
    );
    expect(() => engine.toNpy({ data: new Float32Array(2), shape: [3] })).toThrow(
      'toNpy: tensor.data has 2 values but shape [3] needs 3',
    );
    expect(engine.rollout(r).shape).toEqual([2, r.shape[2], r.shape[2]]);
  });
});
