// Load and lifetime: thousands of mixed calls and a hundred model loads leave the
// heap and the handle table where they were; hostile text is tokenized or refused;
// several workers at once compute what one does alone.
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createEngine, type Engine, type Model } from '../../dist/node.js';
import { goldenModelFiles } from '../golden-models.mjs';
import { decoderCheckpoint } from '../llm/checkpoints.mjs';
import { randn } from './reference.js';

const bertFiles = () => goldenModelFiles('bert');

describe('resources', () => {
  let engine: Engine;
  let model: Model;
  beforeAll(async () => {
    engine = await createEngine({ threads: 2 });
    model = await engine.loadModel('default');
  });
  afterAll(() => engine.dispose());

  it('10,000 calls mixing valid and invalid input leave the heap and handles at baseline', () => {
    const x = randn([12, 16], 1);
    const w = randn([16, 16], 2, 0.3);
    const calls: Array<() => unknown> = [
      () => engine.attention(x, x, x, { causal: true }),
      () => engine.selfAttention(x),
      () => engine.multiHeadAttention(x, { wq: w, wk: w, wv: w, wo: w }, { heads: 4 }),
      () => model.run('The cat sat on the mat.'),
      () => model.tokenize('Tokens, tokens, tokens.'),
      () => engine.attention(x, randn([12, 8], 3), x), // d_k mismatch
      () => engine.selfAttention({ data: new Float32Array([NaN, 1]), shape: [1, 2] }),
      () => engine.multiHeadAttention(x, { wq: w, wk: w, wv: w, wo: w }, { heads: 3 }),
      () => model.run(''),
      () => model.run([1, 99999]),
      () => model.run('x', { attentionMask: [2] }),
    ];
    for (const call of calls) {
      try {
        call();
      } catch {
        // warm-up: the allocator reaches its steady state
      }
    }
    const before = engine.memory();
    let errors = 0;
    for (let i = 0; i < 10_000; i++) {
      try {
        calls[i % calls.length]();
      } catch (err) {
        expect(err).toBeInstanceOf(Error);
        errors++;
      }
    }
    const after = engine.memory();
    expect(errors).toBeGreaterThan(4000);
    expect(after).toEqual(before);
  }, 120_000);

  it('loading and disposing a model 100 times returns to baseline', async () => {
    const files = bertFiles();
    const first = await engine.loadModel({ files });
    first.dispose();
    const before = engine.memory();
    for (let i = 0; i < 100; i++) {
      const m = await engine.loadModel({ files });
      m.run([2, 5, 6, 3]);
      m.dispose();
    }
    for (let i = 0; i < 3; i++) (await engine.loadModel('default')).dispose();
    expect(engine.memory().allocatedBytes).toBe(before.allocatedBytes);
    expect(engine.memory().handles).toBe(before.handles);
  }, 120_000);

  it('1,000 one-shot multi-head calls at a transformer width leave the heap where the first ones left it', () => {
    // The one-shot call copies its weights in, packs them and returns the weights: nothing of it may stay behind.
    const x = randn([128, 256], 4);
    const w = () => randn([256, 256], 5, 0.06);
    const params = { wq: w(), wk: w(), wv: w(), wo: w() };
    const call = (causal: boolean) => engine.multiHeadAttention(x, params, { heads: 4, causal });
    for (let i = 0; i < 10; i++) call(i % 2 === 0);
    const before = engine.memory();
    for (let i = 0; i < 1000; i++) expect(call(i % 2 === 0).weights.shape).toEqual([4, 128, 128]);
    expect(engine.memory()).toEqual(before);
  }, 120_000);

  it('running out of heap mid-run is an error naming it; the model then runs as before', async () => {
    // A language model, then the heap filled with held linear layers until the next one is refused: a long run of
    // the model passes its budget check (from shapes alone), but its allocations find no room.
    const fresh = await createEngine({ threads: 1 });
    const lm = await fresh.loadModel({ files: decoderCheckpoint({ arch: 'llama', maxPositions: 2048 }).files });
    const ids = Array.from({ length: 24 }, (_, i) => (i * 7) % 96);
    const before = lm.run(ids, { topK: 3 });
    const held = [];
    const w = { data: new Float32Array(2 ** 24), shape: [4096, 4096] }; // 64 MiB each
    for (let i = 0; i < 80; i++) {
      try {
        held.push(fresh.linearLayer(w));
      } catch (err) {
        expect(String(err)).toMatch(/memory|MiB/);
        break;
      }
    }
    expect(held.length).toBeGreaterThan(40); // the heap was filled, past 2^31, not refused at once
    const long = Array.from({ length: 2048 }, (_, i) => (i * 13) % 96);
    expect(() => lm.run(long, { topK: 3 })).toThrow(/^run: out of memory \(the wasm heap is limited to 4 GiB\)/);
    for (const layer of held) layer.dispose();
    const after = lm.run(ids, { topK: 3 });
    expect(Array.from(after.attentions)).toEqual(Array.from(before.attentions));
    expect(Array.from(after.predictions!.probs)).toEqual(Array.from(before.predictions!.probs));
    expect(lm.run(long, { topK: 3 }).shape).toEqual([2, 4, 2048, 2048]); // with the room back, the long run runs
    fresh.dispose();
  }, 120_000);

  it('hostile text is tokenized or refused clearly, and long input is truncated visibly', () => {
    const cases = [
      '\ud800\udc00\udfff\ud800 lone and paired surrogates',
      '\u0000\u0001\u0007\u001b[31mcontrol\u007f\u009f',
      '😀'.repeat(100_000),
      'مرحبا بالعالم ‏שלום‎ RTL ‮reversed‬',
      '👨\u200d👩\u200d👧\u200d👦 zero\u200dwidth\u200cjoiners\u2060',
      'x'.repeat(1_000_000),
      'word '.repeat(200_000),
    ];
    for (const text of cases) {
      const r = model.run(text);
      expect(r.tokens.length).toBeLessThanOrEqual(128);
      expect(r.truncated).toBe(r.totalTokens > 128);
      expect(r.attentions.every(Number.isFinite)).toBe(true);
    }
    const long = 'word '.repeat(200_000);
    expect(model.run(long).totalTokens).toBe(model.tokenize(long).ids.length);
    expect(model.run(long).totalTokens).toBeGreaterThan(200_000);
  }, 120_000);
});

describe('concurrency', () => {
  it('two workers at once compute exactly what one caller computes alone', async () => {
    const sentences = ['The cat sat on the mat.', 'Attention is all you need.', 'Every head attends differently.'];
    const engine = await createEngine({ threads: 1 });
    const model = await engine.loadModel('default');
    const alone = sentences.map((s) => Array.from(model.run(s).attentions));
    engine.dispose();
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData.entry).then(async ({ createEngine }) => {
        const engine = await createEngine({ threads: 2 });
        const model = await engine.loadModel('default');
        const out = [];
        for (let round = 0; round < 5; round++)
          for (const s of workerData.sentences) out.push(Array.from(model.run(s).attentions));
        engine.dispose();
        parentPort.postMessage(out);
      });`;
    const entry = new URL('../../dist/node.js', import.meta.url).href;
    const results = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<number[][]>((resolve, reject) => {
            const w = new Worker(code, { eval: true, workerData: { entry, sentences } });
            w.once('message', resolve);
            w.once('error', reject);
          }),
      ),
    );
    for (const out of results) out.forEach((attn, i) => expect(attn).toEqual(alone[i % sentences.length]));
  }, 120_000);
});
