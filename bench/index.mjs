// AttnScope against its peers, side by side and interleaved in one run (bench/harness.mjs):
//   attention  multi-head attention, a BERT-base encoder, the default model, GEMM (bench/attention.mjs)
//   oneshot    one-shot multiHeadAttention against multiHeadLayer, cold and warm (bench/one-shot-and-long.mjs)
//   long       multi-head attention at n = 2048 and 4096, full and causal, against the kernel's peak (same file)
//   llm        a SmolLM2-135M-shaped decoder: prefill, decode, typing (bench/language-model.mjs)
//   prefill    its prefill rows alone (section 5)
//   decode     its decode rows alone (section 6)
//   typing     its typing rows alone (section 7)
//   explain    the Why pane's score and logit at n = 128 (section 7b)
//   page       the demo in Chromium: long tasks while typing, panning and generating (bench/page.mjs, section 9)
//   blocks     every family on the one block, A/B against another checkout (bench/blocks.mjs, section 10)
//   translation  an opus-mt-en-de-shaped encoder-decoder: encode 64, write 32 with every map (bench/seq2seq.mjs, 11)
//   vision     ViT-B/16 at 224² and DINOv2-S/14 at 518², every map (bench/vision.mjs, 12)
//   speech     a whisper-tiny-shaped Whisper: a 30 s window, then 32 tokens with every map (bench/speech.mjs, 13)
//   gguf       a Llama-3.2-1B-shaped GGUF in Q8_0 and Q4_K_M against llama.cpp native (bench/gguf.mjs, 14)
// Every engine runs in its own process (bench/engines/*.mjs, bench/native.cpp) on the same
// weights and inputs (bench/workloads.mjs writes them; bench/peers/onnx_graphs.py makes the
// ONNX graphs of the same weights). Section 1's times are also drawn, time against n per engine,
// into docs/performance.svg (bench/plot.mjs).
//
//   npm run bench                 every section (after .ci/setup)
//   npm run bench -- llm          one section
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

import { attention } from './attention.mjs';
import { blocks } from './blocks.mjs';
import { gguf } from './gguf.mjs';
import { measure } from './harness.mjs';
import { languageModel, llmDecode, llmExplain, llmPrefill, llmTyping } from './language-model.mjs';
import { longInputs, oneShot } from './one-shot-and-long.mjs';
import { pageBench } from './page.mjs';
import { translation } from './seq2seq.mjs';
import { speech } from './speech.mjs';
import { vision } from './vision.mjs';
import { timePlot } from './plot.mjs';
import { EngineProcess, attnscopeEngines, nativeEngines, nodeEngine as node, prepare } from './processes.mjs';

const SECTIONS = {
  attention,
  oneshot: oneShot,
  long: longInputs,
  llm: languageModel,
  prefill: llmPrefill,
  decode: llmDecode,
  typing: llmTyping,
  explain: llmExplain,
  blocks,
  translation,
  speech,
};
/**
 * Sections that start engine processes of their own, a few at a time, and quit them: they run after the shared
 * engines have quit, so that no other engine's memory stays resident beside theirs.
 */
const OWN = { vision, gguf };
/** Sections that run on their own, without the engine processes. */
const ALONE = { page: pageBench };
const chosen = process.argv.slice(2);
const wanted = (name) => !chosen.length || chosen.includes(name);
for (const name of chosen)
  if (!(name in SECTIONS) && !(name in OWN) && !(name in ALONE))
    throw new Error(`bench: no section ${name}; the sections are ${[SECTIONS, OWN, ALONE].flatMap(Object.keys)}`);

/**
 * Sections that time AttnScope's wasm builds against ORT-web alone, on workloads they write themselves: run on their
 * own, they need neither the native build nor the shared workloads, and start neither TF.js nor the native engine.
 */
const WASM_AND_ORT = new Set(['translation', 'speech']);
const shared = Object.keys(SECTIONS).some(wanted);
const full = Object.keys(SECTIONS).some((name) => wanted(name) && !WASM_AND_ORT.has(name));
if (full) prepare();

const engines = shared
  ? [
      ...attnscopeEngines(),
      new EngineProcess('ORT-web ×1', ...node('ort.mjs', 1)),
      new EngineProcess('ORT-web ×2', ...node('ort.mjs', 2)),
      ...(full ? [new EngineProcess('TF.js wasm ×1', ...node('tfjs.mjs', 1)), ...nativeEngines()] : []),
    ]
  : [];
/** Each row's largest difference from its reference engine, for the agreement report. */
const worstDiff = {};
/** Section 1's results by n, for the plot. */
const mhaByN = {};

/**
 * Times `work` on `among` (default: every shared engine) and records its agreement with `reference`: an engine's name
 * among them, or `{ sample }` from an earlier measure.
 */
const measured = async (label, work, options, among = engines, reference = 'native ×1') => {
  const r = await measure(among, work, {
    ...options,
    reference: typeof reference === 'string' ? among.find((e) => e.name === reference) : reference,
  });
  worstDiff[label] = Math.max(worstDiff[label] ?? 0, ...Object.values(r).map((x) => x.diff));
  if (work.work === 'mha') mhaByN[work.n] = r;
  return r;
};

for (const [name, section] of Object.entries(SECTIONS)) if (wanted(name)) await section({ engines, measure: measured });
await Promise.all(engines.map((e) => e.quit()));
for (const [name, section] of Object.entries(OWN)) if (wanted(name)) await section({ measure: measured });
for (const [name, run] of Object.entries(ALONE)) if (wanted(name)) await run();

if (Object.keys(mhaByN).length) {
  const plot = fileURLToPath(new URL('../docs/performance.svg', import.meta.url));
  const ns = Object.keys(mhaByN).map(Number);
  writeFileSync(
    plot,
    timePlot({
      title: 'Multi-head self-attention (d_model 768, 12 heads): time against n',
      subtitle:
        `weights returned; median ms per call, log-log; npm run bench on ${new Date().toISOString().slice(0, 10)}, ` +
        `${availableParallelism()} cores, Node ${process.versions.node.split('.')[0]}`,
      xLabel: 'n (tokens)',
      yLabel: 'ms per call',
      series: engines.map((e) => ({ name: e.name, points: ns.map((n) => [n, mhaByN[n][e.name]?.ms]) })),
    }),
  );
  console.log(`
Time against n per engine (section 1): ${plot}`);
}

if (Object.keys(worstDiff).length)
  console.log('\nAgreement with the reference engine (largest absolute difference in attention weights and outputs):');
for (const [label, diff] of Object.entries(worstDiff)) console.log(`  ${label.padEnd(24)} ${diff.toExponential(1)}`);
const disagree = Object.entries(worstDiff).filter(([, d]) => !(d < 1e-3));
if (disagree.length) {
  console.error(`\nEngines disagree: ${disagree.map(([l, d]) => `${l} (${d})`).join(', ')}`);
  process.exit(1);
}
