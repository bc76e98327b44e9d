// Speech (section 13): an openai/whisper-tiny-shaped Whisper (bench/workloads.mjs) hears a whole 30 s window, then
// writes 32 tokens greedily with every decoder and cross-attention map returned: AttnScope's generate({ features })
// against onnxruntime-web running the same weights as transformers.js runs Whisper (an encoder graph on the log-mel
// features, the cross keys and values, a decoder graph with past keys and values; bench/peers/onnx_graphs.py). Both
// read the same log-mel features (AttnScope's), computed before the timing.
import { faster, fmt, vsOrt } from './harness.mjs';
import { ATTNSCOPE_BUILDS as VARIANTS, prepareSpeech } from './processes.mjs';
import { median } from './stats.mjs';
import { SPEECH_TOKENS, speechWork } from './workloads.mjs';

const REFERENCE = 'AttnScope wasm ×1';
const SECONDS = 30;

/** Section 13 and its target: at least 1.5× onnxruntime-web at the same thread count. */
export async function speech({ engines, measure }) {
  await prepareSpeech();
  const { stepBytes } = speechWork();
  const ours = VARIANTS.flatMap(({ name }) => [1, 2].map((t) => `AttnScope ${name} ×${t}`));
  const shown = [...ours, 'ORT-web ×1', 'ORT-web ×2'];
  const among = engines.filter((e) => shown.includes(e.name));
  const r = await measure(
    `speech 30 s + ${SPEECH_TOKENS}`,
    { work: 'speech', tokens: SPEECH_TOKENS },
    { rounds: 3, warmup: 1 },
    among,
    REFERENCE,
  );
  console.log(
    `\n13. Speech, whisper-tiny's shape (4 + 4 layers, d 384, 6 heads, 51,865 tokens): a 30 s window, then ` +
      `${SPEECH_TOKENS} greedy tokens with every decoder and cross map (median ms; real-time factor: ms ÷ 30 s)`,
  );
  console.table([
    {
      ...Object.fromEntries(shown.map((name) => [name, fmt(r[name]?.ms)])),
      ...vsOrt(r, VARIANTS),
    },
  ]);
  console.table(
    Object.fromEntries(
      shown
        .filter((name) => r[name])
        .map((name) => {
          const parts = (part) => median(r[name].parts.map((p) => p[part]));
          return [
            name,
            {
              'real-time factor': (r[name].ms / (SECONDS * 1000)).toFixed(3),
              'encode + prompt + first token': fmt(parts('first')),
              'each later token': fmt(parts('step')),
              'GB/s of weights a token': (stepBytes / parts('step') / 1e6).toFixed(1),
            },
          ];
        }),
    ),
  );
  console.log('Targets:');
  for (const { name } of VARIANTS)
    for (const t of [1, 2])
      faster(`${name} ×${t} vs ORT-web ×${t}, speech`, r[`AttnScope ${name} ×${t}`], r[`ORT-web ×${t}`], 1.5);
}
