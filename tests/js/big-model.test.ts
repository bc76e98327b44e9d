// A model of bert-base-uncased's size (110M parameters, 440 MB in F32) loads and
// runs in the wasm heap, and its peak memory is what docs/models.md ("Memory") states; and everything runs the same
// past 2 GiB of heap.
import { describe, expect, it } from 'vitest';

import { type Engine, createEngine } from '../../dist/node.js';
import { bertCheckpoint } from '../safetensors.mjs';
import { decoderCheckpoint, realShapeCheckpoint } from '../llm/checkpoints.mjs';
import { T, gguf } from '../llm/gguf.mjs';
import { quantizedTwins } from '../llm/quantize.mjs';
import { type TensorType, q4KM, realShapeGguf } from '../llm/real-gguf.mjs';
import { engineFor } from './engines.js';
import { randn } from './reference.js';

it('loads and runs a bert-base-sized checkpoint within the heap limit', async () => {
  const { params, files } = bertCheckpoint();
  expect(params).toBeGreaterThan(109_000_000);
  const engine = await createEngine({ threads: 2 });
  const model = await engine.loadModel({ files });
  const loaded = engine.memory();
  const ids = Array.from({ length: 128 }, (_, i) => 1000 + i);
  const r = model.run(ids);
  expect(r.shape).toEqual([12, 12, 128, 128]);
  expect(r.attentions.every(Number.isFinite)).toBe(true);
  const peak = engine.memory().heapBytes;
  console.log(
    `bert-base-sized model: ${(params / 1e6).toFixed(1)}M parameters; wasm heap after load ${(loaded.heapBytes / 2 ** 20).toFixed(0)} MiB ` +
      `(${(loaded.allocatedBytes / 2 ** 20).toFixed(0)} MiB in use), after a 128-token run ${(peak / 2 ** 20).toFixed(0)} MiB`,
  );
  expect(peak).toBeLessThan(2 ** 31);
  engine.dispose();
}, 120_000);

// Language models in their real shapes, BF16 as the Hub ships them: the weights stay 16-bit in the heap, and the
// file is read tensor by tensor, never whole into the heap. docs/models.md's memory table comes from these lines.
it.each(['SmolLM2-135M', 'SmolLM2-360M', 'Qwen2.5-0.5B'] as const)(
  'loads and runs %s in its real shape within the heap limit',
  async (name) => {
    const { params, files } = realShapeCheckpoint(name);
    const engine = await createEngine({ threads: 2 });
    const model = await engine.loadModel({ files });
    const loaded = engine.memory();
    const r = model.run(
      Array.from({ length: 128 }, (_, i) => 1000 + i),
      { topK: 5 },
    );
    expect(r.shape).toEqual([model.info.layers, model.info.heads, 128, 128]);
    expect(r.predictions!.probs.every(Number.isFinite)).toBe(true);
    const peak = engine.memory().heapBytes;
    console.log(
      `${name}: ${(params / 1e6).toFixed(1)}M parameters in BF16; wasm heap after load ${(loaded.heapBytes / 2 ** 20).toFixed(0)} MiB ` +
        `(${(loaded.allocatedBytes / 2 ** 20).toFixed(0)} MiB in use), after a 128-token run ${(peak / 2 ** 20).toFixed(0)} MiB`,
    );
    expect(loaded.allocatedBytes).toBeLessThan(2.2 * params + 64 * 2 ** 20); // 2 bytes a weight, plus little
    expect(peak).toBeLessThan(2 ** 31);
    engine.dispose();
  },
  300_000,
);

// The 1-3B models people study, from GGUF files in their real shapes (random blocks: tests/llm/real-gguf.mjs), as
// people have them: quantized weights stay at the file's size in the heap (Q4_K's scales as bytes: 2.8% more), and a
// run with one layer's maps and a few generated tokens fit beside them. docs/models.md's memory table comes from these
// lines, with RUN_TOKENS=512 (the default, 32, keeps CI's time down).
const RUN_TOKENS = Number(process.env.RUN_TOKENS ?? 32);
it.each([
  ['Llama-3.2-1B', 'Q8_0', () => 'Q8_0', 7],
  ['Llama-3.2-1B', 'BF16', () => 'BF16', 32],
  ['Qwen3-1.7B', 'Q8_0', () => 'Q8_0', 7],
  ['Gemma-2-2B', 'Q4_K_M', q4KM(26), 15],
  ['Gemma-2-2B', 'Q8_0', () => 'Q8_0', 7],
] as const)(
  '%s in %s loads from its GGUF and runs within the heap',
  async (name, type, typeOf, fileType) => {
    const { parameters, bytes } = realShapeGguf(name, typeOf as (n: string) => TensorType, [
      ['general.file_type', T.UINT32, fileType],
    ]);
    const engine = await createEngine({ threads: 2 });
    const model = await engine.loadModel({ files: { [`${name}-${type}.gguf`]: bytes } });
    const loaded = engine.memory();
    expect(model.info.weights).toBe(type);
    expect(loaded.allocatedBytes).toBeLessThan(1.03 * bytes.length + 64 * 2 ** 20);
    const { layers, heads } = model.info;
    const ids = Array.from({ length: RUN_TOKENS }, (_, i) => 1000 + ((i * 7919) % 100000));
    const r = model.run(ids, { topK: 5, mapLayers: [layers - 1] });
    expect(r.shape).toEqual([1, heads, RUN_TOKENS, RUN_TOKENS]);
    expect(r.predictions!.probs.every(Number.isFinite)).toBe(true);
    const g = await model.generate(ids, { maxNewTokens: 4, temperature: 0, stopAtEos: false, attentions: false });
    expect(g.ids.length).toBe(RUN_TOKENS + 4);
    const peak = engine.memory().heapBytes;
    const gib = (x: number) => (x / 2 ** 30).toFixed(2);
    console.log(
      `${name} ${type}: ${(parameters / 1e9).toFixed(2)}B parameters, file ${gib(bytes.length)} GiB; heap after load ` +
        `${gib(loaded.heapBytes)} GiB (${gib(loaded.allocatedBytes)} GiB in use), after a ${RUN_TOKENS}-token run and 4 ` +
        `tokens ${gib(peak)} GiB`,
    );
    engine.dispose();
  },
  600_000,
);

// A 256k vocabulary (Gemma's) at every position: the top 5 are taken from the head's logits 64 MiB of rows at a time,
// never [n, vocab] at once, and are those of the whole logits.
it('takes the top 5 at every position a block of rows at a time, as from the whole logits', async () => {
  const vocab = 262144;
  const n = 200; // four blocks of 64 rows, the last of 8
  const { files } = decoderCheckpoint({ arch: 'llama', vocab, d: 32, maxPositions: 256 });
  const engine = await createEngine({ threads: 2 });
  try {
    const model = await engine.loadModel({ files });
    const ids = Array.from({ length: n }, (_, i) => (i * 7919) % vocab);
    const before = engine.memory().heapBytes;
    const blocks = model.run(ids, { topK: 5, mapLayers: [] });
    const grown = engine.memory().heapBytes - before;
    expect(grown).toBeLessThan(0.5 * 4 * n * vocab); // the whole logits would take 200 MiB
    const whole = model.run(ids, { topK: 5, mapLayers: [], returnLogits: true });
    expect(Array.from(blocks.predictions!.ids)).toEqual(Array.from(whole.predictions!.ids));
    expect(Array.from(blocks.predictions!.probs)).toEqual(Array.from(whole.predictions!.probs));
    // And the whole logits' top 5, read here.
    const logits = whole.logits!.data;
    for (const i of [0, 63, 64, 199]) {
      const row = Array.from(logits.subarray(i * vocab, (i + 1) * vocab));
      const top = row.map((_, t) => t).sort((a, b) => row[b]! - row[a]! || a - b);
      expect(Array.from(blocks.predictions!.ids.subarray(i * 5, i * 5 + 5))).toEqual(top.slice(0, 5));
    }
  } finally {
    engine.dispose();
  }
}, 120_000);

// Past 2 GiB: the heap's top half, where pointers read as negative 32-bit integers unless the glue and bindings take
// them unsigned. The heap is first filled past 2^31 with linear layers of 1 MiB each, held, so that what is freed
// between them leaves no hole above 1 MiB: every buffer the checks below allocate that is larger (a model's
// tensors, a run's maps, the tokenizer's tables, an attention call's inputs and outputs) lies above 2^31. Each result
// must equal the same call's on a fresh engine, bit for bit.
describe.each([
  { build: 'relaxed-simd-threads' as const, threads: 2 },
  { build: 'simd' as const, threads: 1 },
])('past 2 GiB of heap, $build build', ({ build, threads }) => {
  it('models, runs, text and attention give what they give below it', async () => {
    const spec = { arch: 'llama' as const, d: 256, heads: 4, kvHeads: 2, headDim: 64, ffn: 512, tokenizer: true };
    const c = decoderCheckpoint(spec);
    const [keys, tensors] = c.ggufParts();
    const [quantized] = quantizedTwins(tensors, (name) => (/ffn_down|attn_v/.test(name) ? 'Q6_K' : 'Q4_K'));
    const files = [c.files, { 'q.gguf': gguf(keys, quantized) }];
    const text = 'The cat sat on the mat, and then it went to sleep by the fire.';
    const q = randn([8, 512, 64], 1),
      k = randn([8, 512, 64], 2),
      v = randn([8, 512, 64], 3);
    const results = async (engine: Engine) => {
      const out = [];
      for (const f of files) {
        const model = await engine.loadModel({ files: f });
        const r = model.run(text, { returnLogits: true, topK: 5 });
        const g = await model.generate(text, { maxNewTokens: 8, temperature: 0, stopAtEos: false });
        out.push({
          tokens: model.tokenize(text),
          attentions: Array.from(r.attentions),
          logits: Array.from(r.logits!.data),
          generated: g.ids,
          text: g.text,
        });
        model.dispose();
      }
      const a = engine.attention(q, k, v, { causal: true });
      out.push({ output: Array.from(a.output.data), weights: Array.from(a.weights.data) });
      return out;
    };
    const below = await engineFor(build, threads);
    const expected = await results(below);
    below.dispose();

    const engine = await engineFor(build, threads);
    const ballast = [];
    const w = { data: new Float32Array(2 ** 18).fill(0.5), shape: [512, 512] }; // 1 MiB
    while (engine.memory().allocatedBytes < 2 ** 31 + 64 * 2 ** 20) ballast.push(engine.linearLayer(w));
    expect(engine.memory().heapBytes).toBeGreaterThan(2 ** 31);
    expect(await results(engine)).toEqual(expected);
    // The ballast's own layers, the first and the last, still multiply as they did.
    const x = { data: new Float32Array(512).fill(1), shape: [1, 512] };
    for (const layer of [ballast[0], ballast[ballast.length - 1]]) expect(layer.run(x).data[0]).toBe(256);
    engine.dispose();
  }, 300_000);
});
