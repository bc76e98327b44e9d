// Decoders against llama.cpp, an implementation nobody here wrote: each architecture row as a small
// random checkpoint in the Hub's layout (which AttnScope loads) and its GGUF twin (which llama.cpp,
// through node-llama-cpp's prebuilt binary, loads), run on the same token ids. At every position the
// next-token probabilities agree within 1e-4 with the same five most likely ids, and greedy generation
// gives the same 32 tokens; AttnScope reading the GGUF file itself agrees as closely. A GGUF whose q/k
// rows miss the converter's permutation (interleaved RoPE instead of rotate-half) must fail the same
// comparison, and so must a Phi-3 GGUF that rotates the whole head where the checkpoint rotates half of it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine } from '../../dist/node.js';
import { type DecoderSpec, decoderCheckpoint } from '../llm/checkpoints.mjs';
import { gguf } from '../llm/gguf.mjs';
import { type QuantType, quantizedTwins } from '../llm/quantize.mjs';
import { ROWS } from './decoder-rows.js';
import { BUILDS, engineFor } from './engines.js';

const reference = fileURLToPath(new URL('../reference/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'attnscope-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const IDS = Array.from({ length: 24 }, (_, i) => (i * 37 + 11) % 96);

type Answer = { logits: number[][]; generated: number[] };

/**
 * For each request, llama.cpp's next-token logits after each id and `greedy` more tokens of its greedy choice: on the
 * spec's GGUF twin, or on the file `bytes`.
 */
function llamaCpp(
  requests: Array<{ name: string; spec?: DecoderSpec; bytes?: Uint8Array; ids: number[]; greedy?: number }>,
): Answer[] {
  const list = requests.map(({ name, spec, bytes, ids, greedy }) => {
    const file = join(dir, `${name.replace(/[^a-z0-9]+/gi, '-')}.gguf`);
    writeFileSync(file, bytes ?? decoderCheckpoint(spec!).gguf());
    return { file, ids, greedy };
  });
  const out = execFileSync(process.execPath, [join(reference, 'llamacpp.mjs')], {
    input: JSON.stringify(list),
    cwd: reference,
    maxBuffer: 256 << 20,
  });
  return JSON.parse(out.toString()) as Answer[];
}

function softmax(logits: ArrayLike<number>): number[] {
  const max = Math.max(...Array.from(logits));
  const e = Array.from(logits, (x) => Math.exp(x - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

const top5 = (p: number[]) =>
  p
    .map((x, i) => [x, i])
    .sort((a, b) => b[0] - a[0] || a[1] - b[1])
    .slice(0, 5)
    .map(([, i]) => i);

/** The largest probability difference and the positions whose five most likely ids differ. */
function agreement(logits: { data: Float32Array; shape: number[] }, reference: number[][]) {
  const [n, vocab] = logits.shape;
  let worst = 0;
  const differentTop5: number[] = [];
  for (let i = 0; i < n; i++) {
    const a = softmax(logits.data.subarray(i * vocab, (i + 1) * vocab));
    const b = softmax(reference[i]);
    for (let j = 0; j < vocab; j++) worst = Math.max(worst, Math.abs(a[j] - b[j]));
    if (top5(a).join() !== top5(b).join()) differentTop5.push(i);
  }
  return { worst, differentTop5 };
}

const NAMES = Object.keys(ROWS);
const WRONG: DecoderSpec = { arch: 'llama', tied: true };
const HALF_ROTARY: DecoderSpec = { arch: 'phi3', kvHeads: 4, partialRotary: 0.5 };
const answers = llamaCpp([
  ...NAMES.map((name) => ({ name, spec: ROWS[name], ids: IDS })),
  ...NAMES.map((name) => ({ name: `${name} greedy`, spec: ROWS[name], ids: IDS.slice(0, 8), greedy: 32 })),
  { name: 'wrong rope', spec: { ...WRONG, interleavedRope: true }, ids: IDS },
  { name: 'whole-head rope', spec: { ...HALF_ROTARY, ggufRotaryDims: 8 }, ids: IDS },
]);
// Quantized files (quantize.mjs: ggml's reference quantizers), each beside its dequantized twin: the same file with
// those tensors as the float32 values they stand for. On a quantized weight llama.cpp rounds each activation row to 8
// bits (blocks of 32, or 256 for K-quants) before multiplying, AttnScope does not: on the twin neither rounds anything.
const SHAPE = { d: 256, heads: 4, kvHeads: 2, headDim: 64, ffn: 512, layers: 2 };
const QUANTIZED_SPECS: DecoderSpec[] = [
  { arch: 'llama', ...SHAPE },
  { arch: 'gemma2', ...SHAPE, window: 5, attnSoftcap: 20, finalSoftcap: 15, queryPreAttnScalar: 64 },
];
const Q4_K_M = (name: string): QuantType => (/attn_v|ffn_down|token_embd|output\.weight/.test(name) ? 'Q6_K' : 'Q4_K');
const MIXES: Array<[string, (name: string) => QuantType]> = [
  ['Q8_0', () => 'Q8_0'],
  ['Q4_0', () => 'Q4_0'],
  ['Q4_K', () => 'Q4_K'],
  ['Q6_K', () => 'Q6_K'],
  ['Q4_K_M', Q4_K_M],
];
const QUANTIZED = QUANTIZED_SPECS.flatMap((spec) =>
  MIXES.map(([mix, typeOf]) => {
    const [keys, tensors] = decoderCheckpoint(spec).ggufParts();
    const [quantized, dequantized] = quantizedTwins(tensors, typeOf);
    return { name: `${spec.arch} ${mix}`, file: gguf(keys, quantized), twin: gguf(keys, dequantized) };
  }),
);
const quantizedAnswers = llamaCpp(
  QUANTIZED.flatMap(({ name, file, twin }) => [
    { name: `${name} quantized`, bytes: file, ids: IDS, greedy: 16 },
    { name: `${name} dequantized`, bytes: twin, ids: IDS },
  ]),
);

const fullLogits = Object.fromEntries(NAMES.map((name, i) => [name, answers[i]]));
const expected = Object.fromEntries(NAMES.map((name, i) => [name, answers[NAMES.length + i]]));
const wrongRope = answers[2 * NAMES.length];
const wholeHeadRope = answers[2 * NAMES.length + 1];

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it.each(Object.keys(ROWS))('%s: probabilities within 1e-4 of llama.cpp, the same top 5', async (name) => {
    const model = await engine.loadModel({ files: decoderCheckpoint(ROWS[name]).files });
    const r = model.run(IDS, { returnLogits: true });
    const { worst, differentTop5 } = agreement(r.logits!, fullLogits[name].logits);
    expect(worst).toBeLessThanOrEqual(1e-4);
    expect(differentTop5).toEqual([]);
    model.dispose();
  });

  it.each(Object.keys(ROWS))(
    '%s: AttnScope reading the GGUF llama.cpp read: within 1e-4, the same top 5',
    async (name) => {
      const model = await engine.loadModel({ files: { 'model.gguf': decoderCheckpoint(ROWS[name]).gguf() } });
      const { worst, differentTop5 } = agreement(
        model.run(IDS, { returnLogits: true }).logits!,
        fullLogits[name].logits,
      );
      expect(worst).toBeLessThanOrEqual(1e-4);
      expect(differentTop5).toEqual([]);
      model.dispose();
    },
  );

  it.each(Object.keys(ROWS))('%s: greedy generation of 32 tokens equals llama.cpp', async (name) => {
    const model = await engine.loadModel({ files: decoderCheckpoint(ROWS[name]).files });
    const g = await model.generate(IDS.slice(0, 8), { maxNewTokens: 32, temperature: 0, stopAtEos: false });
    expect(Array.from(g.ids.slice(8))).toEqual(expected[name].generated);
    model.dispose();
  });
});

describe.each(BUILDS)('quantized files, $build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it.each(QUANTIZED.map((q, i) => [q.name, i] as const))(
    '%s: llama.cpp reads it; AttnScope runs the model of its dequantized weights as llama.cpp does',
    async (_, i) => {
      const { file } = QUANTIZED[i];
      const [quantized, dequantized] = [quantizedAnswers[2 * i], quantizedAnswers[2 * i + 1]];
      const model = await engine.loadModel({ files: { 'model.gguf': file } });
      const r = model.run([...IDS, ...quantized.generated.slice(0, -1)], { returnLogits: true });
      const vocab = model.info.vocabSize;
      const mine = { data: r.logits!.data.subarray(0, IDS.length * vocab), shape: [IDS.length, vocab] };
      // llama.cpp on the float32 twin: no rounding of activations on either side.
      const exact = agreement(mine, dequantized.logits);
      expect(exact.worst).toBeLessThanOrEqual(1e-4);
      expect(exact.differentTop5).toEqual([]);
      // llama.cpp on the quantized file itself differs by its 8-bit activations only: by no more than twice what
      // they move llama.cpp's own probabilities (quantized file against its twin).
      const rounding = agreement(
        { data: Float32Array.from(quantized.logits.flat()), shape: mine.shape },
        dequantized.logits,
      );
      const against = agreement(mine, quantized.logits);
      expect(against.worst).toBeLessThanOrEqual(2 * rounding.worst + 1e-4);
      // Its greedy tokens, wherever AttnScope's margin between the first two is clear of that rounding.
      for (let t = 0; t < quantized.generated.length; t++) {
        const row = Array.from(r.logits!.data.subarray((IDS.length - 1 + t) * vocab, (IDS.length + t) * vocab));
        const p = softmax(row);
        const [first, second] = [...p].sort((a, b) => b - a);
        if (first - second > 4 * rounding.worst) expect(p.indexOf(first), `token ${t}`).toBe(quantized.generated[t]);
      }
      model.dispose();
    },
  );
});

describe('a deliberate mistake', () => {
  it('Llama with interleaved RoPE (q/k rows not permuted in the GGUF) fails the comparison', async () => {
    const engine = await engineFor('simd', 1);
    const model = await engine.loadModel({ files: decoderCheckpoint(WRONG).files });
    const { worst, differentTop5 } = agreement(model.run(IDS, { returnLogits: true }).logits!, wrongRope.logits);
    expect(worst).toBeGreaterThan(1e-2);
    expect(differentTop5.length).toBeGreaterThan(IDS.length / 2);
    engine.dispose();
  });

  it('Phi-3 with half its head rotary fails against a GGUF that rotates the whole head', async () => {
    const engine = await engineFor('simd', 1);
    const model = await engine.loadModel({ files: decoderCheckpoint(HALF_ROTARY).files });
    const { worst } = agreement(model.run(IDS, { returnLogits: true }).logits!, wholeHeadRope.logits);
    expect(worst).toBeGreaterThan(1e-2);
    engine.dispose();
  });
});
