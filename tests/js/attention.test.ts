// The wasm engine against the JS reference, PyTorch's goldens, and the properties the seed notes state.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Mask, MultiHeadParams, Tensor } from '../../dist/node.js';
import { BUILDS, engineFor } from './engines.js';
import { expectClose, randn, refAttention, refMatmul, refMultiHead, tensor } from './reference.js';

type GoldenTensor = { shape: number[]; data: number[] };
const asTensor = (g: GoldenTensor): Tensor => tensor(g.shape, g.data);
const golden = (name: string) =>
  JSON.parse(readFileSync(new URL(`../golden/${name}.json`, import.meta.url), 'utf8')) as { cases: any[] };

/** Random [d, d] weights wq, wk, wv, wo (seeds seed … seed + 3), and the named biases (seed + 4 on, scale 0.1). */
function randomParams(d: number, seed: number, scale: number, biases: Array<'bq' | 'bk' | 'bv' | 'bo'>) {
  const params: MultiHeadParams = {
    wq: randn([d, d], seed, scale),
    wk: randn([d, d], seed + 1, scale),
    wv: randn([d, d], seed + 2, scale),
    wo: randn([d, d], seed + 3, scale),
  };
  biases.forEach((name, i) => (params[name] = randn([d], seed + 4 + i, 0.1)));
  return params;
}

function mean(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return s / xs.length;
}

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it('reports the build it chose', () => {
    const info = engine.info();
    expect(info).toMatchObject({
      build,
      threads,
      simd: true,
      relaxedSimd: build.startsWith('relaxed-'),
      version: '0.1.0',
    });
    expect(info.maxCallBytes).toBe(2 ** 30);
  });

  it('writes results into the arrays the caller gives (options.into), call after call, and the heap stays flat', () => {
    const q = randn([2, 9, 16], 50),
      k = randn([2, 11, 16], 51),
      v = randn([2, 11, 12], 52);
    const output = new Float32Array(2 * 9 * 12),
      weights = new Float32Array(2 * 9 * 11);
    const fresh = engine.attention(q, k, v, { causal: true });
    const into = engine.attention(q, k, v, { causal: true, into: { output, weights } });
    expect(into.output.data).toBe(output);
    expect(into.weights.data).toBe(weights);
    expect(into.output.shape).toEqual([2, 9, 12]);
    expect(into.weights.shape).toEqual([2, 9, 11]);
    expect(Array.from(output)).toEqual(Array.from(fresh.output.data));
    expect(Array.from(weights)).toEqual(Array.from(fresh.weights.data));
    // Another input into the same arrays overwrites them; one of the two may be given alone.
    const q2 = randn([2, 9, 16], 53);
    engine.attention(q2, k, v, { into: { weights } });
    expect(Array.from(weights)).toEqual(Array.from(engine.attention(q2, k, v).weights.data));
    const self = randn([7, 16], 54),
      selfWeights = new Float32Array(49);
    engine.selfAttention(self, { into: { weights: selfWeights } });
    expectClose({ data: selfWeights, shape: [7, 7] }, refAttention(self, self, self, { scale: 1 }).weights);
    // Multi-head attention, one-shot and from a layer: output [n, d_model] and weights [heads, n, n].
    const d = 32,
      params = randomParams(d, 55, 0.2, ['bq', 'bo']),
      x = randn([10, d], 60);
    const mhaOutput = new Float32Array(10 * d),
      mhaWeights = new Float32Array(4 * 10 * 10);
    const expected = engine.multiHeadAttention(x, params, { heads: 4 });
    engine.multiHeadAttention(x, params, { heads: 4, into: { output: mhaOutput, weights: mhaWeights } });
    expect(Array.from(mhaOutput)).toEqual(Array.from(expected.output.data));
    expect(Array.from(mhaWeights)).toEqual(Array.from(expected.weights.data));
    // Causal weights copy only keys 0..i of row i, and zero the rest in a caller's array (here full of the last call's).
    const causal = engine.multiHeadAttention(x, params, { heads: 4, causal: true });
    engine.multiHeadAttention(x, params, { heads: 4, causal: true, into: { weights: mhaWeights } });
    expect(Array.from(mhaWeights)).toEqual(Array.from(causal.weights.data));
    expect(causal.weights.data[1]).toBe(0);
    const layer = engine.multiHeadLayer(params, { heads: 4 });
    mhaOutput.fill(0);
    const fromLayer = layer.run(x, { into: { output: mhaOutput } });
    expect(fromLayer.output.data).toBe(mhaOutput);
    expectClose(fromLayer.output, expected.output, 1e-6);
    // A wrong length is an error before any work, and the arrays and the engine are as they were.
    const before = Array.from(weights);
    expect(() => engine.attention(q, k, v, { into: { weights: new Float32Array(5) } })).toThrowError(
      'attention: options.into.weights has 5 values but the result [2, 9, 11] needs 198',
    );
    expect(() => layer.run(x, { into: { weights: new Float32Array(400), output: new Float32Array(3) } })).toThrowError(
      'multiHeadLayer.run: options.into.output has 3 values but the result [10, 32] needs 320',
    );
    expect(Array.from(weights)).toEqual(before);
    // Calls into the same arrays do not grow the heap.
    engine.attention(q, k, v, { into: { output, weights } });
    const baseline = engine.memory().allocatedBytes;
    for (let i = 0; i < 200; i++) engine.attention(q, k, v, { into: { output, weights } });
    expect(engine.memory().allocatedBytes).toBe(baseline);
    layer.dispose();
  });

  it(
    threads === 1
      ? "writes the weights straight into the caller's arrays, rewriting every value, with no heap buffer for them"
      : "keeps the heap buffer for the weights between calls into the caller's arrays, rewriting every value, and a call without them frees it",
    () => {
      // Neither the buffer (two threads) nor the caller's array (one thread: each block of rows is copied into it
      // from the kernel's own block) is zeroed between calls: a value the kernels did not write would show the
      // previous call's.
      const q = randn([2, 40, 16], 90),
        k = randn([2, 48, 16], 91),
        v = randn([2, 48, 8], 92),
        few = randn([2, 2, 16], 93);
      const keep: Mask = { data: new Uint8Array(40 * 48).fill(1), shape: [40, 48] };
      for (let j = 0; j < 48; j++) keep.data[7 * 48 + j] = 0; // query 7 sees nothing: its row is zeros
      keep.data[20 * 48 + 3] = 0;
      const fewKeep: Mask = { data: keep.data.slice(6 * 48, 8 * 48), shape: [2, 48] }; // its second row hides all
      const expected = engine.attention(q, k, v, { mask: keep, causal: true });
      const expectedFew = engine.attention(few, k, v, { mask: fewKeep, causal: true });
      const output = new Float32Array(2 * 40 * 8),
        weights = new Float32Array(2 * 40 * 48);
      const before = engine.memory().allocatedBytes;
      engine.attention(q, k, v, { into: { output, weights } }); // every weight nonzero, in the kept buffer too
      const kept = engine.memory().allocatedBytes;
      if (threads === 1) expect(kept).toBe(before);
      else expect(kept - before).toBeGreaterThanOrEqual(weights.byteLength);
      engine.attention(q, k, v, { mask: keep, causal: true, into: { output, weights } });
      expect(Array.from(weights)).toEqual(Array.from(expected.weights.data));
      expect(Array.from(output)).toEqual(Array.from(expected.output.data));
      const fewWeights = new Float32Array(2 * 2 * 48).fill(0.5);
      engine.attention(few, k, v, { mask: fewKeep, causal: true, into: { weights: fewWeights } });
      expect(Array.from(fewWeights)).toEqual(Array.from(expectedFew.weights.data));
      expect(engine.memory().allocatedBytes).toBe(kept); // (two threads: the smaller call took the same buffer)
      engine.attention(q, k, v);
      if (threads === 1) expect(engine.memory().allocatedBytes).toBe(before);
      else expect(kept - engine.memory().allocatedBytes).toBeGreaterThanOrEqual(weights.byteLength);
    },
  );

  it('returns long causal weights whole: from 2,048 keys each row is copied as keys 0..i into a new array', () => {
    const q = randn([2, 40, 8], 94),
      k = randn([2, 2100, 8], 95),
      v = randn([2, 2100, 4], 96);
    const ref = refAttention(q, k, v, { causal: true });
    expectClose(engine.attention(q, k, v, { causal: true }).weights, ref.weights);
    const d = 16,
      x = randn([2050, d], 97),
      params = randomParams(d, 98, 0.2, []);
    const full = engine.multiHeadAttention(x, params, { heads: 2, causal: true }).weights.data;
    const into = new Float32Array(2 * 2050 * 2050).fill(0.5); // (into a caller's array: every value copied)
    engine.multiHeadAttention(x, params, { heads: 2, causal: true, into: { weights: into } });
    let differ = 0;
    for (let i = 0; i < full.length; i++) if (full[i] !== into[i]) differ++;
    expect(differ).toBe(0);
    // Causal rows depend on the tokens up to their own: the first 40 rows are those of the first 40 tokens alone.
    const rows = refMultiHead(tensor([40, d], x.data.slice(0, 40 * d)), params, { heads: 2, causal: true }).weights;
    for (let h = 0; h < 2; h++)
      for (let i = 0; i < 40; i++)
        expectClose(
          { data: full.subarray((h * 2050 + i) * 2050, (h * 2050 + i) * 2050 + 40), shape: [40] },
          { data: rows.data.subarray((h * 40 + i) * 40, (h * 40 + i + 1) * 40), shape: [40] },
        );
  });

  it(`multiplies ${build.startsWith('relaxed-') ? 'with' : 'without'} a fused multiply-add`, () => {
    // x² − (1 + 2⁻¹¹) with x = 1 + 2⁻¹²: the exact value is 2⁻²⁴, but x² alone rounds to
    // 1 + 2⁻¹¹ (a tie, to even), so a separate multiply and add gives 0. Only the relaxed-simd
    // builds fuse, and relaxed SIMD lets an engine fuse only where the CPU has FMA.
    const x = 1 + 2 ** -12;
    const y = engine.linear(tensor([1, 2], [-(1 + 2 ** -11), x]), tensor([2, 1], [1, x]));
    const fused = build.startsWith('relaxed-') && readFileSync('/proc/cpuinfo', 'utf8').includes(' fma ');
    expect(y.data[0]).toBe(fused ? 2 ** -24 : 0);
  });

  it.each([
    { heads: 0, nQ: 1, nK: 1, dK: 1, dV: 1, causal: false },
    { heads: 0, nQ: 7, nK: 11, dK: 5, dV: 3, causal: false },
    { heads: 0, nQ: 12, nK: 5, dK: 8, dV: 8, causal: true },
    { heads: 4, nQ: 33, nK: 33, dK: 16, dV: 8, causal: true },
    { heads: 2, nQ: 70, nK: 90, dK: 24, dV: 24, causal: false },
    // Several row blocks and key tiles, the causal cut inside an 8-key panel, d_v not a multiple of 8.
    { heads: 3, nQ: 101, nK: 101, dK: 12, dV: 20, causal: true },
  ])('attention matches the JS reference: %o', ({ heads, nQ, nK, dK, dV, causal }) => {
    const lead = heads ? [heads] : [];
    const q = randn([...lead, nQ, dK], 1),
      k = randn([...lead, nK, dK], 2),
      v = randn([...lead, nK, dV], 3);
    const ref = refAttention(q, k, v, { causal });
    const r = engine.attention(q, k, v, { causal });
    expectClose(r.weights, ref.weights);
    expectClose(r.output, ref.output);
    const noWeights = engine.attention(q, k, v, { causal, returnWeights: false });
    expect('weights' in noWeights).toBe(false);
    expectClose(noWeights.output, ref.output);
  });

  it('keep and additive masks, fully hidden rows give zeros and no NaN', () => {
    const q = randn([2, 4, 3], 4),
      k = randn([2, 5, 3], 5),
      v = randn([2, 5, 2], 6);
    const keep: Mask = { data: new Uint8Array(20).fill(1), shape: [4, 5] };
    keep.data[1] = 0;
    for (let j = 0; j < 5; j++) keep.data[2 * 5 + j] = 0; // query 2 sees nothing
    const r = engine.attention(q, k, v, { mask: keep, causal: true });
    const ref = refAttention(q, k, v, { mask: keep, causal: true });
    expectClose(r.weights, ref.weights);
    expectClose(r.output, ref.output);
    for (const h of [0, 1]) for (let c = 0; c < 2; c++) expect(r.output.data[(h * 4 + 2) * 2 + c]).toBe(0);
    expect(r.output.data.some(Number.isNaN)).toBe(false);

    const additive: Mask = { data: randn([2, 4, 5], 7).data, shape: [2, 4, 5] };
    additive.data[0] = -Infinity;
    const ra = engine.attention(q, k, v, { mask: additive });
    expectClose(ra.weights, refAttention(q, k, v, { mask: additive }).weights);
    expect(ra.weights.data[0]).toBe(0);
  });

  it('matches torch.nn.functional.scaled_dot_product_attention goldens', () => {
    for (const c of golden('scaled_dot_product_attention').cases) {
      const mask: Mask | undefined = c.mask && {
        shape: c.mask.shape,
        data:
          c.mask.kind === 'keep'
            ? Uint8Array.from(c.mask.data)
            : Float32Array.from(c.mask.data, (x: number | null) => x ?? -Infinity),
      };
      const r = engine.attention(asTensor(c.q), asTensor(c.k), asTensor(c.v), {
        causal: c.causal,
        mask,
        scale: c.scale,
      });
      expectClose(r.weights, asTensor(c.weights), 1e-5, 1e-4);
      expectClose(r.output, asTensor(c.output), 1e-5, 1e-4);
    }
  });

  it('matches torch.nn.MultiheadAttention goldens (average_attn_weights=False)', () => {
    for (const c of golden('multi_head_attention').cases) {
      const params = Object.fromEntries(
        Object.entries(c.params).map(([k, v]) => [k, asTensor(v as GoldenTensor)]),
      ) as unknown as MultiHeadParams;
      const r = engine.multiHeadAttention(asTensor(c.x), params, {
        heads: c.heads,
        causal: c.causal,
        context: c.context && asTensor(c.context),
      });
      expectClose(r.weights, asTensor(c.weights), 1e-5, 1e-4);
      expectClose(r.output, asTensor(c.output), 2e-5, 1e-4);
    }
  });

  it('multi-head attention with projections, cross-attention and a mask matches the JS reference', () => {
    const dModel = 24,
      heads = 4,
      n = 9,
      m = 13;
    const p: MultiHeadParams = {
      wq: randn([dModel, 16], 10, 0.3),
      wk: randn([dModel, 16], 11, 0.3),
      wv: randn([dModel, 20], 12, 0.3),
      wo: randn([20, dModel], 13, 0.3),
      bq: randn([16], 14),
      bv: randn([20], 15),
      bo: randn([dModel], 16),
    };
    const x = randn([n, dModel], 17),
      context = randn([m, dModel], 18);
    const mask: Mask = { data: new Uint8Array(n * m).fill(1), shape: [n, m] };
    mask.data[3] = 0;
    const r = engine.multiHeadAttention(x, p, { heads, context, mask, returnProjections: true });
    const ref = refMultiHead(x, p, { heads, context, mask });
    expect(r.weights.shape).toEqual([heads, n, m]);
    expect(r.q.shape).toEqual([heads, n, 4]);
    expect(r.v.shape).toEqual([heads, m, 5]);
    expectClose(r.weights, ref.weights);
    expectClose(r.output, ref.output, 1e-4, 1e-4);
    expectClose(r.q, ref.q, 1e-4, 1e-4);
    expectClose(r.k, ref.k, 1e-4, 1e-4);
    expectClose(r.v, ref.v, 1e-4, 1e-4);
    const plain = engine.multiHeadAttention(x, p, { heads, returnWeights: false });
    expect(Object.keys(plain)).toEqual(['output']);
    // Without weights attention runs fused, writing each head's rows into its columns of [n, heads·d_v].
    for (const causal of [false, true]) {
      const fused = engine.multiHeadAttention(x, p, { heads, causal, context, mask, returnWeights: false });
      expectClose(fused.output, refMultiHead(x, p, { heads, causal, context, mask }).output, 1e-4, 1e-4);
    }
  });

  it('one-shot weights streamed into panels, over several blocks and with a narrow last panel, match the reference', () => {
    // d_model 5001: wq and wk (heads of 8 columns) and wo arrive in several blocks of rows, and wo's last
    // panel holds one column; wv's heads of 12 columns are copied whole instead. Up to 32 rows each block
    // is multiplied as it arrives, adding into the output (2 rows: the decoding-step kernel; 5: the 4-row
    // one and a leftover row); with 40 the weights are read whole into panels first.
    const dModel = 5001,
      heads = 2;
    const p: MultiHeadParams = {
      wq: randn([dModel, 16], 40, 0.05),
      wk: randn([dModel, 16], 41, 0.05),
      wv: randn([dModel, 24], 42, 0.05),
      wo: randn([24, dModel], 43, 0.3),
      bq: randn([16], 44),
      bo: randn([dModel], 45),
    };
    for (const n of [2, 5, 40]) {
      const x = randn([n, dModel], 46 + n, 0.3); // scores of a few units: a softmax that does not magnify rounding
      for (const causal of [false, true]) {
        const ref = refMultiHead(x, p, { heads, causal });
        const r = engine.multiHeadAttention(x, p, { heads, causal });
        expectClose(r.weights, ref.weights, 1e-5, 1e-4);
        expectClose(r.output, ref.output, 1e-4, 1e-4);
      }
    }
  });

  it('one-shot weights in a Float32Array subclass are read as the memory they view, not through its methods', () => {
    // Threaded builds read a weight's next block from JS inside a parallel loop; a method of the caller's
    // that threw there would leave the loop running. The engine reads through a plain view instead.
    class Odd extends Float32Array {
      override subarray(): never {
        throw new Error('the engine called the subclass subarray');
      }
    }
    const d = 64,
      params = randomParams(d, 72, 0.2, []);
    const odd: MultiHeadParams = { ...params, wq: { shape: params.wq.shape, data: new Odd(params.wq.data) } };
    expect(() => odd.wq.data.subarray(0, 1)).toThrow('subclass');
    for (const n of [2, 40]) {
      const x = randn([n, d], 73 + n, 0.3);
      expect(engine.multiHeadAttention(x, odd, { heads: 4 })).toEqual(
        engine.multiHeadAttention(x, params, { heads: 4 }),
      );
    }
  });

  it('one-shot weights too large to sum are still finite, and accepted', () => {
    // Streamed weights are checked by summing them as they are packed; a sum that overflows sends the
    // block to the exact check, which finds nothing wrong with 3e38.
    const d = 64,
      params = randomParams(d, 70, 0.2, []);
    params.wq.data.fill(3e38, 0, 4 * d);
    const x = tensor([2, d], new Float32Array(2 * d)); // zeros: q = 0 · 3e38 = 0
    for (const n of [2, 40])
      expect(
        engine.multiHeadAttention(tensor([n, d], new Float32Array(n * d)), params, { heads: 4 }).output.data,
      ).toEqual(new Float32Array(n * d));
    expect(engine.multiHeadAttention(x, params, { heads: 4 }).weights.data.every((w) => w === 0.5)).toBe(true);
  });

  it('linear (the packed SIMD128 matrix multiply) matches the JS reference at ragged shapes', () => {
    for (const [n, k, m] of [
      [1, 1, 1],
      [5, 7, 9],
      [33, 64, 17],
      [128, 96, 200],
    ]) {
      const x = randn([n, k], n + k, 1),
        w = randn([k, m], k + m, 1),
        b = randn([m], m, 1);
      expectClose(engine.linear(x, w, b), refMatmul(x, w, b), 1e-4);
      expectClose(engine.linear(x, w), refMatmul(x, w), 1e-4);
    }
    expect(() => engine.linear(randn([2, 3], 1), randn([4, 5], 2))).toThrow(
      'linear: w has shape [4, 5] but x has shape [2, 3]',
    );
    expect(() => engine.linear(randn([2, 3], 1), randn([3, 5], 2), randn([4], 3))).toThrow(
      'linear: b has shape [4] but w has shape [3, 5]',
    );
  });

  it('a multi-head layer holds its weights between calls and computes what multiHeadAttention does', () => {
    const d = 48,
      heads = 4;
    const params = randomParams(d, 31, 0.2, ['bq', 'bo']);
    const layer = engine.multiHeadLayer(params, { heads });
    for (const [n, causal] of [
      [5, false],
      [37, true],
    ] as const) {
      const x = randn([n, d], n, 1);
      const want = engine.multiHeadAttention(x, params, { heads, causal, returnProjections: true });
      const got = layer.run(x, { causal, returnProjections: true });
      expectClose(got.output, want.output, 1e-6);
      expectClose(got.weights, want.weights, 1e-6);
      expectClose(got.q, want.q, 1e-6);
    }
    expect(() => layer.run(randn([3, d + 1], 1))).toThrow('multiHeadLayer.run: ');
    expect(() => layer.run(randn([3, d], 1), { heads: 2 } as never)).toThrow(
      "multiHeadLayer.run: unknown option 'heads'",
    );
    expect(layer.run(randn([2, d], 2)).output.shape).toEqual([2, d]); // still usable after errors
    layer.dispose();
    expect(() => layer.run(randn([2, d], 2))).toThrow('multiHeadLayer.run: this layer was disposed');
    const nan = randn([d, d], 7);
    nan.data[3] = NaN;
    expect(() => engine.multiHeadLayer({ ...params, wk: nan }, { heads })).toThrow(
      'multiHeadLayer: wk has a non-finite value (NaN)',
    );
    expect(() => engine.multiHeadLayer(params, { heads: 5 })).toThrow('multiHeadLayer: ');
  });

  it('a multi-head layer matches the JS reference whether or not a head is a whole number of 8-column panels', () => {
    // The layer's weights are packed once in panels of 8 columns; each head's q, k and v are
    // multiplied straight into their own block. Head widths 16 and 8 start on a panel, 12 and 6 do not.
    const d = 48;
    for (const heads of [3, 6, 4, 8]) {
      const params = randomParams(d, heads + 51, 0.2, ['bq', 'bk', 'bv']);
      const layer = engine.multiHeadLayer(params, { heads });
      for (const [n, causal] of [
        [1, false],
        [21, true],
      ] as const) {
        const x = randn([n, d], n + heads, 1);
        const got = layer.run(x, { causal, returnProjections: true });
        const ref = refMultiHead(x, params, { heads, causal });
        expectClose(got.output, ref.output, 1e-4, 1e-4);
        expectClose(got.weights, ref.weights, 1e-5, 1e-4);
        expectClose(got.q, ref.q, 1e-4, 1e-4);
        expectClose(got.k, ref.k, 1e-4, 1e-4);
        expectClose(got.v, ref.v, 1e-4, 1e-4);
      }
      layer.dispose();
    }
  });

  it('a linear layer holds its weights and computes what linear does', () => {
    const w = randn([70, 45], 41, 0.3),
      b = randn([45], 42, 0.1);
    const layer = engine.linearLayer(w, b);
    for (const n of [1, 9, 64]) {
      const x = randn([n, 70], n, 1);
      expectClose(layer.run(x), refMatmul(x, w, b), 1e-4);
    }
    expect(() => layer.run(randn([3, 71], 1))).toThrow('linear: w has shape [70, 45] but x has shape [3, 71]');
    expect(layer.run(randn([2, 70], 2)).shape).toEqual([2, 45]);
    layer.dispose();
    expect(() => layer.run(randn([2, 70], 2))).toThrow('linearLayer.run: this layer was disposed');
    expect(() => engine.linearLayer(w, randn([44], 1))).toThrow(
      'linearLayer: b has shape [44] but w has shape [70, 45]',
    );
  });

  it('wide layers, whose column tasks span several panels (each block loads the next panel ahead), match the JS reference', () => {
    // Each thread takes about 16 column tasks; with 65 panels a task holds 2 to 4 of them, and
    // while a block multiplies by one panel it also loads the next, a line per 8 steps of k.
    // k = 37 is not a whole number of those steps; 517 columns end in a partial panel.
    const w = randn([37, 517], 61, 0.3),
      b = randn([517], 62, 0.1);
    const layer = engine.linearLayer(w, b);
    for (const n of [3, 4, 64]) {
      const x = randn([n, 37], n + 60, 1);
      expectClose(layer.run(x), refMatmul(x, w, b), 1e-4);
    }
    layer.dispose();
    // Two heads 128 columns wide: 16 panels each, the GEMM of each head split into tasks of several.
    const d = 256,
      heads = 2;
    const params = randomParams(d, 63, 0.1, ['bq']);
    const mha = engine.multiHeadLayer(params, { heads });
    const x = randn([9, d], 68, 1);
    const got = mha.run(x, { returnProjections: true });
    const ref = refMultiHead(x, params, { heads, causal: false });
    expectClose(got.q, ref.q, 1e-4, 1e-4);
    expectClose(got.k, ref.k, 1e-4, 1e-4);
    expectClose(got.v, ref.v, 1e-4, 1e-4);
    expectClose(got.output, ref.output, 1e-4, 1e-4);
    mha.dispose();
  });

  it('rows of weights sum to 1', () => {
    const x = randn([3, 64, 16], 20, 2);
    for (const causal of [false, true]) {
      const { weights } = engine.attention(x, x, x, { causal });
      for (let row = 0; row < 3 * 64; row++) {
        let sum = 0;
        for (let j = 0; j < 64; j++) sum += weights.data[row * 64 + j];
        expect(sum).toBeCloseTo(1, 5);
      }
    }
  });

  it('self-attention is permutation-equivariant and defaults to scale 1', () => {
    const n = 10,
      d = 6;
    const x = randn([n, d], 21, 0.5);
    const perm = [7, 2, 9, 0, 4, 1, 8, 3, 6, 5];
    const px = tensor([n, d]);
    perm.forEach((src, i) => px.data.set(x.data.subarray(src * d, src * d + d), i * d));
    const a = engine.selfAttention(x),
      b = engine.selfAttention(px);
    for (let i = 0; i < n; i++)
      for (let c = 0; c < d; c++) expect(b.output.data[i * d + c]).toBeCloseTo(a.output.data[perm[i] * d + c], 5);
    expectClose(a.output, refAttention(x, x, x, { scale: 1 }).output);
    expectClose(engine.selfAttention(x, { scale: 0.5 }).weights, refAttention(x, x, x, { scale: 0.5 }).weights);
  });

  it('scaling by 1/sqrt(d_k) keeps the score variance near 1 for unit-variance inputs', () => {
    // Recover the scaled scores from the weights: log w_ij − log w_i0 = s_ij − s_i0.
    const n = 64,
      dK = 256;
    const q = randn([n, dK], 22),
      k = randn([n, dK], 23);
    const scores: number[] = [];
    const { weights } = engine.attention(q, k, tensor([n, 1]), { returnWeights: true });
    const raw = refAttention(q, k, tensor([n, 1]), { scale: 1 / Math.sqrt(dK) });
    expectClose(weights, raw.weights, 1e-6, 1e-3);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        let dot = 0;
        for (let t = 0; t < dK; t++) dot += q.data[i * dK + t] * k.data[j * dK + t];
        scores.push(dot / Math.sqrt(dK));
      }
    const mu = mean(scores);
    const variance = mean(scores.map((s) => (s - mu) ** 2));
    expect(variance).toBeGreaterThan(0.8);
    expect(variance).toBeLessThan(1.2);
    // Unscaled, the variance is d_k: the softmax saturates (rows near one-hot).
    const unscaled = engine.attention(q, k, tensor([n, 1]), { scale: 1 });
    const maxPerRow = Array.from({ length: n }, (_, i) =>
      Math.max(...unscaled.weights.data.subarray(i * n, i * n + n)),
    );
    expect(mean(maxPerRow)).toBeGreaterThan(0.9);
    const scaledMax = Array.from({ length: n }, (_, i) => Math.max(...weights.data.subarray(i * n, i * n + n)));
    expect(mean(scaledMax)).toBeLessThan(0.5);
  });

  it('without weights, a single head at n = 16,384 runs in O(n·d) memory', () => {
    const n = 16_384,
      d = 32;
    const q = randn([n, d], 40),
      k = randn([n, d], 41),
      v = randn([n, d], 42);
    const before = engine.memory().heapBytes;
    const { output } = engine.attention(q, k, v, { causal: true, returnWeights: false });
    // An n×n buffer alone would be 1 GiB; inputs, output and scratch are a few MiB.
    expect(engine.memory().heapBytes - before).toBeLessThan(64 * 2 ** 20);
    // Spot-check rows against the reference, one row at a time.
    for (const i of [0, 1, 777, 8191, n - 1]) {
      const row = refAttention(
        tensor([1, d], q.data.subarray(i * d, (i + 1) * d)),
        tensor([i + 1, d], k.data.subarray(0, (i + 1) * d)),
        tensor([i + 1, d], v.data.subarray(0, (i + 1) * d)),
      ).output;
      expectClose(tensor([1, d], output.data.subarray(i * d, (i + 1) * d)), row, 1e-5, 1e-3);
    }
  }, 120_000);

  it('outputs are fresh arrays that survive heap growth and later calls', () => {
    const x = randn([8, 4], 24);
    const first = engine.selfAttention(x);
    const saved = Float32Array.from(first.output.data);
    expect(first.output.data.buffer).toBeInstanceOf(ArrayBuffer);
    expect(first.output.data.byteOffset).toBe(0);
    const before = engine.memory().heapBytes;
    const big = randn([4000, 2048], 25); // 2 × 33 MB of keys and values: the heap must grow past its initial 32 MB
    engine.attention(randn([8, 2048], 26), big, big);
    expect(engine.memory().heapBytes).toBeGreaterThan(before);
    expect(first.output.data).toEqual(saved);
  });
});
