// TensorFlow.js with its WebAssembly backend (XNNPACK, SIMD) as a benchmark engine,
// the same computations written with tf ops: node bench/engines/tfjs.mjs 1 <dir>
// In Node its wasm backend runs single-threaded (its threaded build needs a browser's workers).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';

import { D, HEADS, bertIds, readSafetensors, sample, serveEngine } from '../workloads.mjs';

const dir = process.argv[3];
const require = createRequire(import.meta.url);
setWasmPaths(`${dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm'))}/`);
await tf.setBackend('wasm');
await tf.ready();

const inputs = readSafetensors(join(dir, 'inputs.safetensors'));
const tensor = ({ data, shape }) => tf.tensor(data, shape);

/** Self-attention of x [n, d] with x·W projections (+ biases); returns [output, weights [heads, n, n]]. */
function attention(x, w, b = {}) {
  const n = x.shape[0],
    dk = D / HEADS;
  const project = (name, perm) => {
    let y = tf.matMul(x, w[name]);
    if (b[name]) y = y.add(b[name]);
    return y.reshape([n, HEADS, dk]).transpose(perm);
  };
  const q = project('wq', [1, 0, 2]);
  const k = project('wk', [1, 0, 2]);
  const v = project('wv', [1, 0, 2]);
  const p = tf.softmax(tf.matMul(q, k, false, true).mul(1 / Math.sqrt(dk)));
  let y = tf.matMul(tf.matMul(p, v).transpose([1, 0, 2]).reshape([n, D]), w.wo);
  if (b.wo) y = y.add(b.wo);
  return [y, p];
}

function layerNorm(x, g, b, eps) {
  const { mean, variance } = tf.moments(x, -1, true);
  return x
    .sub(mean)
    .mul(tf.rsqrt(variance.add(eps)))
    .mul(g)
    .add(b);
}

// erf is not a kernel of the wasm backend: Abramowitz & Stegun 7.1.26 (error below 1.5e-7).
function erf(x) {
  const a = x.abs();
  const t = tf.scalar(1).div(a.mul(0.3275911).add(1));
  const poly = t.mul(
    t.mul(t.mul(t.mul(t.mul(1.061405429).add(-1.453152027)).add(1.421413741)).add(-0.284496736)).add(0.254829592),
  );
  const e = tf.scalar(1).sub(poly.mul(tf.exp(a.square().neg())));
  return tf.where(x.less(0), e.neg(), e);
}

/** BERT's encoder with the checkpoint's weights (PyTorch [out, in] layout transposed to x·W). */
function loadBert() {
  const t = readSafetensors(join(dir, 'bert', 'model.safetensors'));
  const get = (name) => tensor(t[name]);
  const linear = (name) => ({ w: get(`${name}.weight`).transpose(), b: get(`${name}.bias`) });
  const layers = [];
  for (let l = 0; t[`encoder.layer.${l}.attention.self.query.weight`]; l++) {
    const p = `encoder.layer.${l}.`;
    const [q, k, v, o] = [
      'attention.self.query',
      'attention.self.key',
      'attention.self.value',
      'attention.output.dense',
    ].map((m) => linear(p + m));
    layers.push({
      w: { wq: q.w, wk: k.w, wv: v.w, wo: o.w },
      b: { wq: q.b, wk: k.b, wv: v.b, wo: o.b },
      ln1: [get(`${p}attention.output.LayerNorm.weight`), get(`${p}attention.output.LayerNorm.bias`)],
      up: linear(`${p}intermediate.dense`),
      down: linear(`${p}output.dense`),
      ln2: [get(`${p}output.LayerNorm.weight`), get(`${p}output.LayerNorm.bias`)],
    });
  }
  const emb = {
    word: get('embeddings.word_embeddings.weight'),
    position: get('embeddings.position_embeddings.weight'),
    type: tensor(t['embeddings.token_type_embeddings.weight']).slice([0, 0], [1, D]),
    ln: [get('embeddings.LayerNorm.weight'), get('embeddings.LayerNorm.bias')],
  };
  return (ids) =>
    tf.tidy(() => {
      const n = ids.length;
      let x = tf
        .gather(emb.word, tf.tensor1d(ids, 'int32'))
        .add(emb.position.slice([0, 0], [n, D]))
        .add(emb.type);
      x = layerNorm(x, ...emb.ln, 1e-12);
      let p;
      for (const L of layers) {
        const [a, weights] = attention(x, L.w, L.b);
        p = weights;
        x = layerNorm(x.add(a), ...L.ln1, 1e-12);
        const h = tf.matMul(x, L.up.w).add(L.up.b);
        const gelu = h.mul(erf(h.mul(Math.SQRT1_2)).add(1)).mul(0.5);
        x = layerNorm(x.add(tf.matMul(gelu, L.down.w).add(L.down.b)), ...L.ln2, 1e-12);
      }
      return sample(p.dataSync(), n, x.dataSync(), D);
    });
}

let bert = null;
let job = null;
let last = null;

serveEngine({
  setup({ work, n, rows, k, m }) {
    if (work === 'mha') {
      const w = Object.fromEntries(
        Object.entries(readSafetensors(join(dir, 'mha.safetensors'))).map(([k, v]) => [k, tensor(v)]),
      );
      const x = tensor(inputs[`x${n}`]);
      job = () =>
        tf.tidy(() => {
          const [y, p] = attention(x, w);
          return sample(p.dataSync(), n, y.dataSync(), D);
        });
    } else if (work === 'bert') {
      bert ??= loadBert();
      const ids = bertIds(n);
      job = () => bert(ids);
    } else if (work === 'gemm') {
      const x = tensor(inputs[`a${rows}x${k}`]);
      const w = tensor(readSafetensors(join(dir, `gemm_${k}x${m}.safetensors`)).w);
      job = () => tf.tidy(() => Array.from(tf.matMul(x, w).dataSync().subarray(0, m)));
    } else throw new Error(`TF.js has no ${work} workload here`);
    return { ok: true };
  },
  run() {
    const start = performance.now();
    last = job();
    return { ms: performance.now() - start };
  },
  sample: () => ({ sample: last }),
});
