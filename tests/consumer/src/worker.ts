// src/worker.ts: the engine computes in a Web Worker (a threaded engine blocks the thread it runs on)
import { createEngine, type EngineInfo } from 'attnscope';

/** What the worker sends the page: one n × n attention map, row-major. */
export interface AttentionMap {
  title: string;
  weights: Float32Array;
  n: number;
  info: EngineInfo;
}

const engine = await createEngine(); // threads where the page is cross-origin isolated; info().reason says why
const show = (title: string, weights: Float32Array, n: number) =>
  postMessage({ title, weights, n, info: engine.info() } satisfies AttentionMap);

// Attention over your own [n, d] tensors: here 12 tokens of 8 features each.
const n = 12;
const x = { data: Float32Array.from({ length: n * 8 }, (_, i) => Math.sin(i * 0.7)), shape: [n, 8] };
const { weights } = engine.attention(x, x, x, { causal: true }); // softmax(q kᵀ / √d + causal mask) v
show('causal self-attention, 12 tokens', weights.data, n);
