// Issue 21's sections, AttnScope's builds only (the peers are in section 1):
//   8. one-shot multiHeadAttention, weights passed on every call, against multiHeadLayer, which keeps
//      them packed in the engine: cold (interleaved) and warm (back to back); target within 10%;
//   9. multi-head attention at n = 2048 and 4096 with every weight returned, full and causal: GFLOPS on
//      the work needed, against the micro-kernel's peak measured right after each call; target ≥ 70%.
import { fmt, target } from './harness.mjs';
import { ATTNSCOPE_BUILDS as VARIANTS, peakAlongside } from './processes.mjs';
import { median } from './stats.mjs';
import { D, LONG_N, ONE_SHOT_N } from './workloads.mjs';

const REFERENCE = 'AttnScope wasm ×1';
const ours = (engines) => engines.filter((e) => e.name.startsWith('AttnScope'));

/** The layer's call right after an engine's one-shot call, in ms (a failed call stops the bench: a round without
 * it would pair the rounds' times wrongly). */
const layerAlongside = async (e) => {
  const { ms, error } = await e.ask({ op: 'layer' });
  if (error) throw new Error(`${e.name}, the layer beside the one-shot call: ${error}`);
  return ms;
};

/** Section 8 (see `attention` for the arguments). Each ratio pairs calls made a moment apart on one engine, this
 * VM's speed drifting by tens of percent within a minute: cold, the layer runs right after each interleaved one-shot
 * call (`alongside`), and the ratio is the median of the rounds' ratios; warm, blocks of one-shot calls back to back
 * alternate with blocks of layer calls (`warmPair`), and the ratio is the median of the blocks' ratios. */
export async function oneShot({ engines, measure }) {
  const attnscope = ours(engines);
  const rows = [];
  const misses = [];
  const ratios = (a, b) => median(a.map((x, i) => x / b[i]));
  for (const n of ONE_SHOT_N) {
    const once = await measure(
      `MHA one-shot n=${n}`,
      { work: 'mha-oneshot', n },
      { rounds: n >= 512 ? 7 : 15, warmup: 3, alongside: layerAlongside },
      attnscope,
      REFERENCE,
    );
    for (const e of attnscope) {
      const o = once[e.name];
      const warm = await e.ask({ op: 'warmPair', blocks: n >= 512 ? 5 : 9 });
      await e.settle();
      const cold = ratios(o.runs, o.alongside);
      const warmRatio = ratios(warm.oneShot, warm.layer);
      rows.push({
        n,
        engine: e.name,
        'layer cold': fmt(median(o.alongside)),
        'one-shot cold': fmt(o.ms),
        'cold one-shot / layer': `${cold.toFixed(2)}×`,
        'layer warm': fmt(median(warm.layer)),
        'one-shot warm': fmt(median(warm.oneShot)),
        'warm one-shot / layer': `${warmRatio.toFixed(2)}×`,
      });
      for (const [regime, r] of [
        ['cold', cold],
        ['warm', warmRatio],
      ])
        if (!(r <= 1.1)) misses.push(`n=${n} ${e.name} ${regime} ${r.toFixed(2)}×`);
    }
  }
  console.log(
    '\n8. One-shot engine.multiHeadAttention (weights passed on every call) against engine.multiHeadLayer ' +
      "(weights kept), d 768, 12 heads, weights returned (median ms; ratios: the median of paired calls' ratios; " +
      'cold: interleaved with the other builds, the layer right after the one-shot call; warm: back to back)',
  );
  console.table(rows);
  target(
    `one-shot within 10% of the layer, n ≥ 64, cold and warm, 1 and 2 threads${misses.length ? ` (over: ${misses.join('; ')})` : ''}`,
    misses.length === 0,
  );
}

/** FLOPs of multi-head attention on n tokens, d_model D: q·kᵀ and weights·v on the pairs needed, plus 4 projections. */
const flops = (n, causal) => {
  const pairs = causal ? (n * (n + 1)) / 2 : n * n;
  return 4 * pairs * D + 4 * 2 * n * D * D;
};

/** Section 9 (see `attention` for the arguments). */
export async function longInputs({ engines, measure }) {
  const attnscope = ours(engines);
  const rows = [];
  const shares = Object.fromEntries(VARIANTS.map(({ name }) => [name, []]));
  for (const n of LONG_N)
    for (const causal of [false, true]) {
      const r = await measure(
        `MHA n=${n}${causal ? ' causal' : ''}`,
        { work: 'mha', n, causal },
        { rounds: 5, warmup: 1, warm: 3, alongside: peakAlongside },
        attnscope,
        REFERENCE,
      );
      // The same calls writing into the caller's arrays, reused (options.into): no new arrays, no first touch.
      const into = await measure(
        `MHA n=${n}${causal ? ' causal' : ''} into`,
        { work: 'mha-into', n, causal },
        { rounds: 5, warmup: 1, warm: 3, alongside: peakAlongside },
        attnscope,
        REFERENCE,
      );
      for (const [results, arrays] of [
        [r, 'new'],
        [into, 'into'],
      ]) {
        const row = { n, mask: causal ? 'causal' : 'none', arrays, GFLOP: (flops(n, causal) / 1e9).toFixed(1) };
        for (const e of attnscope) {
          const gf = (ms) => flops(n, causal) / ms / 1e6;
          row[`${e.name} cold`] = gf(results[e.name].ms).toFixed(1);
          row[`${e.name} warm`] = gf(results[e.name].warm.ms).toFixed(1);
        }
        for (const { name } of VARIANTS) {
          // Cold: each call against the peak measured right after it (a machine's speed drifts over minutes), the
          // median over rounds; warm: the warm calls' median against the median of every peak of the row (one
          // measurement of 0.3 s after the warm calls alone is too noisy).
          const x = results[`AttnScope ${name} ×1`];
          const gflops = (ms) => flops(n, causal) / ms / 1e6;
          const cold = median(x.runs.map((ms, round) => gflops(ms) / x.alongside[round]));
          const peak = median([...x.alongside, x.warm.alongside]);
          const warm = gflops(x.warm.ms) / peak;
          row[`${name} ×1 peak`] = peak.toFixed(1);
          row[`${name} ×1 % of peak cold / warm`] = `${(cold * 100).toFixed(0)}% / ${(warm * 100).toFixed(0)}%`;
          shares[name].push({ what: `n=${n}${causal ? ' causal' : ''} ${arrays}`, arrays, cold, warm });
        }
        rows.push(row);
      }
    }
  console.log(
    '\n9. Multi-head attention on long inputs, d 768, 12 heads, every weight returned (multiHeadLayer): GFLOPS on ' +
      'the work needed (q·kᵀ and ·v on the pairs attended, plus the projections), and one thread against the ' +
      "micro-kernel's peak measured right after each call (cold: the median of each round's share; warm: against " +
      "the median peak, printed). arrays: new (each call returns new arrays) or into (the caller's two arrays, " +
      'reused: options.into)',
  );
  console.table(rows);
  for (const { name, build } of VARIANTS)
    for (const arrays of ['new', 'into']) {
      const these = shares[name].filter((x) => x.arrays === arrays);
      const worst = these.reduce((a, b) => (b.warm < a.warm ? b : a));
      target(
        `long inputs, ${build} ×1, ${arrays} arrays, warm: ≥ 70% of the micro-kernel peak (worst: ${worst.what}, ${(worst.warm * 100).toFixed(0)}%)`,
        worst.warm >= 0.7,
      );
      const coldWorst = these.reduce((a, b) => (b.cold < a.cold ? b : a));
      target(
        `long inputs, ${build} ×1, ${arrays} arrays, cold: ≥ 70% of the micro-kernel peak (worst: ${coldWorst.what}, ${(coldWorst.cold * 100).toFixed(0)}%)`,
        coldWorst.cold >= 0.7,
      );
    }
}
