// How the bench times engines side by side: each engine warms up on its own (V8 tiers wasm up
// lazily), then each round runs every engine once, in a new order; medians. A ratio between two
// engines is the median of their per-round ratios: a machine's speed drifts over minutes, and
// two calls in the same round see the same speed. Engines must agree numerically.
import { median } from './stats.mjs';

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
 * Sets `work` up on every engine that has it, runs interleaved rounds, checks agreement with
 * `reference` (an engine, or `{ sample }`: an engine's sample from an earlier measure; engines
 * whose sample is null are not compared). `alongside(e)`, when
 * given, runs right after each of e's timed calls, in the same rounds; what it returns
 * (anything; undefined is dropped) comes back per engine as `alongside`. `warm`, when given, then
 * times that many calls of each engine back to back ("warm": its caches, threads and allocations
 * as its own last call left them), one engine after another, then `alongside(e)` once more.
 * A job may time its own parts (workloads.mjs, serveEngine): `parts` has what each timed call reported.
 * Returns { [engine name]: { ms, runs, diff, sample, alongside, parts, warm: { ms, runs, alongside } } }.
 */
export async function measure(engines, work, { rounds, warmup = 3, alongside = null, reference, warm = 0 }) {
  const ready = [];
  for (const e of engines) if (!(await e.ask({ op: 'setup', ...work })).error) ready.push(e);
  const parts = new Map(ready.map((e) => [e, []]));
  const run = async (e, timed = false) => {
    const { ms, parts: p, error } = await e.ask({ op: 'run' });
    if (error) throw new Error(`${e.name}, ${JSON.stringify(work)}: ${error}`);
    if (timed && p) parts.get(e).push(p);
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
      times.get(e).push(await run(e, true));
      const x = await alongside?.(e);
      if (x !== undefined) {
        beside.get(e).push(x);
        await e.settle();
      }
    }
  const warmTimes = new Map();
  for (const e of warm ? ready : []) {
    const runs = [];
    for (let i = 0; i < warm; i++) {
      const { ms, error } = await e.ask({ op: 'run' });
      if (error) throw new Error(`${e.name}, ${JSON.stringify(work)}: ${error}`);
      runs.push(ms);
    }
    warmTimes.set(e, { ms: median(runs), runs, alongside: await alongside?.(e) });
    await e.settle();
  }
  const want = 'sample' in reference ? reference.sample : (await reference.ask({ op: 'sample' })).sample;
  const result = {};
  for (const e of ready) {
    const got = (await e.ask({ op: 'sample' })).sample;
    let diff = !got || !want ? 0 : got.length === want.length ? 0 : Infinity;
    for (let i = 0; got && want && i < want.length && diff < Infinity; i++)
      diff = Math.max(diff, Math.abs(got[i] - want[i]));
    result[e.name] = {
      ms: median(times.get(e)),
      runs: times.get(e),
      diff,
      sample: got,
      alongside: beside.get(e),
      parts: parts.get(e),
      warm: warmTimes.get(e),
    };
  }
  return result;
}

export const fmt = (ms) => (ms === undefined ? '—' : ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
/** How many times faster `a` ran than `b`: the median over rounds of b's time / a's time in that round. */
export const speedup = (a, b) => median(a.runs.map((ms, round) => b.runs[round] / ms));
export const ratio = (a, b) => (a && b ? `${speedup(a, b).toFixed(2)}×` : '—');
/**
 * Columns `wasm ×1 vs ORT ×1` … `relaxed ×2 vs ORT ×2` of a row of results: how many times faster each of
 * AttnScope's `builds` (ATTNSCOPE_BUILDS) is than ORT-web at the same thread count, paired by round.
 */
export const vsOrt = (r, builds) =>
  Object.fromEntries(
    builds.flatMap(({ name }) =>
      [1, 2].map((t) => [`${name} ×${t} vs ORT ×${t}`, ratio(r[`AttnScope ${name} ×${t}`], r[`ORT-web ×${t}`])]),
    ),
  );
/** The same for warm calls, which are not paired by round: the ratio of the medians. */
export const warmRatio = (a, b) => (a?.warm && b?.warm ? `${(b.warm.ms / a.warm.ms).toFixed(2)}×` : '—');

/** The targets' report: one line each, `met` or `MISS`. */
export const target = (what, ok) => console.log(`  ${ok ? 'met ' : 'MISS'}  ${what}`);
/** `a` at least `goal`× faster than `b`, paired by round; the ratio of the medians is printed too. */
export const faster = (what, a, b, goal) => {
  const x = speedup(a, b);
  target(`${what} ≥ ${goal}× (${x.toFixed(2)}×; medians' ratio ${(b.ms / a.ms).toFixed(2)}×)`, x >= goal);
};
