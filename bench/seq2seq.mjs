// Translation (section 11): an opus-mt-en-de-shaped MarianMTModel (bench/workloads.mjs) encodes a 64-token source,
// then writes 32 tokens greedily with every encoder, decoder and cross-attention map returned: AttnScope's
// generate({ source }) against onnxruntime-web running the same weights as transformers.js runs a translation (an
// encoder graph, the cross keys and values, a decoder graph with past keys and values; bench/peers/onnx_graphs.py).
import { faster, fmt, vsOrt } from './harness.mjs';
import { ATTNSCOPE_BUILDS as VARIANTS, prepareSeq2seq } from './processes.mjs';
import { SEQ2SEQ_SOURCE_N, SEQ2SEQ_TOKENS } from './workloads.mjs';

const REFERENCE = 'AttnScope wasm ×1';

/** Section 11 and its target: at least 1.5× onnxruntime-web at the same thread count. */
export async function translation({ engines, measure }) {
  prepareSeq2seq();
  const ours = VARIANTS.flatMap(({ name }) => [1, 2].map((t) => `AttnScope ${name} ×${t}`));
  const shown = [...ours, 'ORT-web ×1', 'ORT-web ×2'];
  const among = engines.filter((e) => shown.includes(e.name));
  const r = await measure(
    `translation n=${SEQ2SEQ_SOURCE_N} + ${SEQ2SEQ_TOKENS}`,
    { work: 'seq2seq', n: SEQ2SEQ_SOURCE_N, tokens: SEQ2SEQ_TOKENS },
    { rounds: 3, warmup: 1 },
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
  console.log('Targets:');
  for (const t of [1, 2])
    faster(`relaxed ×${t} vs ORT-web ×${t}, translation`, r[`AttnScope relaxed ×${t}`], r[`ORT-web ×${t}`], 1.5);
}
