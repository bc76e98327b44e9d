// ONNX Runtime Web (WebAssembly backend, SIMD) as a benchmark engine, on the graphs
// bench/peers/onnx_graphs.py built from the same weights: node bench/engines/ort.mjs <threads> <dir>
import { join } from 'node:path';
import * as ort from 'onnxruntime-web';

import { D, bertIds, readSafetensors, sample, serveEngine } from '../workloads.mjs';

const [threads, dir] = [Number(process.argv[2]), process.argv[3]];
ort.env.wasm.numThreads = threads;
ort.env.wasm.simd = true;
const inputs = readSafetensors(join(dir, 'inputs.safetensors'));
const sessions = {};
const session = async (name) => (sessions[name] ??= await ort.InferenceSession.create(join(dir, `${name}.onnx`)));

serveEngine(async ({ work, n, rows, k, m }) => {
  if (work === 'mha') {
    const s = await session('mha');
    const x = inputs[`x${n}`];
    const feeds = { X: new ort.Tensor('float32', x.data, x.shape) };
    return async () => {
      const r = await s.run(feeds);
      return sample(r.P.data, n, r.Y.data, D);
    };
  } else if (work === 'bert') {
    const s = await session('bert');
    const ids = BigInt64Array.from(bertIds(n), BigInt);
    const positions = BigInt64Array.from({ length: n }, (_, i) => BigInt(i));
    const feeds = { ids: new ort.Tensor('int64', ids, [n]), positions: new ort.Tensor('int64', positions, [n]) };
    return async () => {
      const r = await s.run(feeds);
      return sample(r.P11.data, n, r.hidden.data, D);
    };
  } else if (work === 'gemm') {
    const s = await session(`gemm_${k}x${m}`);
    const x = inputs[`a${rows}x${k}`];
    const feeds = { X: new ort.Tensor('float32', x.data, x.shape) };
    return async () => Array.from((await s.run(feeds)).Y.data.subarray(0, m));
  } else throw new Error(`onnxruntime-web has no ${work} workload here`);
});
