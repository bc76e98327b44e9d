// What a one-shot multiHeadAttention call pays for its weights, apart from the work: the call at n = 1
// (almost no work) against the layer that keeps its weights, and the floor of moving the same bytes
// (a JS copy of them). See bench/README.md, "One-shot calls".
//   node bench/one-shot.mjs [threads] [simd|relaxed-simd]
import { createEngine } from '../dist/node.js';
import { random } from './workloads.mjs';

const threads = Number(process.argv[2] ?? 1);
const kind = process.argv[3] ?? 'simd';
const engine = await createEngine({ threads, build: threads > 1 ? `${kind}-threads` : kind });
const D = 768;
const HEADS = 12;
const params = Object.fromEntries(
  ['wq', 'wk', 'wv', 'wo'].map((k, i) => [k, { data: random(D * D, i + 2), shape: [D, D] }]),
);
const layer = engine.multiHeadLayer(params, { heads: HEADS });

/** Median ms of `f` over `runs` calls after 10 unmeasured ones. */
function time(f, runs = 41) {
  for (let i = 0; i < 10; i++) f();
  const t = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    f();
    t.push(performance.now() - start);
  }
  return t.sort((a, b) => a - b)[runs >> 1];
}

const bytes = 4 * 4 * D * D;
const all = new Float32Array(bytes / 4);
const into = new Float32Array(bytes / 4);
console.log(
  `${engine.info().build}, ${threads} thread(s); weights ${(bytes / 1e6).toFixed(1)} MB per call (median ms)`,
);
for (const n of [1, 64, 128]) {
  const x = { data: random(n * D, 1), shape: [n, D] };
  const once = time(() => engine.multiHeadAttention(x, params, { heads: HEADS }));
  const kept = time(() => layer.run(x));
  console.log(
    `  n=${String(n).padStart(3)}  one-shot ${once.toFixed(2)}  layer ${kept.toFixed(2)}  ` +
      `difference ${(once - kept).toFixed(2)} (${(bytes / (once - kept) / 1e6).toFixed(1)} GB/s of weights)`,
  );
}
console.log(`  floor: a JS copy of the same bytes ${time(() => into.set(all)).toFixed(2)}`);
engine.dispose();
