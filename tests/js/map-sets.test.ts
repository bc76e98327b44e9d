// Maps that carry their own tokens: every run and generation names its maps as sets with query and key tokens, and
// the analysis functions read a set's kind to refuse, saying why, what is not defined on cross-attention.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, MapSet } from '../../dist/node.js';
import { goldenModelFiles } from '../golden-models.mjs';
import { decoderCheckpoint } from '../llm/checkpoints.mjs';
import { SEQ2SEQ_GOLDENS, seq2seqFiles } from '../seq2seq.mjs';
import { DINOV2_PREPROCESSOR, dinov2Files, testImage } from '../vision.mjs';
import { BUILDS, engineFor } from './engines.js';

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it("a run's maps.self is its attentions, with its tokens as queries and keys, and its layers", async () => {
    for (const [files, causal] of [
      [goldenModelFiles('bert'), false],
      [decoderCheckpoint({ arch: 'llama', tokenizer: true }).files, true],
    ] as const) {
      const model = await engine.loadModel({ files });
      const r = model.run([5, 9, 12, 3, 7]);
      const self = r.maps.self!;
      expect(self.kind).toBe('self');
      expect(self.causal).toBe(causal);
      expect(self.attentions).toBe(r.attentions); // the same array, not a copy
      expect(self.shape).toEqual(r.shape);
      expect(self.queryTokens).toEqual(r.tokens);
      expect(self.keyTokens).toEqual(r.tokens);
      expect(self.layers).toEqual(r.mapLayers);
      expect(Object.keys(r.maps)).toEqual(['self']);
      const some = model.run([5, 9, 12, 3, 7], { mapLayers: [1] });
      expect(some.maps.self!.layers).toEqual([1]);
      expect(some.maps.self!.shape[0]).toBe(1);
      // Rollout and head summaries read a set as they read the run.
      expect(engine.rollout(self).data).toEqual(engine.rollout(r).data);
      expect(engine.headSummaries(self)).toEqual(engine.headSummaries(r));
      model.dispose();
    }
  });

  it('headSummaries: true summarizes the heads in the engine, equal to summarizing the returned maps', async () => {
    const model = await engine.loadModel({ files: decoderCheckpoint({ arch: 'llama', tokenizer: true }).files });
    const ids = [5, 9, 12, 3, 7, 9, 12];
    const r = model.run(ids, { headSummaries: true, reusePrefix: false });
    expect(r.headSummaries).toEqual(engine.headSummaries(r));
    // Some layers: each summary names the model's layer, not its slot among the maps.
    const some = model.run(ids, { headSummaries: true, mapLayers: [1], reusePrefix: false });
    const last = engine.headSummaries(some).map((s) => ({ ...s, layer: 1 }));
    expect(some.headSummaries).toEqual(last);
    expect(model.run(ids).headSummaries).toBeUndefined();
    expect(() => model.run(ids, { headSummaries: 1 as unknown as boolean })).toThrowError(/headSummaries/);
    model.dispose();
  });

  it("a generation's maps.self covers the whole sequence; none without maps", async () => {
    const model = await engine.loadModel({ files: decoderCheckpoint({ arch: 'llama', tokenizer: true }).files });
    const g = await model.generate('the cat', { maxNewTokens: 4, temperature: 0, stopAtEos: false });
    const self = g.maps.self!;
    expect(self.attentions).toBe(g.attentions);
    expect(self.queryTokens).toEqual(g.tokens);
    expect(self.shape).toEqual([model.info.layers, model.info.heads, g.tokens.length, g.tokens.length]);
    expect(self.causal).toBe(true);
    const bare = await model.generate('the cat', { maxNewTokens: 2, attentions: false });
    expect(bare.maps).toEqual({});
    model.dispose();
  });

  it('cross-attention maps are rectangular; rollout, flow and head summaries refuse them, saying why', () => {
    // Cross-attention with learned heads: 3 query tokens against a 5-token context.
    const d = 8;
    const heads = 2;
    const rand = (n: number, seed: number) => {
      let s = seed;
      return Float32Array.from({ length: n }, () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * 0.8);
    };
    const w = (seed: number) => ({ data: rand(d * d, seed), shape: [d, d] });
    const params = { wq: w(1), wk: w(2), wv: w(3), wo: w(4) };
    const x = { data: rand(3 * d, 5), shape: [3, d] };
    const context = { data: rand(5 * d, 6), shape: [5, d] };
    const r = engine.multiHeadAttention(x, params, { heads, context });
    expect(r.weights.shape).toEqual([heads, 3, 5]);
    const cross: MapSet = {
      kind: 'cross',
      causal: false,
      queryTokens: ['Die', 'Katze', 'saß'],
      keyTokens: ['The', 'cat', 'sat', 'down', '.'],
      attentions: r.weights.data,
      shape: [1, heads, 3, 5],
      layers: [0],
    };
    for (let row = 0; row < heads * 3; row++) {
      const sum = cross.attentions.subarray(row * 5, row * 5 + 5).reduce((a, b) => a + b, 0);
      expect(Math.abs(sum - 1)).toBeLessThan(1e-5);
    }
    expect(() => engine.rollout(cross)).toThrowError(
      'rollout: not defined here: these are cross-attention maps (3 queries × 5 keys): rollout and flow follow attention back',
    );
    expect(() => engine.attentionFlow(cross)).toThrowError(
      'attentionFlow: not defined here: these are cross-attention',
    );
    // Plain maps that are not square are cross-attention too, whatever they are called.
    expect(() => engine.rollout({ attentions: cross.attentions, shape: cross.shape })).toThrowError(
      /^rollout: not defined here: these are cross-attention maps \(3 queries × 5 keys\)/,
    );
    expect(() => engine.headSummaries(cross)).toThrowError(/^headSummaries: defined for self-attention/);
    // A square cross set (as many target as source tokens) is still refused by its kind.
    expect(() =>
      engine.rollout({ ...cross, shape: [1, 1, 3, 3], attentions: new Float32Array(9).fill(1 / 3) }),
    ).toThrowError(/^rollout: not defined here/);
  });
  it('every map set names its sequences and its layers, and a model says which sets its runs return', async () => {
    const bert = await engine.loadModel({ files: goldenModelFiles('bert') });
    expect(bert.info.input).toBe('text');
    expect(bert.info.stacks.map((s) => [s.name, s.layers, s.causal])).toEqual([['encoder', bert.info.layers, false]]);
    const self = bert.run([5, 9, 12]).maps.self!;
    expect([self.querySequence, self.keySequence]).toEqual(['text', 'text']);
    expect(self.mapLayers).toEqual(self.layers); // the deprecated name holds the same list
    bert.dispose();
    const g = SEQ2SEQ_GOLDENS[0];
    const pair = await engine.loadModel({ files: seq2seqFiles(g) });
    expect(pair.info.stacks.map((s) => [s.name, s.layers, s.causal])).toEqual([
      ['encoder', pair.info.encoderLayers, false],
      ['decoder', pair.info.layers, true],
    ]);
    const { encoder, decoder, cross } = pair.run({ source: g.source, target: g.target }).maps;
    expect([encoder, decoder, cross].map((m) => [m.querySequence, m.keySequence])).toEqual([
      ['source', 'source'],
      ['target', 'target'],
      ['target', 'source'],
    ]);
    pair.dispose();
  });

  it('rollout and flow computed with the run are the engine functions on its maps; an image run has them too', async () => {
    const model = await engine.loadModel({ files: decoderCheckpoint({ arch: 'llama', tokenizer: true }).files });
    const ids = [5, 9, 12, 3, 7, 9];
    for (const residual of [true, false]) {
      const r = model.run(ids, { rollout: { residual }, flow: { residual, rows: [2, 5] }, reusePrefix: false });
      const [layers, , n] = r.shape;
      const rollout = engine.rollout(r, { residual }).data.slice((layers - 1) * n * n);
      expect(r.maps.self!.rollout!.shape).toEqual([n, n]);
      expect(Array.from(r.maps.self!.rollout!.data)).toEqual(Array.from(rollout));
      const flow = engine.attentionFlow(r, { residual, rows: [2, 5] });
      expect(r.maps.self!.flow!.shape).toEqual([2, n]);
      expect(worst(r.maps.self!.flow!.data, flow.data)).toBeLessThan(1e-6);
    }
    // Every row by default; none without the option.
    expect(model.run(ids, { flow: {}, reusePrefix: false }).maps.self!.flow!.shape).toEqual([ids.length, ids.length]);
    expect(model.run(ids).maps.self!.rollout).toBeUndefined();
    // It needs every layer's maps, in order.
    expect(() => model.run(ids, { rollout: {}, mapLayers: [1] })).toThrowError(/rollout and flow read every layer/);
    expect(() => model.run(ids, { rollout: 'yes' as never })).toThrowError(/rollout/);
    model.dispose();
    const vision = await engine.loadModel({
      files: dinov2Files({ registers: 4 }),
    });
    const { data, width, height } = testImage(40, 30, 'gradient');
    const r = vision.run({ image: { data, width, height } }, { rollout: { residual: true } });
    const [layers, , n] = r.shape;
    expect(Array.from(r.maps.self.rollout!.data)).toEqual(
      Array.from(engine.rollout(r, { residual: true }).data.slice((layers - 1) * n * n)),
    );
    vision.dispose();
    // An encoder-decoder's self-attention sets each get theirs, or the one `set` names; cross-attention none.
    const g = SEQ2SEQ_GOLDENS[0];
    const pair = await engine.loadModel({ files: seq2seqFiles(g) });
    const both = pair.run({ source: g.source, target: g.target }, { rollout: {} });
    for (const name of ['encoder', 'decoder'] as const) {
      const set = both.maps[name];
      const [l, , m] = set.shape;
      expect(Array.from(set.rollout!.data)).toEqual(Array.from(engine.rollout(set).data.slice((l - 1) * m * m)));
    }
    expect(both.maps.cross.rollout).toBeUndefined();
    const one = pair.run({ source: g.source, target: g.target }, { flow: { set: 'decoder', rows: [1] } });
    expect(one.maps.decoder.flow!.shape).toEqual([1, g.target.length]);
    expect(one.maps.encoder.flow).toBeUndefined();
    expect(() => pair.run({ source: g.source, target: g.target }, { flow: { set: 'nowhere' } })).toThrowError(
      /no map set "nowhere" \(it has encoder, decoder, cross\)/,
    );
    pair.dispose();
  });

  it("a vision model reports the normalization its engine applies, preprocessor_config.json's or the class's", async () => {
    const files = dinov2Files();
    const own = await engine.loadModel({
      files: { ...files, 'preprocessor_config.json': new TextEncoder().encode(JSON.stringify(DINOV2_PREPROCESSOR)) },
    });
    expect(own.info.imageNormalization).toEqual({
      processor: 'BitImageProcessor',
      fromFile: true,
      rescale: DINOV2_PREPROCESSOR.rescale_factor,
      mean: DINOV2_PREPROCESSOR.image_mean,
      std: DINOV2_PREPROCESSOR.image_std,
    });
    own.dispose();
    const bare = { ...files };
    delete bare['preprocessor_config.json'];
    const none = await engine.loadModel({ files: bare });
    expect(none.info.imageNormalization).toMatchObject({
      fromFile: false,
      mean: [0.5, 0.5, 0.5],
      std: [0.5, 0.5, 0.5],
    });
    // The picture drawn back from the model's input with them is the image the model read (within rounding).
    const { data, width, height } = testImage(16, 16, 'gradient');
    const r = none.run({ image: { data, width, height } });
    expect(r.pixels.shape[0]).toBe(3);
    none.dispose();
  });

  it("tokenNorms: each token's norm at the input and after every layer, from the run", async () => {
    const model = await engine.loadModel({ files: goldenModelFiles('bert') });
    const r = model.run([5, 9, 12, 3], { tokenNorms: true, returnProjections: true });
    expect(r.tokenNorms!.shape).toEqual([model.info.layers + 1, 4]);
    // Row l is the norm of what layer l's projections read, before its norm (BERT is post-LN: its input itself).
    const x = r.inputs![1];
    const d = x.shape[1];
    for (let i = 0; i < 4; i++) {
      let sum = 0;
      for (let j = 0; j < d; j++) sum += x.data[i * d + j] ** 2;
      expect(r.tokenNorms!.data[1 * 4 + i]).toBeCloseTo(Math.sqrt(sum), 3);
    }
    expect(model.run([5, 9]).tokenNorms).toBeUndefined();
    model.dispose();
  });
});

function worst(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  return w;
}
