// Compile-time checks of the public types (tsc --noEmit --strict; never run).
// Each @ts-expect-error line must fail to compile, or tsc reports the directive as unused.
import { createEngine, type Engine, type Tensor } from '../../dist/index.js';

declare const t: Tensor;

export async function contract(): Promise<void> {
  const engine: Engine = await createEngine({ threads: 2, locateFile: (p) => p, wasmBinary: new Uint8Array() });
  const info = engine.info();
  const build: 'relaxed-simd-threads' | 'relaxed-simd' | 'simd-threads' | 'simd' = info.build;
  const simd: boolean = info.simd;
  const relaxedSimd: boolean = info.relaxedSimd;
  const reason: string = info.reason; // why this build and thread count
  // @ts-expect-error no such build
  await createEngine({ build: 'relaxed' });

  const full = engine.attention(t, t, t, {
    causal: true,
    scale: 0.5,
    mask: { data: new Uint8Array(4), shape: [2, 2] },
  });
  const weights: Tensor = full.weights; // present by default
  const slim = engine.attention(t, t, t, { returnWeights: false });
  // @ts-expect-error weights are absent when returnWeights is false
  slim.weights;
  const self = engine.selfAttention(t, { scale: 1 });
  const selfWeights: Tensor = self.weights;

  const mha = engine.multiHeadAttention(
    t,
    { wq: t, wk: t, wv: t, wo: t, bq: t },
    { heads: 2, returnProjections: true },
  );
  const q: Tensor = mha.q;
  const w: Tensor = mha.weights;
  const plain = engine.multiHeadAttention(t, { wq: t, wk: t, wv: t, wo: t }, { heads: 2 });
  // @ts-expect-error projections only on request
  plain.q;
  // @ts-expect-error heads is required
  engine.multiHeadAttention(t, { wq: t, wk: t, wv: t, wo: t }, {});
  // @ts-expect-error data must be a Float32Array
  engine.selfAttention({ data: [1, 2], shape: [1, 2] });
  // @ts-expect-error wo is required
  engine.multiHeadAttention(t, { wq: t, wk: t, wv: t }, { heads: 1 });

  // Analysis takes a model run as it comes.
  const model = await engine.loadModel('default');
  const run = model.run('text', { ablateHeads: [[0, 1]] });
  const special: boolean[] = run.special;
  const rolled: Tensor = engine.rollout(run, { residual: false });
  const flow: Tensor = engine.attentionFlow(run, { rows: [0] });
  const entropy: number = engine.headSummaries(run)[0].entropy;
  const comparison = engine.compare(run, run);
  const change: Tensor | undefined = comparison.change;
  const difference: Tensor = comparison.difference(0, 0);
  const npy: Uint8Array = engine.toNpy(rolled);
  const cosines: Float32Array = engine.cosineSimilarity(run.hidden, run.hidden);
  // @ts-expect-error ablateHeads takes [layer, head] pairs
  model.run('text', { ablateHeads: [0, 1] });
  // @ts-expect-error headSummaries needs the tokens too
  engine.headSummaries({ attentions: run.attentions, shape: run.shape });
  const product: Tensor = engine.linear(t, t);
  const layer = engine.multiHeadLayer({ wq: t, wk: t, wv: t, wo: t }, { heads: 2 });
  const layerWeights: Tensor = layer.run(t, { causal: true }).weights;
  // @ts-expect-error a layer's heads are fixed when it is made
  layer.run(t, { heads: 3 });
  layer.dispose();
  const dense = engine.linearLayer(t);
  const projected: Tensor = dense.run(t);
  dense.dispose();
  void [special, flow, entropy, change, difference, npy, cosines, product, layerWeights, projected];

  const { heapBytes, allocatedBytes } = engine.memory();
  engine.dispose();
  void [build, simd, relaxedSimd, reason, weights, selfWeights, q, w, heapBytes, allocatedBytes];
}
