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
import { ROWS } from './decoder-rows.js';
import { BUILDS, engineFor } from './engines.js';

const reference = fileURLToPath(new URL('../reference/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'attnscope-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const IDS = Array.from({ length: 24 }, (_, i) => (i * 37 + 11) % 96);

type Answer = { logits: number[][]; generated: number[] };

/** For each request, llama.cpp's next-token logits after each id and `greedy` more tokens of its greedy choice. */
function llamaCpp(requests: Array<{ name: string; spec: DecoderSpec; ids: number[]; greedy?: number }>): Answer[] {
  const list = requests.map(({ name, spec, ids, greedy }) => {
    const file = join(dir, `${name.replace(/[^a-z0-9]+/gi, '-')}.gguf`);
    writeFileSync(file, decoderCheckpoint(spec).gguf());
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
