// Maps that carry their own tokens: every run and generation names its maps as sets with query and key tokens, and
// the analysis functions read a set's kind to refuse, saying why, what is not defined on cross-attention.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, MapSet } from '../../dist/node.js';
import { goldenModelFiles } from '../golden-models.mjs';
import { decoderCheckpoint } from '../llm/checkpoints.mjs';
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
});
