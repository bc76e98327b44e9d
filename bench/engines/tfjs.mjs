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

// Written with tf's functions (tfjs-core alone registers no chained methods).
const { add, mul, sub, matMul, reshape, transpose } = tf;

/** Self-attention of x [n, d] with x·W projections (+ biases); returns [output, weights [heads, n, n]]. */
function attention(x, w, b = {}) {
  const n = x.shape[0],
    dk = D / HEADS;
  const project = (name) => {
    let y = matMul(x, w[name]);
    if (b[name]) y = add(y, b[name]);
    return transpose(reshape(y, [n, HEADS, dk]), [1, 0, 2]);
  };
  const [q, k, v] = ['wq', 'wk', 'wv'].map(project);
  const p = tf.softmax(mul(matMul(q, k, false, true), 1 / Math.sqrt(dk)));
  let y = matMul(reshape(transpose(matMul(p, v), [1, 0, 2]), [n, D]), w.wo);
  if (b.wo) y = add(y, b.wo);
  return [y, p];
}

function layerNorm(x, g, b, eps) {
  const { mean, variance } = tf.moments(x, -1, true);
  return add(mul(mul(sub(x, mean), tf.rsqrt(add(variance, eps))), g), b);
}

// erf is not a kernel of the wasm backend: Abramowitz & Stegun 7.1.26 (error below 1.5e-7).
function erf(x) {
  const a = tf.abs(x);
  const t = tf.div(1, add(mul(a, 0.3275911), 1));
  let poly = tf.scalar(1.061405429);
  for (const c of [-1.453152027, 1.421413741, -0.284496736, 0.254829592]) poly = add(mul(poly, t), c);
  const e = sub(1, mul(mul(poly, t), tf.exp(tf.neg(tf.square(a)))));
  return tf.where(tf.less(x, 0), tf.neg(e), e);
}

/** BERT's encoder with the checkpoint's weights (PyTorch [out, in] layout transposed to x·W). */
function loadBert() {
  const t = readSafetensors(join(dir, 'bert', 'model.safetensors'));
  const get = (name) => tensor(t[name]);
  const linear = (name) => ({ w: transpose(get(`${name}.weight`)), b: get(`${name}.bias`) });
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
    type: tf.slice(get('embeddings.token_type_embeddings.weight'), [0, 0], [1, D]),
    ln: [get('embeddings.LayerNorm.weight'), get('embeddings.LayerNorm.bias')],
  };
  return (ids) =>
    tf.tidy(() => {
      const n = ids.length;
      let x = add(
        add(tf.gather(emb.word, tf.tensor1d(ids, 'int32')), tf.slice(emb.position, [0, 0], [n, D])),
        emb.type,
      );
      x = layerNorm(x, ...emb.ln, 1e-12);
      let p;
      for (const L of layers) {
        const [a, weights] = attention(x, L.w, L.b);
        p = weights;
        x = layerNorm(add(x, a), ...L.ln1, 1e-12);
        const h = add(matMul(x, L.up.w), L.up.b);
        const gelu = mul(mul(h, add(erf(mul(h, Math.SQRT1_2)), 1)), 0.5);
        x = layerNorm(add(x, add(matMul(gelu, L.down.w), L.down.b)), ...L.ln2, 1e-12);
      }
      return sample(p.dataSync(), n, x.dataSync(), D);
    });
}

let bert = null;

serveEngine(({ work, n, rows, k, m }) => {
  if (work === 'mha') {
    const w = Object.fromEntries(
      Object.entries(readSafetensors(join(dir, 'mha.safetensors'))).map(([k, v]) => [k, tensor(v)]),
    );
    const x = tensor(inputs[`x${n}`]);
    return () =>
      tf.tidy(() => {
        const [y, p] = attention(x, w);
        return sample(p.dataSync(), n, y.dataSync(), D);
      });
  } else if (work === 'bert') {
    bert ??= loadBert();
    const ids = bertIds(n);
    return () => bert(ids);
  } else if (work === 'gemm') {
    const x = tensor(inputs[`a${rows}x${k}`]);
    const w = tensor(readSafetensors(join(dir, `gemm_${k}x${m}.safetensors`)).w);
    return () => tf.tidy(() => Array.from(tf.matMul(x, w).dataSync().subarray(0, m)));
  } else throw new Error(`TF.js has no ${work} workload here`);
});
