// AttnScope's own speed, 1 and 2 threads side by side in one run:
//   - multi-head self-attention at d_model 768, 12 heads (projections dominate: GEMM throughput);
//   - the embedded default model on a typical sentence, all maps included;
//   - a model of bert-base-uncased's shape at n = 32 and n = 128, every layer's weights returned.
// Medians of repeated runs after a warm-up (V8 tiers wasm up lazily).
//
//   npm run bench          (after .ci/setup)
import { createEngine } from '../dist/node.js';
import { bertCheckpoint } from '../tests/checkpoints.mjs';

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}
function time(fn, reps) {
  for (let i = 0; i < Math.max(2, reps >> 2); i++) fn(); // warm-up
  const ms = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    fn();
    ms.push(performance.now() - t);
  }
  return median(ms);
}
function random(n, seed) {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) a[i] = ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32 - 0.5) * 0.2;
  return a;
}

const SENTENCE = 'The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat.';
const { files: bertFiles } = bertCheckpoint();
const rows = [];
const engines = {};
for (const threads of [1, 2]) engines[threads] = await createEngine({ threads });

for (const n of [16, 64, 128, 512]) {
  const d = 768;
  const x = { data: random(n * d, 1), shape: [n, d] };
  const w = (seed) => ({ data: random(d * d, seed), shape: [d, d] });
  const params = { wq: w(2), wk: w(3), wv: w(4), wo: w(5) };
  const flops = 8 * n * d * d + 4 * n * n * d;
  const row = { work: `MHA d=768 h=12 n=${n}` };
  for (const t of [1, 2]) {
    const ms = time(() => engines[t].multiHeadAttention(x, params, { heads: 12 }), n >= 512 ? 5 : 20);
    row[`${t} thread`] = `${ms.toFixed(2)} ms (${(flops / ms / 1e6).toFixed(1)} GFLOPS)`;
  }
  rows.push(row);
}
const models = {};
for (const t of [1, 2]) {
  models[t] = {
    default: await engines[t].loadModel('default'),
    bert: await engines[t].loadModel({ files: bertFiles }),
  };
}
const tokens = models[1].default.tokenize(SENTENCE).ids.length;
rows.push({
  work: `default model, ${tokens} tokens`,
  ...Object.fromEntries(
    [1, 2].map((t) => [`${t} thread`, `${time(() => models[t].default.run(SENTENCE), 50).toFixed(2)} ms`]),
  ),
});
for (const n of [32, 128]) {
  const ids = Array.from({ length: n }, (_, i) => 1000 + i);
  rows.push({
    work: `bert-base shape, n=${n}`,
    ...Object.fromEntries(
      [1, 2].map((t) => [`${t} thread`, `${time(() => models[t].bert.run(ids), n > 64 ? 3 : 8).toFixed(1)} ms`]),
    ),
  });
}
console.table(rows);
for (const e of Object.values(engines)) e.dispose();
