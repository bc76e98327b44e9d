// In a browser Web Worker: the package's browser entry, straight from dist/, loads a
// random checkpoint of bert-base-uncased's size (109.5M parameters) and runs 128 tokens
// on the build it picks by itself; then every build it ships runs the same small
// multi-head attention, to compare.
import { createEngine } from '../../dist/browser.js';
import { bertCheckpoint } from '../checkpoints.mjs';

const BUILDS = ['relaxed-simd-threads', 'relaxed-simd', 'simd-threads', 'simd'];

/** Largest difference between each build's output and the first build's, on one 40 × 64 MHA. */
async function everyBuild() {
  const values = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 0.5);
  const tensor = (rows, cols, seed) => ({ data: values(rows * cols, seed), shape: [rows, cols] });
  const x = tensor(40, 64, 1);
  const params = { wq: tensor(64, 64, 2), wk: tensor(64, 64, 3), wv: tensor(64, 64, 4), wo: tensor(64, 64, 5) };
  const diffs = {};
  let first;
  for (const build of BUILDS) {
    const engine = await createEngine({ build, threads: build.endsWith('-threads') ? 2 : 1 });
    const out = engine.multiHeadAttention(x, params, { heads: 4 }).output.data;
    first ??= out;
    diffs[engine.info().build] = Math.max(...out.map((v, i) => Math.abs(v - first[i])));
    engine.dispose();
  }
  return diffs;
}

try {
  const { params, files } = bertCheckpoint();
  const engine = await createEngine();
  const model = await engine.loadModel({ files });
  const r = model.run(Array.from({ length: 128 }, (_, i) => 1000 + i));
  const report = {
    params,
    build: engine.info().build,
    shape: r.shape,
    finite: r.attentions.every(Number.isFinite),
    heapMiB: Math.round(engine.memory().heapBytes / 2 ** 20),
  };
  engine.dispose();
  postMessage({ ...report, builds: await everyBuild() });
} catch (err) {
  postMessage({ error: String(err) });
}
