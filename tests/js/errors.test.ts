// Bad input: a JS Error naming the argument and shapes, and an engine that still
// works afterwards with its heap back where it was.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createEngine, type Engine, type Tensor } from '../../dist/node.js';
import { goldenModelFiles } from '../golden-models.mjs';
import { BUILDS, engineFor } from './engines.js';
import { randn, refAttention, tensor, expectClose } from './reference.js';

const q = randn([4, 32], 1);
const k = randn([4, 32], 2);
const v = randn([4, 8], 3);
const x = randn([5, 8], 4);
const w = (r: number, c: number, seed = 5) => randn([r, c], seed, 0.3);
const params = { wq: w(8, 8), wk: w(8, 8), wv: w(8, 8), wo: w(8, 8) };

// Each entry: a call that must throw, and a piece of its message.
const mhaParams = { wq: randn([8, 8], 41), wk: randn([8, 8], 42), wv: randn([8, 8], 43), wo: randn([8, 8], 44) };
const BAD_CALLS: Array<[string, (e: Engine) => unknown, string]> = [
  [
    'into: an array of the wrong length',
    (e) => e.attention(q, k, v, { into: { output: new Float32Array(4 * 8), weights: new Float32Array(17) } }),
    'attention: options.into.weights has 17 values but the result [4, 4] needs 16',
  ],
  [
    'into: the output of multi-head attention as long as its weights',
    (e) =>
      e.multiHeadAttention(randn([3, 8], 40), mhaParams, { heads: 2, into: { output: new Float32Array(2 * 3 * 3) } }),
    'multiHeadAttention: options.into.output has 18 values but the result [3, 8] needs 24',
  ],
  [
    'into: the weights in a weight of a one-shot call (one thread would overwrite wo before reading it)',
    (e) => e.multiHeadAttention(x, params, { heads: 2, into: { weights: params.wo.data.subarray(0, 2 * 5 * 5) } }),
    'multiHeadAttention: options.into.weights shares memory with wo',
  ],
  [
    'into: output and weights in one buffer',
    (e) => {
      const both = new Float32Array(4 * 32 + 8); // the weights' 16 values start 8 before the output's end
      return e.selfAttention(q, { into: { output: both.subarray(0, 4 * 32), weights: both.subarray(4 * 32 - 8) } });
    },
    'selfAttention: options.into.weights shares memory with options.into.output',
  ],
  [
    'into: a key that is not a result',
    (e) => e.selfAttention(q, { into: { scores: new Float32Array(16) } as never }),
    "selfAttention: unknown option 'into.scores' (known: output, weights)",
  ],
  ['d_k mismatch', (e) => e.attention(q, randn([4, 64], 6), v), 'attention: k has d_k=64 but q has d_k=32'],
  ['n_k mismatch', (e) => e.attention(q, k, randn([5, 8], 7)), 'attention: v has n_k=5 but k has n_k=4'],
  [
    'rank mismatch',
    (e) => e.attention(randn([2, 4, 32], 8), k, v),
    'attention: k has shape [4, 32] but q has shape [2, 4, 32]',
  ],
  [
    'heads mismatch',
    (e) => e.attention(randn([2, 4, 32], 8), randn([3, 4, 32], 9), randn([2, 4, 8], 10)),
    'attention: k has heads=3 but q has heads=2',
  ],
  ['rank 1', (e) => e.attention(tensor([32]), k, v), 'attention: q must have rank 2 or 3, got shape [32]'],
  [
    'rank 4',
    (e) => e.selfAttention(tensor([1, 1, 2, 2])),
    'selfAttention: x must have rank 2 or 3, got shape [1, 1, 2, 2]',
  ],
  ['empty', (e) => e.attention(tensor([0, 32]), k, v), 'attention: q is empty (shape [0, 32])'],
  [
    'data length',
    (e) => e.attention({ data: new Float32Array(7), shape: [4, 2] }, k, v),
    'attention: q.data has 7 values but shape [4, 2] needs 8',
  ],
  [
    'fractional dim',
    (e) => e.attention({ data: new Float32Array(4), shape: [2.5, 2] }, k, v),
    'attention: q.shape[0] must be a whole number',
  ],
  [
    'negative dim',
    (e) => e.attention({ data: new Float32Array(4), shape: [-2, -2] }, k, v),
    'attention: q.shape[0] must be a whole number',
  ],
  [
    'NaN',
    (e) => e.attention({ data: Float32Array.from([1, NaN, 3, 4]), shape: [2, 2] }, tensor([2, 2]), tensor([2, 2])),
    'attention: q has a non-finite value (NaN) at index 1',
  ],
  [
    'Infinity',
    (e) => e.selfAttention({ data: Float32Array.from([1, 2, Infinity, 4]), shape: [2, 2] }),
    'selfAttention: x has a non-finite value (Infinity) at index 2',
  ],
  ['NaN scale', (e) => e.attention(q, k, v, { scale: NaN }), 'attention: scale must be a finite number'],
  [
    'mask shape',
    (e) => e.attention(q, k, v, { mask: { data: new Uint8Array(12), shape: [3, 4] } }),
    'attention: mask has shape [3, 4] but needs [n_q, n_k] = [4, 4]',
  ],
  [
    'mask NaN',
    (e) => e.attention(q, k, v, { mask: { data: new Float32Array(16).fill(NaN), shape: [4, 4] } }),
    'attention: mask has a non-finite value (NaN) at index 0',
  ],
  [
    'mask type',
    (e) => e.attention(q, k, v, { mask: { data: new Int32Array(16) as never, shape: [4, 4] } }),
    'attention: mask.data must be a Uint8Array (1 = attend) or a Float32Array (additive), got Int32Array',
  ],
  [
    'Float64Array',
    (e) => e.attention({ data: new Float64Array(4) as never, shape: [2, 2] }, k, v),
    'attention: q.data must be a Float32Array, got Float64Array',
  ],
  [
    'not a tensor',
    (e) => e.attention([1, 2, 3] as never, k, v),
    'attention: q must be { data: Float32Array, shape: number[] }, got Array',
  ],
  [
    'shape not numbers',
    (e) => e.attention({ data: new Float32Array(4), shape: ['2', '2'] as never }, k, v),
    'attention: q.shape must be an array of numbers',
  ],
  ['unknown option', (e) => e.attention(q, k, v, { casual: true } as never), "attention: unknown option 'casual'"],
  [
    'option type',
    (e) => e.attention(q, k, v, { causal: 'yes' } as never),
    'attention: options.causal must be a boolean, got string',
  ],
  [
    'budget',
    (e) =>
      e.attention(
        { data: new Float32Array(40000), shape: [40000, 1] },
        { data: new Float32Array(40000), shape: [40000, 1] },
        { data: new Float32Array(40000), shape: [40000, 1] },
      ),
    'above the memory budget of 1024 MiB per call',
  ],
  [
    'heads divide',
    (e) => e.multiHeadAttention(x, { ...params, wq: w(8, 9), wk: w(8, 9) }, { heads: 2 }),
    'multiHeadAttention: heads=2 does not divide the 9 columns of wq [8, 9]',
  ],
  [
    'heads zero',
    (e) => e.multiHeadAttention(x, params, { heads: 0 }),
    'multiHeadAttention: heads must be an integer from 1 to 4096, got 0',
  ],
  [
    'heads fractional',
    (e) => e.multiHeadAttention(x, params, { heads: 1.5 }),
    'multiHeadAttention: heads must be an integer from 1 to 4096, got 1.5',
  ],
  [
    'heads missing',
    (e) => e.multiHeadAttention(x, params, {} as never),
    'multiHeadAttention: options.heads must be a number, got undefined',
  ],
  [
    'wq rows',
    (e) => e.multiHeadAttention(x, { ...params, wq: w(7, 8) }, { heads: 2 }),
    'multiHeadAttention: wq has shape [7, 8] but x has d_model=8',
  ],
  [
    'wk shape',
    (e) => e.multiHeadAttention(x, { ...params, wk: w(8, 4) }, { heads: 2 }),
    'multiHeadAttention: wk has shape [8, 4] but wq has shape [8, 8]',
  ],
  [
    'wo shape',
    (e) => e.multiHeadAttention(x, { ...params, wo: w(8, 6) }, { heads: 2 }),
    'multiHeadAttention: wo has shape [8, 6] but needs [heads·d_v, d_model] = [8, 8]',
  ],
  [
    'bias shape',
    (e) => e.multiHeadAttention(x, { ...params, bq: tensor([7]) }, { heads: 2 }),
    'multiHeadAttention: bq has shape [7] but heads·d_k=8',
  ],
  [
    'wv missing',
    (e) => e.multiHeadAttention(x, { ...params, wv: undefined as never }, { heads: 2 }),
    'multiHeadAttention: wv must be { data: Float32Array, shape: number[] }, got undefined',
  ],
  [
    'context width',
    (e) => e.multiHeadAttention(x, params, { heads: 2, context: randn([3, 6], 11) }),
    'multiHeadAttention: context has d_model=6 but x has d_model=8',
  ],
  [
    'mha mask',
    (e) => e.multiHeadAttention(x, params, { heads: 2, mask: { data: new Uint8Array(4), shape: [2, 2] } }),
    'multiHeadAttention: mask has shape [2, 2] but needs [n_q, n_k] = [5, 5]',
  ],
  [
    'mha NaN weight',
    (e) =>
      e.multiHeadAttention(x, { ...params, wo: { data: new Float32Array(64).fill(NaN), shape: [8, 8] } }, { heads: 2 }),
    'multiHeadAttention: wo has a non-finite value (NaN) at index 0',
  ],
  // One-shot weights are streamed into the GEMM's panels a block of rows at a time (about 128 KB) and checked
  // as they pass: a bad value in a later block, or in a last panel narrower than 8 columns, is named as well,
  // whether each block is multiplied as it arrives (up to 32 rows) or the weight is read whole first (on
  // every thread of the pool).
  [
    'mha NaN weight past the first block',
    (e) => e.multiHeadAttention(randn([1, 5001], 11), bigParams({ wq: 36003 }), { heads: 1 }),
    'multiHeadAttention: wq has a non-finite value (NaN) at index 36003',
  ],
  [
    'mha NaN weight past the first block, read whole',
    (e) => e.multiHeadAttention(randn([40, 5001], 11), bigParams({ wq: 36003 }), { heads: 1 }),
    'multiHeadAttention: wq has a non-finite value (NaN) at index 36003',
  ],
  // With many rows on two threads, each later weight is read while the GEMMs before it run (W_K beside q's, W_O
  // beside v's): the error then comes from the calling thread's part of a parallel loop.
  [
    'mha NaN in wk, read whole while the GEMMs before it run',
    (e) => e.multiHeadAttention(randn([40, 5001], 11), bigParams({ wk: 36003 }), { heads: 1 }),
    'multiHeadAttention: wk has a non-finite value (NaN) at index 36003',
  ],
  [
    'mha Infinity in wo, read whole while the GEMMs before it run',
    (e) => e.multiHeadAttention(randn([40, 5001], 11), bigParams({ wo: 8 * 5001 - 1 }, Infinity), { heads: 1 }),
    'multiHeadAttention: wo has a non-finite value (Infinity) at index 40007',
  ],
  [
    'mha Infinity in a narrow last panel',
    (e) => e.multiHeadAttention(randn([1, 5001], 11), bigParams({ wo: 8 * 5001 - 1 }, Infinity), { heads: 1 }),
    'multiHeadAttention: wo has a non-finite value (Infinity) at index 40007',
  ],
];

/** Multi-head weights for d_model 5001 and one head of 8, with `bad` put at the given index of each named weight. */
function bigParams(at: Partial<Record<'wq' | 'wk' | 'wo', number>>, bad = NaN) {
  const p = { wq: w(5001, 8), wk: w(5001, 8), wv: w(5001, 8), wo: w(8, 5001) };
  for (const [name, i] of Object.entries(at)) p[name as 'wq' | 'wk' | 'wo'].data[i] = bad;
  return p;
}

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it.each(BAD_CALLS)('%s is a clear Error', (_name, call, message) => {
    expect(() => call(engine)).toThrowError(message);
    let thrown: unknown;
    try {
      call(engine);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(Error);
  });

  it('words every input message from the one table both sides share, each kind reached from one side or the other', async () => {
    // The table as the module holds it, read from a module of its own.
    const factory = createRequire(import.meta.url)('../../dist/wasm/node/attnscope-st.js') as (args: {
      wasmBinary: Uint8Array;
    }) => Promise<{ messages(): Record<string, string> }>;
    const wasmBinary = readFileSync(new URL('../../dist/wasm/node/attnscope-st.wasm', import.meta.url));
    const table = (await factory({ wasmBinary })).messages();
    // A template as a pattern: its {names} stand for any text.
    const pattern = (text: string) =>
      new RegExp(
        `^${text
          .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
          .replace(/\{\w+\}/g, '.+')
          .replace(/[{}]/g, '\\$&')}$`,
      );
    const thrown = (call: () => unknown) => {
      try {
        call();
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('no error');
    };
    const nan = tensor([2, 2]);
    nan.data[3] = NaN;
    const model = await engine.loadModel({ files: goldenModelFiles('bert') });
    const calls: Record<string, () => unknown> = {
      tensor: () => engine.attention(null as never, k, v), // the package's side
      tensor_data: () => engine.attention({ data: [1, 2], shape: [1, 2] } as never, k, v),
      shape_list: () => engine.attention({ data: new Float32Array(2), shape: '1,2' } as never, k, v),
      mask: () => engine.attention(q, k, v, { mask: 3 as never }),
      mask_data: () => engine.attention(q, k, v, { mask: { data: [1], shape: [1, 1] } as never }),
      options: () => engine.attention(q, k, v, 3 as never),
      option_type: () => engine.attention(q, k, v, { causal: 'yes' as never }),
      unknown_option: () => engine.attention(q, k, v, { casual: true } as never),
      shape_entry: () => engine.attention({ data: new Float32Array(2), shape: [1, 2.5] }, k, v), // C++'s side
      data_length: () => engine.attention({ data: new Float32Array(3), shape: [1, 2] }, k, v),
      rank: () => engine.attention(tensor([32]), k, v),
      empty: () => engine.attention(tensor([0, 32]), k, v),
      non_finite: () => engine.selfAttention(nan),
      whole_number: () =>
        engine.attentionFlow({ attentions: new Float32Array(8), shape: [1, 2, 2, 2] }, { rows: [0.5] }),
      into: () => engine.attention(q, k, v, { into: new Float32Array(32) as never }),
      into_array: () => engine.attention(q, k, v, { into: { weights: [0, 1] as never } }),
      into_length: () => engine.attention(q, k, v, { into: { weights: new Float32Array(15) } }), // C++'s side
      into_unused: () => engine.attention(q, k, v, { returnWeights: false, into: { weights: new Float32Array(16) } }),
      into_shared: () => engine.attention(q, k, v, { into: { weights: q.data } }),
      into_room: () => model.run([2, 5, 7], { into: { attentions: new Float32Array(8) } }), // a model run's maps
    };
    expect(Object.keys(calls).sort()).toEqual(Object.keys(table).sort());
    for (const [kind, call] of Object.entries(calls)) {
      const message = thrown(call);
      expect(message, kind).toMatch(pattern(table[kind]));
      expect(message, kind).not.toMatch(/\{\w+\}/);
    }
    model.dispose();
  });

  it('1,000 mixed calls: the engine keeps working and the heap does not grow', () => {
    const good = randn([2, 16, 8], 30);
    const expected = refAttention(good, good, good, { causal: true });
    const goodCall = () => engine.attention(good, good, good, { causal: true });
    // Warm up: the allocator reaches its steady state on the largest call first.
    goodCall();
    for (const [, call] of BAD_CALLS) expect(() => call(engine)).toThrow();
    const baseline = engine.memory();
    for (let i = 0; i < 1000; i++) {
      if (i % 3 === 0) {
        expectClose(goodCall().weights, expected.weights);
      } else {
        const [, call] = BAD_CALLS[i % BAD_CALLS.length];
        expect(() => call(engine)).toThrow();
      }
    }
    const after = engine.memory();
    expect(after.allocatedBytes).toBe(baseline.allocatedBytes);
    expect(after.heapBytes).toBe(baseline.heapBytes);
  });
});

describe('createEngine and dispose', () => {
  it('refuses a bad thread count or build by name', async () => {
    await expect(createEngine({ threads: 0 })).rejects.toThrow(
      'createEngine: threads must be an integer from 1 to 64, got 0',
    );
    await expect(createEngine({ threads: 2.5 })).rejects.toThrow('got 2.5');
    await expect(createEngine({ build: 'gpu' as never })).rejects.toThrow(
      "createEngine: build must be one of 'relaxed-simd-threads', 'relaxed-simd', 'simd-threads', 'simd', got gpu",
    );
    await expect(createEngine({ build: 'toString' as never })).rejects.toThrow('got toString');
  });

  it('picks relaxed-simd-threads for several threads in a Node with relaxed SIMD, relaxed-simd for one', async () => {
    const many = await createEngine({ threads: 2 });
    const one = await createEngine({ threads: 1 });
    expect(many.info()).toMatchObject({ build: 'relaxed-simd-threads', relaxedSimd: true, threads: 2 });
    expect(one.info()).toMatchObject({ build: 'relaxed-simd', relaxedSimd: true, threads: 1 });
    many.dispose();
    one.dispose();
  });

  it('without relaxed SIMD picks simd-threads and simd, and refuses a forced relaxed build by name', () => {
    // A Node without --experimental-wasm-relaxed-simd (Node 20's default).
    const script = `import { createEngine } from './dist/node.js';
      for (const threads of [2, 1]) console.log((await createEngine({ threads })).info().build);
      await createEngine({ build: 'relaxed-simd' }).catch((e) => console.log(e.message));
      process.exit(0);`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
    });
    expect(out.trim().split('\n')).toEqual([
      'simd-threads',
      'simd',
      "createEngine: build 'relaxed-simd' needs relaxed SIMD, which this JavaScript engine lacks (Chrome and Edge 114+, Node 22+, or Node 20 with --experimental-wasm-relaxed-simd)",
    ]);
  });

  it('a disposed engine throws a clear Error; dispose twice is harmless', async () => {
    const e = await createEngine({ threads: 2 });
    const t: Tensor = randn([3, 3], 40);
    e.selfAttention(t);
    e.dispose();
    e.dispose();
    expect(() => e.selfAttention(t)).toThrowError('selfAttention: this engine was disposed');
    expect(() => e.info()).toThrowError('info: this engine was disposed');
  });
});
