// The 1-3B models from the GGUF files people have (section 14): a Llama-3.2-1B-shaped decoder in Q8_0 and Q4_K_M
// (random blocks in llama.cpp's layout: tests/llm/real-gguf.mjs), the same file read by AttnScope's relaxed build, by
// wllama (llama.cpp in wasm, SIMD128, in Chromium: bench/engines/wllama.mjs) and by llama.cpp native (node-llama-cpp's
// prebuilt CPU binary, int8 products on AVX2/AVX-512), and by AttnScope in Chromium as the page runs it (the browser
// build in a module Worker, the file a dropped File: bench/engines/attnscope-page.mjs), one thread count at a time:
//   prefill of 128 and 512 tokens: AttnScope with the last layer's every map and the top 5 after every position (the
//   page's run), the llama.cpps the last position's logits alone, no maps;
//   decode after 128 tokens, tokens per second, against this machine's read bandwidth over the file's bytes (the most
//   a step that reads every weight once could do).
// wllama is the peer (what runs a GGUF in a tab today); its prefill takes minutes at 512 tokens, so it is timed once
// per row, on quiet cores, and compared with AttnScope's median. llama.cpp native is the ceiling, not a peer: both
// llama.cpps round each activation row to 8 bits before each quantized product, which AttnScope, held to the
// dequantized weights' float64 model, does not.
import { statSync } from 'node:fs';

import { fmt, ratio, speedup, target } from './harness.mjs';
import { EngineProcess, nodeEngine, prepareGguf } from './processes.mjs';
import { median } from './stats.mjs';

const PREFILL_N = [128, 512];
const CONTEXT = 128;
const DECODED = 16;
/** AttnScope's two engines at a thread count, as the rows name them: in Node, then in the page's worker. */
const where = (threads) => [
  ['Node', `AttnScope relaxed ×${threads}`],
  ['page', `AttnScope page ×${threads}`],
];
/** How many times faster `a`'s median is than `b`'s (b ran once: nothing to pair by round). */
const medianRatio = (a, b) => (a && b ? `${(b.ms / a.ms).toFixed(2)}×` : '—');

export async function gguf({ measure }) {
  const files = await prepareGguf();
  const results = {};
  let bandwidth = [];
  for (const threads of [1, 2]) {
    const [[, ours], [, page]] = where(threads);
    const wllama = new EngineProcess(`wllama ×${threads}`, ...nodeEngine('wllama.mjs', threads));
    const among = [
      new EngineProcess(ours, ...nodeEngine('attnscope.mjs', threads, 'relaxed-simd')),
      new EngineProcess(page, ...nodeEngine('attnscope-page.mjs', threads)),
      new EngineProcess(`llama.cpp ×${threads}`, ...nodeEngine('llamacpp.mjs', threads)),
    ];
    const alongside = (e) => (e.name === ours && threads === 1 ? e.ask({ op: 'bandwidth' }) : undefined);
    for (const [type, file] of Object.entries(files)) {
      for (const n of PREFILL_N) {
        const work = { work: 'gguf-prefill', file, n };
        const label = `GGUF ${type} prefill n=${n} ×${threads}`;
        const r = await measure(label, work, { rounds: n >= 512 ? 2 : 3, warmup: 1 }, among, ours);
        const once = await measure(label, work, { rounds: 1, warmup: 0 }, [wllama], { sample: null });
        results[`${type} prefill ${n} ×${threads}`] = { ...r, ...once };
      }
      const r = await measure(
        `GGUF ${type} decode ×${threads}`,
        { work: 'gguf-decode', file, context: CONTEXT, tokens: DECODED },
        { rounds: 3, warmup: 1, alongside },
        [...among, wllama],
        ours,
      );
      bandwidth = bandwidth.concat(Object.values(r).flatMap((x) => x.alongside ?? []));
      results[`${type} decode ×${threads}`] = r;
    }
    await Promise.all([...among, wllama].map((e) => e.quit()));
  }
  const read = median(bandwidth.filter(Boolean).map((b) => b.read));
  const perSecond = (x) => (x ? 1000 / x.ms : undefined);
  console.log(
    `\n14. Llama-3.2-1B-shaped GGUF (random blocks): prefill with the last layer's maps and the top 5 after every ` +
      `position (median ms; wllama: one run); decode after ${CONTEXT} tokens (tokens/s, the median of ${DECODED} ` +
      `steps; wllama: their mean, as it reports them). Read bandwidth ` +
      `${(read / 1e9).toFixed(1)} GB/s (memcmp).`,
  );
  const rows = [];
  for (const type of Object.keys(files)) {
    const bytes = statSync(files[type]).size;
    for (const threads of [1, 2])
      for (const [place, us] of where(threads)) {
        const [them, wasm] = [`llama.cpp ×${threads}`, `wllama ×${threads}`];
        const row = { file: `${type} (${(bytes / 2 ** 30).toFixed(2)} GiB)`, threads, AttnScope: place };
        let diff = 0;
        for (const n of PREFILL_N) {
          const r = results[`${type} prefill ${n} ×${threads}`];
          diff = Math.max(diff, r[us]?.diff ?? NaN);
          Object.assign(row, {
            [`prefill ${n} AttnScope`]: fmt(r[us]?.ms),
            [`prefill ${n} wllama`]: fmt(r[wasm]?.ms),
            [`prefill ${n} vs wllama`]: medianRatio(r[us], r[wasm]),
            [`prefill ${n} llama.cpp`]: fmt(r[them]?.ms),
            [`prefill ${n} vs llama.cpp`]: ratio(r[us], r[them]),
          });
        }
        const d = results[`${type} decode ×${threads}`];
        Object.assign(row, {
          'decode AttnScope': perSecond(d[us])?.toFixed(2) ?? '—',
          'decode wllama': perSecond(d[wasm])?.toFixed(2) ?? '—',
          'decode vs wllama': ratio(d[us], d[wasm]),
          'decode llama.cpp': perSecond(d[them])?.toFixed(2) ?? '—',
          'decode vs llama.cpp': ratio(d[us], d[them]),
          'AttnScope % of read limit': `${((perSecond(d[us]) / (read / bytes)) * 100).toFixed(0)}%`,
          // The page against Node: the maps' last rows and the top 5 (prefill), the greedy tokens (decode)
          'max diff from Node': place === 'Node' ? '—' : Math.max(diff, d[us]?.diff ?? NaN).toExponential(1),
        });
        rows.push(row);
      }
  }
  console.table(rows);
  console.log('\nGGUF targets:');
  for (const type of Object.keys(files))
    for (const threads of [1, 2])
      for (const [place, us] of where(threads)) {
        const wasm = `wllama ×${threads}`;
        for (const n of PREFILL_N) {
          const r = results[`${type} prefill ${n} ×${threads}`];
          const x = r[us] && r[wasm] ? r[wasm].ms / r[us].ms : NaN;
          target(`${type} prefill ${n} ×${threads} (${place}) at ≥ 1.5× wllama (${x.toFixed(2)}×)`, x >= 1.5);
        }
        const d = results[`${type} decode ×${threads}`];
        const x = d[us] && d[wasm] ? speedup(d[us], d[wasm]) : NaN;
        target(`${type} decode ×${threads} (${place}) at ≥ 1.2× wllama (${x.toFixed(2)}×)`, x >= 1.2);
      }
  for (const type of Object.keys(files)) {
    const share = perSecond(results[`${type} decode ×1`][where(1)[0][1]]) / (read / statSync(files[type]).size);
    target(`${type} decode ×1 at ≥ 70% of the read-bandwidth limit (${(share * 100).toFixed(0)}%)`, share >= 0.7);
  }
}
