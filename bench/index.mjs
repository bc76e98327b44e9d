// AttnScope against its peers, side by side and interleaved in one run:
//   AttnScope wasm (1 and 2 threads; the SIMD128 build, and the relaxed-SIMD build with its fused
//   multiply-add), onnxruntime-web (wasm, SIMD, 1 and 2 threads),
//   TensorFlow.js's wasm backend (XNNPACK, SIMD), and AttnScope native (-march=native: the ceiling).
// Every engine runs in its own process (bench/engines/*.mjs, bench/native.cpp) on the same
// weights and inputs (bench/workloads.mjs writes them; bench/peers/onnx_graphs.py makes the
// ONNX graphs of the same weights). Each engine warms up on its own (V8 tiers wasm up lazily),
// then each round runs every engine once, in a new order; medians. A ratio between two engines is
// the median of their per-round ratios: this VM's speed drifts by up to 2× over minutes, and two
// calls in the same round see the same speed. Engines must agree numerically.
//
//   npm run bench            (after .ci/setup)
import {
  ATTNSCOPE_BUILDS as VARIANTS,
  EngineProcess,
  attnscopeEngines,
  defaultModelDir,
  nativeEngines,
  nodeEngine as node,
  prepare,
} from './processes.mjs';
import { median } from './stats.mjs';
import { BERT_N, GEMMS, MHA_N, SENTENCE } from './workloads.mjs';

prepare();

const engines = [
  ...attnscopeEngines(),
  new EngineProcess('ORT-web ×1', ...node('ort.mjs', 1)),
  new EngineProcess('ORT-web ×2', ...node('ort.mjs', 2)),
  new EngineProcess('TF.js wasm ×1', ...node('tfjs.mjs', 1)),
  ...nativeEngines(),
];
const reference = engines.find((e) => e.name === 'native ×1');

const WARMUP_MS = 400;

/** A new order every round (a fixed seed per round), so that no engine always follows the same one. */
function shuffled(list, seed) {
  const out = [...list];
  let s = (seed + 1) * 2654435761;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/**
 * Sets `work` up on every engine that has it, runs interleaved rounds, checks agreement.
 * `alongside(e)`, when given, runs right after each of e's timed calls, in the same rounds;
 * what it returns (numbers, or undefined) comes back per engine as `alongside`.
 */
async function measure(work, rounds, warmup = 3, alongside = null) {
  const ready = [];
  for (const e of engines) if (!(await e.ask({ op: 'setup', ...work })).error) ready.push(e);
  const run = async (e) => {
    const { ms, error } = await e.ask({ op: 'run' });
    if (error) throw new Error(`${e.name}, ${JSON.stringify(work)}: ${error}`);
    await e.settle(); // the next engine runs on quiet cores
    return ms;
  };
  // Warm-up, each engine on its own: at least `warmup` runs and WARMUP_MS of running, since
  // V8 tiers code up by how much of it has run, and small work needs many calls to get there.
  for (const e of ready)
    for (let runs = 0, spent = 0; runs < warmup || (spent < WARMUP_MS && runs < 1000); runs++) spent += await run(e);
  const times = new Map(ready.map((e) => [e, []]));
  const beside = new Map(ready.map((e) => [e, []]));
  for (let r = 0; r < rounds; r++)
    for (const e of shuffled(ready, r)) {
      times.get(e).push(await run(e));
      const x = await alongside?.(e);
      if (x !== undefined) {
        beside.get(e).push(x);
        await e.settle();
      }
    }
  const want = (await reference.ask({ op: 'sample' })).sample;
  const result = {};
  for (const e of ready) {
    const got = (await e.ask({ op: 'sample' })).sample;
    let diff = got.length === want.length ? 0 : Infinity;
    for (let i = 0; i < want.length && diff < Infinity; i++) diff = Math.max(diff, Math.abs(got[i] - want[i]));
    result[e.name] = { ms: median(times.get(e)), runs: times.get(e), diff, alongside: beside.get(e) };
  }
  return result;
}

const heapOf = async (e) => (await e.ask({ op: 'heap' })).bytes;
/** Columns `wasm vs ORT ×1`, `relaxed vs ORT ×1`, ...: how many times faster AttnScope is, same thread count. */
const vsPeers = (r, peers) =>
  Object.fromEntries(
    peers.flatMap((peer) =>
      VARIANTS.map(({ name }) => [
        `${name} vs ${peer.replace(' wasm', '').replace('-web', '')}`,
        ratio(r[`AttnScope ${name} ${peer.slice(-2)}`], r[peer]),
      ]),
    ),
  );
const fmt = (ms) => (ms === undefined ? '—' : ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
/** How many times faster `a` ran than `b`: the median over rounds of b's time / a's time in that round. */
const speedup = (a, b) => median(a.runs.map((ms, round) => b.runs[round] / ms));
const ratio = (a, b) => (a && b ? `${speedup(a, b).toFixed(2)}×` : '—');
const names = engines.map((e) => e.name);
const worstDiff = {};
const record = (label, r) => {
  worstDiff[label] = Math.max(...Object.values(r).map((x) => x.diff));
  return r;
};

// 1. Multi-head self-attention, d_model 768, 12 heads, projections and weights output.
const mha = {};
const heap = {};
for (const n of MHA_N) {
  mha[n] = record(
    `MHA n=${n}`,
    await measure({ work: 'mha', n }, n >= 2048 ? 3 : n >= 512 ? 9 : 25, n >= 2048 ? 2 : 3),
  );
  heap[n] = await heapOf(engines[0]);
}
console.log('\n1. Multi-head self-attention, d_model 768, 12 heads, with projections and weights (median ms)');
console.table(
  MHA_N.map((n) => {
    const r = mha[n];
    const t = (name) => r[name]?.ms;
    return {
      n,
      ...Object.fromEntries(names.map((name) => [name, fmt(t(name))])),
      ...vsPeers(r, ['ORT-web ×1', 'ORT-web ×2', 'TF.js wasm ×1']),
      'wasm heap MiB': (heap[n] / 2 ** 20).toFixed(0),
    };
  }),
);
// Time against n: the projections grow as n, the scores and weights as n².
console.log('Scaling (AttnScope wasm ×1): ms / n and ms / n² as n grows; the n² term takes over at large n');
for (const n of MHA_N) {
  const ms = mha[n]['AttnScope wasm ×1'].ms;
  console.log(
    `  n=${String(n).padStart(4)}  ${fmt(ms).padStart(8)} ms  ${((ms / n) * 1e3).toFixed(1).padStart(7)} µs/token  ${((ms / n / n) * 1e6).toFixed(1).padStart(8)} ns/n²`,
  );
}

// 2. A 12-layer BERT-base-shaped encoder, every layer's attention weights returned.
const bert = {};
// Three warm-up rounds: a two-thread engine's first runs are up to 1.5× slower (measured
// 650, 473, 440 ms at n = 128) while V8 tiers up the code its workers run.
for (const n of BERT_N) bert[n] = record(`BERT n=${n}`, await measure({ work: 'bert', n }, n >= 128 ? 7 : 9, 3));
console.log("\n2. 12-layer BERT-base-shaped encoder, every layer's weights (median ms)");
console.table(
  BERT_N.map((n) => {
    const r = bert[n];
    return {
      n,
      ...Object.fromEntries(names.map((name) => [name, fmt(r[name]?.ms)])),
      ...vsPeers(r, ['ORT-web ×1', 'ORT-web ×2']),
      ...Object.fromEntries(
        VARIANTS.map(({ name }) => [
          `${name} 2 threads vs 1`,
          ratio(r[`AttnScope ${name} ×2`], r[`AttnScope ${name} ×1`]),
        ]),
      ),
    };
  }),
);

// 3. The embedded default model on a typical sentence (AttnScope only: the peers have no graph of it here).
const def = record(
  'default model',
  await measure({ work: 'default', text: SENTENCE, models: defaultModelDir }, 40, 10),
);
console.log('\n3. Embedded default model (USE lite), a 20-token sentence, all maps (median ms)');
console.table([Object.fromEntries(names.map((name) => [name, fmt(def[name]?.ms)]))]);

// 4. GEMM at transformer shapes, against each build's micro-kernel peak. The peak is measured
// in the same rounds, right after each of that engine's GEMM calls: this VM's speed drifts
// by up to 2× over minutes, and a ratio of two figures taken minutes apart measures the drift.
const peakAlongside = (e) =>
  VARIANTS.some(({ name }) => e.name === `AttnScope ${name} ×1`)
    ? e.ask({ op: 'peak' }).then((r) => r.gflops)
    : undefined;
const gemmRows = [];
const peaks = Object.fromEntries(VARIANTS.map(({ name }) => [name, []]));
for (const [rows, k, m] of GEMMS) {
  const r = record(`GEMM ${rows}×${k}·${k}×${m}`, await measure({ work: 'gemm', rows, k, m }, 12, 5, peakAlongside));
  const flops = 2 * rows * k * m;
  const gf = (name) => (r[name] ? flops / r[name].ms / 1e6 : undefined);
  const peak = (name) => median(r[`AttnScope ${name} ×1`].alongside);
  for (const { name } of VARIANTS) peaks[name].push(peak(name));
  gemmRows.push({
    shape: `${rows}×${k} · ${k}×${m}`,
    ...Object.fromEntries(names.map((name) => [name, gf(name)?.toFixed(1) ?? '—'])),
    ...Object.fromEntries(
      VARIANTS.map(({ name }) => [
        `${name} ×1 % of peak`,
        `${((gf(`AttnScope ${name} ×1`) / peak(name)) * 100).toFixed(0)}%`,
      ]),
    ),
  });
}
console.log(
  '\n4. GEMM GFLOPS at transformer shapes, and AttnScope ×1 against its micro-kernel peak on one thread, measured ' +
    `in the same rounds (medians per shape: SIMD128 ${peaks.wasm.map((p) => p.toFixed(1)).join(', ')}; ` +
    `relaxed SIMD ${peaks.relaxed.map((p) => p.toFixed(1)).join(', ')} GFLOPS)`,
);
console.table(gemmRows);

console.log('\nAgreement with native ×1 (largest absolute difference in attention weights and outputs):');
for (const [label, diff] of Object.entries(worstDiff)) console.log(`  ${label.padEnd(24)} ${diff.toExponential(1)}`);
const disagree = Object.entries(worstDiff).filter(([, d]) => !(d < 1e-3));

const target = (what, ok) => console.log(`  ${ok ? 'met ' : 'MISS'}  ${what}`);
/** `a` at least `goal`× faster than `b`, paired by round; the ratio of the medians is printed too. */
const faster = (what, a, b, goal) => {
  const x = speedup(a, b);
  target(`${what} ≥ ${goal}× (${x.toFixed(2)}×; medians' ratio ${(b.ms / a.ms).toFixed(2)}×)`, x >= goal);
};
for (const { name, build } of VARIANTS) {
  console.log(`\nTargets, AttnScope's ${build} builds ("${name}"):`);
  const ours = (t) => `AttnScope ${name} ×${t}`;
  for (const n of [128, 512])
    for (const t of [1, 2])
      faster(`MHA n=${n}: ${name} ×${t} vs ORT-web ×${t}`, mha[n][ours(t)], mha[n][`ORT-web ×${t}`], 1.5);
  for (const n of BERT_N)
    for (const t of [1, 2])
      faster(`BERT n=${n}: ${name} ×${t} vs ORT-web ×${t}`, bert[n][ours(t)], bert[n][`ORT-web ×${t}`], 1.5);
  for (const n of MHA_N) faster(`MHA n=${n}: ${name} ×1 vs TF.js wasm`, mha[n][ours(1)], mha[n]['TF.js wasm ×1'], 1.5);
  const share = Math.min(...gemmRows.map((r) => parseFloat(r[`${name} ×1 % of peak`])));
  target(`GEMM ≥ 60% of the micro-kernel peak (worst shape: ${share}%)`, share >= 60);
  faster(`BERT n=128: ${name} 2 threads vs 1`, bert[128][ours(2)], bert[128][ours(1)], 1.7);
  target(`default model, 20-token sentence, under 5 ms (${fmt(def[ours(2)].ms)} ms on 2 threads)`, def[ours(2)].ms < 5);
}

for (const e of engines) e.quit();
if (disagree.length) {
  console.error(`\nEngines disagree: ${disagree.map(([l, d]) => `${l} (${d})`).join(', ')}`);
  process.exit(1);
}
