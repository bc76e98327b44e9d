// In a browser Web Worker: the package's browser entry, straight from dist/, loads random
// checkpoints in real models' shapes and runs 128 tokens on the build it picks by itself.
// - no query: bert-base-uncased's size (109.5M parameters); then every build it ships runs the
//   same small multi-head attention, to compare;
// - `?llm=Qwen2.5-0.5B,…`: language models in BF16 as the Hub ships them, one engine each,
//   with next-token predictions; the heap after loading and after the run are reported;
// - `?gguf=Llama-3.2-1B:Q8_0,…`: the same from GGUF files in the real shapes of 1-3B models (Q8_0, or llama.cpp's
//   Q4_K_M mix), the last layer's maps (as the page runs models whose every map would not fit).
import { createEngine } from '../../dist/browser.js';
import { bertCheckpoint } from '../safetensors.mjs';
import { realShapeCheckpoint } from '../llm/checkpoints.mjs';
import { T } from '../llm/gguf.mjs';
import { q4KM, realShapeGguf } from '../llm/real-gguf.mjs';

const BUILDS = ['relaxed-simd-threads', 'relaxed-simd', 'simd-threads', 'simd'];
const MiB = (bytes) => Math.round(bytes / 2 ** 20);
const ids = Array.from({ length: 128 }, (_, i) => 1000 + i);

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

async function bert() {
  const { params, files } = bertCheckpoint();
  const engine = await createEngine();
  const model = await engine.loadModel({ files });
  const r = model.run(ids);
  const report = {
    params,
    build: engine.info().build,
    shape: r.shape,
    finite: r.attentions.every(Number.isFinite),
    heapMiB: MiB(engine.memory().heapBytes),
  };
  engine.dispose();
  return { ...report, builds: await everyBuild() };
}

/** One report per language model: its shape's parameters, heap after load and after a 128-token run. */
async function languageModels(names) {
  const reports = {};
  for (const name of names) {
    let { params, files } = realShapeCheckpoint(name);
    const engine = await createEngine();
    const model = await engine.loadModel({ files });
    files = null; // the page's copy of the file goes; the model reads nothing more from it
    const loaded = MiB(engine.memory().heapBytes);
    const started = performance.now();
    const r = model.run(ids, { topK: 5 });
    reports[name] = {
      params,
      build: engine.info().build,
      weightsDtype: model.info.weightsDtype,
      shape: r.shape,
      finite: r.attentions.every(Number.isFinite) && r.predictions.probs.every(Number.isFinite),
      loadedMiB: loaded,
      ranMiB: MiB(engine.memory().heapBytes),
      runMs: Math.round(performance.now() - started),
    };
    engine.dispose();
  }
  return reports;
}

/** One report per `name:type` GGUF, as languageModels reports. */
async function ggufModels(list) {
  const reports = {};
  for (const entry of list) {
    const [name, type] = entry.split(':');
    const typeOf = type === 'Q4_K_M' ? q4KM(REAL_LAYERS[name]) : () => type;
    let { parameters, bytes } = realShapeGguf(name, typeOf, [['general.file_type', T.UINT32, FILE_TYPES[type]]]);
    const file = bytes.length;
    const engine = await createEngine();
    const model = await engine.loadModel({ files: { [`${name}-${type}.gguf`]: bytes } });
    bytes = null; // the page's copy of the file goes
    const loaded = MiB(engine.memory().heapBytes);
    const started = performance.now();
    const r = model.run(ids, { topK: 5, mapLayers: [model.info.layers - 1] });
    reports[entry] = {
      params: parameters,
      fileMiB: MiB(file),
      build: engine.info().build,
      weights: model.info.weights,
      shape: r.shape,
      finite: r.attentions.every(Number.isFinite) && r.predictions.probs.every(Number.isFinite),
      loadedMiB: loaded,
      ranMiB: MiB(engine.memory().heapBytes),
      runMs: Math.round(performance.now() - started),
    };
    engine.dispose();
  }
  return reports;
}
const REAL_LAYERS = { 'Llama-3.2-1B': 16, 'Qwen3-1.7B': 28, 'Gemma-2-2B': 26 };
const FILE_TYPES = { Q8_0: 7, Q4_K_M: 15 };

try {
  const query = new URL(self.location.href).searchParams;
  const [llm, gguf] = [query.get('llm'), query.get('gguf')];
  postMessage(llm ? await languageModels(llm.split(',')) : gguf ? await ggufModels(gguf.split(',')) : await bert());
} catch (err) {
  postMessage({ error: String(err) });
}
