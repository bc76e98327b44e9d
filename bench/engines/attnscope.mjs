// AttnScope's wasm build as a benchmark engine:
//   node bench/engines/attnscope.mjs <threads> <simd|relaxed-simd> <dir>
// The build is named without its -threads suffix; two or more threads select it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { createEngine } from '../../dist/node.js';
import { D, HEADS, SENTENCE, bertIds, readSafetensors, sample, serveEngine } from '../workloads.mjs';

const [threads, kind, dir] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
const engine = await createEngine({ threads, build: threads > 1 ? `${kind}-threads` : kind });
const inputs = readSafetensors(join(dir, 'inputs.safetensors'));
const mha = readSafetensors(join(dir, 'mha.safetensors'));
const files = (sub, names) => Object.fromEntries(names.map((f) => [f, readFileSync(join(sub, f))]));
let bert = null;
let layer = null;

serveEngine(
  async ({ work, n, rows, k, m }) => {
    if (work === 'mha') {
      // Weights held in the engine, as the peers hold theirs (initializers, tensors).
      layer ??= engine.multiHeadLayer(mha, { heads: HEADS });
      const x = inputs[`x${n}`];
      return () => {
        const r = layer.run(x);
        return sample(r.weights.data, n, r.output.data, D);
      };
    } else if (work === 'bert') {
      bert ??= await engine.loadModel({ files: files(join(dir, 'bert'), ['config.json', 'model.safetensors']) });
      const ids = bertIds(n);
      return () => {
        const r = bert.run(ids);
        return sample(r.attentions.subarray((r.shape[0] - 1) * r.shape[1] * n * n), n, r.hidden.data, D);
      };
    } else if (work === 'gemm') {
      const x = inputs[`a${rows}x${k}`];
      const dense = engine.linearLayer(readSafetensors(join(dir, `gemm_${k}x${m}.safetensors`)).w);
      return () => Array.from(dense.run(x).data.subarray(0, m));
    } else if (work === 'default') {
      const model = await engine.loadModel('default');
      return () => {
        const r = model.run(SENTENCE);
        return sample(r.attentions, r.shape[2], r.hidden.data, r.hidden.shape[1]);
      };
    } else throw new Error(`unknown work ${work}`);
  },
  {
    heap: () => ({ bytes: engine.memory().heapBytes }),
    // The micro-kernel's GFLOPS on one thread now (about 0.3 s): the GEMM rows compare against it.
    peak: () => ({ gflops: engine.kernelPeak() }),
  },
);
