// Translation (section 11): an opus-mt-en-de-shaped MarianMTModel (bench/workloads.mjs) encodes a 64-token source,
// then writes 32 tokens greedily with every encoder, decoder and cross-attention map returned: AttnScope's
// generate({ source }) against onnxruntime-web running the same weights as transformers.js runs a translation (an
// encoder graph, the cross keys and values, a decoder graph with past keys and values; bench/peers/onnx_graphs.py).
import { faster, fmt, vsOrt } from './harness.mjs';
import { ATTNSCOPE_BUILDS as VARIANTS, prepareSeq2seq } from './processes.mjs';
import { median } from './stats.mjs';
import { SEQ2SEQ_SOURCE_N, SEQ2SEQ_TOKENS, seq2seqWork } from './workloads.mjs';

const REFERENCE = 'AttnScope wasm ×1';
/** The engine whose process measures the floor's peak and read speed (bench/engines/attnscope.mjs: peak, bandwidth). */
const FLOOR_ENGINE = 'AttnScope relaxed ×1';

/** Section 11 and its target: at least 1.5× onnxruntime-web at the same thread count. */
export async function translation({ engines, measure }) {
  prepareSeq2seq();
  const { encodeFlops, stepBytes, screenedStepBytes } = seq2seqWork(SEQ2SEQ_SOURCE_N);
  const bytesOf = (name) => (name.startsWith('AttnScope') ? screenedStepBytes : stepBytes);
  const ours = VARIANTS.flatMap(({ name }) => [1, 2].map((t) => `AttnScope ${name} ×${t}`));
  const shown = [...ours, 'ORT-web ×1', 'ORT-web ×2'];
  const among = engines.filter((e) => shown.includes(e.name));
  // This machine's limits in the same rounds, after the relaxed ×1 engine's call: its micro-kernel's GFLOPS, and
  // its read speed (memcmp) from memory.
  const limits = (e) =>
    e.name === FLOOR_ENGINE
      ? Promise.all([e.ask({ op: 'peak' }), e.ask({ op: 'bandwidth' })]).then(([p, b]) => ({ ...p, ...b }))
      : undefined;
  const r = await measure(
    `translation n=${SEQ2SEQ_SOURCE_N} + ${SEQ2SEQ_TOKENS}`,
    { work: 'seq2seq', n: SEQ2SEQ_SOURCE_N, tokens: SEQ2SEQ_TOKENS },
    { rounds: 3, warmup: 1, alongside: limits },
    among,
    REFERENCE,
  );
  console.log(
    `\n11. Translation, opus-mt-en-de's shape (6 + 6 layers, d 512, 8 heads, 58,101 tokens): encode ` +
      `${SEQ2SEQ_SOURCE_N} tokens, then ${SEQ2SEQ_TOKENS} greedy tokens with every map (median ms)`,
  );
  console.table([
    {
      ...Object.fromEntries(shown.map((name) => [name, fmt(r[name]?.ms)])),
      ...vsOrt(r, VARIANTS),
    },
  ]);
  console.log(
    `\nIts parts (median ms): the encoder, the cross keys and values and the first token; then each later token, ` +
      `and the weights it reads per second: ${(stepBytes / 1e6).toFixed(0)} MB of float32 weights a token, or ` +
      `${(screenedStepBytes / 1e6).toFixed(0)} MB where the greedy step reads the head as 8-bit integers first ` +
      `(AttnScope)`,
  );
  const parts = (name, part) => median(r[name]?.parts.map((p) => p[part]) ?? []);
  console.table(
    Object.fromEntries(
      shown
        .filter((name) => r[name]?.parts.length)
        .map((name) => [
          name,
          {
            'encode + first token': fmt(parts(name, 'first')),
            'each later token': fmt(parts(name, 'step')),
            'MB a token': (bytesOf(name) / 1e6).toFixed(0),
            'GB/s': (bytesOf(name) / parts(name, 'step') / 1e6).toFixed(1),
          },
        ]),
    ),
  );
  // The floor: no float32 engine encodes faster than the micro-kernel's peak, nor writes a token faster than it can
  // read the step's weights (every one in float32, or the head as 8-bit integers first). The last token's own rows
  // are left out, so the floor is lower than any engine's time.
  const seen = r[FLOOR_ENGINE]?.alongside ?? [];
  if (seen.length && r['ORT-web ×1']) {
    const [gflops, read] = [median(seen.map((x) => x.gflops)), median(seen.map((x) => x.read))];
    const encode = encodeFlops / gflops / 1e6;
    const steps = (bytes) => (SEQ2SEQ_TOKENS * bytes) / read / 1e-3;
    const ort = r['ORT-web ×1'].ms;
    console.log(
      `A float32 engine on one thread, at this machine's peak (${gflops.toFixed(1)} GFLOPS, the micro-kernel) and ` +
        `read speed (${(read / 1e9).toFixed(1)} GB/s, memcmp), needs at least ${fmt(encode)} ms to encode, then ` +
        `${fmt(steps(stepBytes))} to read every weight for ${SEQ2SEQ_TOKENS} tokens, or ` +
        `${fmt(steps(screenedStepBytes))} with the head read as 8-bit integers: ${fmt(encode + steps(stepBytes))} or ` +
        `${fmt(encode + steps(screenedStepBytes))} ms, at most ${(ort / (encode + steps(stepBytes))).toFixed(2)}× or ` +
        `${(ort / (encode + steps(screenedStepBytes))).toFixed(2)}× ORT-web ×1's ${fmt(ort)} ms.`,
    );
  }
  console.log('Targets:');
  for (const { name } of VARIANTS)
    for (const t of [1, 2])
      faster(`${name} ×${t} vs ORT-web ×${t}, translation`, r[`AttnScope ${name} ×${t}`], r[`ORT-web ×${t}`], 1.5);
}
