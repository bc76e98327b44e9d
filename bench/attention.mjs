// Attention, an encoder, the default model and GEMM: AttnScope wasm (1 and 2 threads; the SIMD128
// build, and the relaxed-SIMD build with its fused multiply-add) against onnxruntime-web (wasm,
// SIMD, 1 and 2 threads), TensorFlow.js's wasm backend (XNNPACK, SIMD), and AttnScope native
// (-march=native: the ceiling), on the same weights (bench/workloads.mjs, bench/peers/onnx_graphs.py).
import { fmt, faster, ratio, speedup, target, warmRatio } from './harness.mjs';
import { ATTNSCOPE_BUILDS as VARIANTS, defaultModelDir, peakAlongside } from './processes.mjs';
import { median } from './stats.mjs';
import { BERT_N, GEMMS, MHA_N, SENTENCE } from './workloads.mjs';

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

/**
 * Sections 1-4 and their targets. `engines`: every engine process; `measure(work, options)` times
 * work on all of them and records their agreement with native ×1.
 */
export async function attention({ engines, measure }) {
  const names = engines.map((e) => e.name);
  // 1. Multi-head self-attention, d_model 768, 12 heads, projections and weights output.
  const mha = {};
  const heap = {};
  for (const n of MHA_N) {
    const rounds = n >= 2048 ? 3 : n >= 512 ? 9 : 25;
    mha[n] = await measure(
      `MHA n=${n}`,
      { work: 'mha', n },
      { rounds, warmup: n >= 2048 ? 2 : 3, warm: rounds, alongside: n === 128 || n === 512 ? peakAlongside : null },
    );
    heap[n] = (await engines[0].ask({ op: 'heap' })).bytes;
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
  console.log('Warm: each engine back to back after its own calls (median ms; ratios of the medians)');
  console.table(
    MHA_N.map((n) => {
      const r = mha[n];
      return {
        n,
        ...Object.fromEntries(names.map((name) => [name, fmt(r[name]?.warm?.ms)])),
        ...Object.fromEntries(
          ['ORT-web ×1', 'ORT-web ×2'].flatMap((peer) =>
            VARIANTS.map(({ name }) => [
              `${name} vs ${peer.replace('-web', '')}`,
              warmRatio(r[`AttnScope ${name} ${peer.slice(-2)}`], r[peer]),
            ]),
          ),
        ),
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
  // Three warm-up rounds: a two-thread engine's first runs are slower while V8 tiers up the code
  // its workers run.
  for (const n of BERT_N) bert[n] = await measure(`BERT n=${n}`, { work: 'bert', n }, { rounds: n >= 128 ? 7 : 9 });
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
  const def = await measure(
    'default model',
    { work: 'default', text: SENTENCE, models: defaultModelDir },
    { rounds: 40, warmup: 10 },
  );
  console.log('\n3. Embedded default model (USE lite), a 20-token sentence, all maps (median ms)');
  console.table([Object.fromEntries(names.map((name) => [name, fmt(def[name]?.ms)]))]);

  // 4. GEMM at transformer shapes, against each build's micro-kernel peak. The peak is measured
  // in the same rounds, right after each of that engine's GEMM calls: a machine's speed drifts
  // over minutes, and a ratio of two figures taken minutes apart measures the drift.
  const gemmRows = [];
  const peaks = Object.fromEntries(VARIANTS.map(({ name }) => [name, []]));
  for (const [rows, k, m] of GEMMS) {
    const r = await measure(
      `GEMM ${rows}×${k}·${k}×${m}`,
      { work: 'gemm', rows, k, m },
      { rounds: 12, warmup: 5, alongside: peakAlongside },
    );
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

  for (const { name, build } of VARIANTS) {
    console.log(`\nTargets, AttnScope's ${build} builds ("${name}"):`);
    const ours = (t) => `AttnScope ${name} ×${t}`;
    for (const n of [128, 512])
      for (const t of [1, 2])
        faster(`MHA n=${n}, cold: ${name} ×${t} vs ORT-web ×${t}`, mha[n][ours(t)], mha[n][`ORT-web ×${t}`], 1.5);
    // Warm, one thread: ≥ 1.5× ORT-web where ORT-web runs below the ceiling, else ≥ 90% of the
    // micro-kernel peak (FLOPs: q·kᵀ and ·v, 2·n²·d each, and the four projections, 2·n·d² each).
    for (const n of [128, 512]) {
      const [a, b] = [mha[n][ours(1)], mha[n]['ORT-web ×1']];
      const peak = median(a.alongside);
      const gflops = (ms) => (4 * n * n * 768 + 8 * n * 768 * 768) / ms / 1e6;
      const [share, peerShare] = [gflops(a.warm.ms) / peak, gflops(b.warm.ms) / peak];
      const x = b.warm.ms / a.warm.ms;
      target(
        `MHA n=${n}, warm: ${name} ×1 ≥ 1.5× ORT-web ×1 (${x.toFixed(2)}×), or ≥ 90% of the ${peak.toFixed(1)} ` +
          `GFLOPS peak where ORT-web runs at ≥ 70% of it too (AttnScope ${(share * 100).toFixed(0)}%, ORT-web ` +
          `${(peerShare * 100).toFixed(0)}%)`,
        x >= 1.5 || (peerShare >= 0.7 && share >= 0.9),
      );
    }
    for (const n of BERT_N)
      for (const t of [1, 2])
        faster(`BERT n=${n}: ${name} ×${t} vs ORT-web ×${t}`, bert[n][ours(t)], bert[n][`ORT-web ×${t}`], 1.5);
    for (const n of MHA_N)
      faster(`MHA n=${n}: ${name} ×1 vs TF.js wasm`, mha[n][ours(1)], mha[n]['TF.js wasm ×1'], 1.5);
    const share = Math.min(...gemmRows.map((r) => parseFloat(r[`${name} ×1 % of peak`])));
    target(`GEMM ≥ 60% of the micro-kernel peak (worst shape: ${share}%)`, share >= 60);
    faster(`BERT n=128: ${name} 2 threads vs 1`, bert[128][ours(2)], bert[128][ours(1)], 1.7);
    target(
      `default model, 20-token sentence, under 5 ms (${fmt(def[ours(2)].ms)} ms on 2 threads)`,
      def[ours(2)].ms < 5,
    );
  }
}
