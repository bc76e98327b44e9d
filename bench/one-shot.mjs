// What a one-shot multiHeadAttention call pays for its weights, apart from the work: the call at n = 1
// (almost no work) against the layer that keeps its weights, and the floor of moving the same bytes
// (a JS copy of them).
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

/** Median ms of `f` and of `g` over `runs` rounds, calling them alternately after 10 unmeasured rounds,
 * and the median of their per-round ratio (a machine's speed drifts within seconds, and the two calls of a
 * round see the same speed). */
function alternate(f, g, runs = 41) {
  for (let i = 0; i < 10; i++) (f(), g());
  const a = [],
    b = [],
    ratio = [];
  const once = (h) => {
    const start = performance.now();
    h();
    return performance.now() - start;
  };
  for (let i = 0; i < runs; i++) {
    const x = once(f),
      y = once(g);
    (a.push(x), b.push(y), ratio.push(x / y));
  }
  const median = (t) => t.sort((p, q) => p - q)[runs >> 1];
  return [median(a), median(b), median(ratio)];
}

const bytes = 4 * 4 * D * D;
const all = random(bytes / 4, 9);
const into = new Float32Array(bytes / 4);
console.log(
  `${engine.info().build}, ${threads} thread(s); weights ${(bytes / 1e6).toFixed(1)} MB per call (median ms, calls alternating)`,
);
for (const n of [1, 64, 128, 256, 512]) {
  const x = { data: random(n * D, 1), shape: [n, D] };
  const [once, kept, ratio] = alternate(
    () => engine.multiHeadAttention(x, params, { heads: HEADS }),
    () => layer.run(x),
    n >= 256 ? 15 : 41,
  );
  console.log(
    `  n=${String(n).padStart(3)}  one-shot ${once.toFixed(2)}  layer ${kept.toFixed(2)}  ` +
      `one-shot / layer ${ratio.toFixed(2)}  difference ${(once - kept).toFixed(2)}`,
  );
}
const [copy] = alternate(
  () => into.set(all),
  () => {},
);
console.log(`  floor: a JS copy of the same bytes ${copy.toFixed(2)}`);
engine.dispose();
