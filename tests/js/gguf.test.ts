// GGUF, llama.cpp's file, read as the checkpoint it was converted from: each decoder row's GGUF twin (written as
// llama.cpp's converter writes it: Llama's q/k rows permuted, Gemma's norms as 1 + w, RoPE's factors as tensors)
// loads and runs as the Hugging Face checkpoint does, every map and logit; F16 and BF16 tensors as they hold; a
// split file from its parts in any order. (llama-cpp.test.ts holds the same files to llama.cpp itself.) A broken
// or foreign file is a clear error naming the file and what is wrong, and the engine goes on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Model } from '../../dist/node.js';
import { GGML, T, gguf } from '../llm/gguf.mjs';
import { type DecoderSpec, decoderCheckpoint, toBf16 } from '../llm/checkpoints.mjs';
import { QUANT, type QuantType, halfValue, quantizedTwins } from '../llm/quantize.mjs';
import { halfBits } from '../whisper.mjs';
import { ROWS } from './decoder-rows.js';
import { engineFor } from './engines.js';

const IDS = Array.from({ length: 24 }, (_, i) => (i * 37 + 11) % 96);

type Parts = ReturnType<ReturnType<typeof decoderCheckpoint>['ggufParts']>;
type Key = Parts[0][number];
type GgufTensor = Parts[1][number];

const worst = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  return w;
};

/** Every map and the logits of two models on the same ids, and how far apart they are. */
function apart(a: Model, b: Model, ids = IDS) {
  const [x, y] = [a.run(ids, { returnLogits: true }), b.run(ids, { returnLogits: true })];
  return { maps: worst(x.attentions, y.attentions), logits: worst(x.logits!.data, y.logits!.data) };
}

describe.each([
  { build: 'relaxed-simd-threads' as const, threads: 2 },
  { build: 'simd' as const, threads: 1 },
])('$build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it.each(Object.keys(ROWS))('%s: the GGUF twin runs as its checkpoint, every map and logit', async (name) => {
    const c = decoderCheckpoint(ROWS[name]);
    const hf = await engine.loadModel({ files: c.files });
    const g = await engine.loadModel({ files: { 'twin.gguf': c.gguf() } });
    // Mistral's GGUF says "llama": llama.cpp runs it as Llama, and so does AttnScope.
    expect(g.info.architecture).toBe(ROWS[name].arch === 'mistral' ? 'LlamaForCausalLM' : hf.info.architecture);
    for (const key of ['layers', 'heads', 'kvHeads', 'headDim', 'dModel', 'vocabSize', 'maxTokens'])
      expect(g.info[key as keyof typeof g.info], key).toEqual(hf.info[key as keyof typeof hf.info]);
    // The same float32 weights but for the converter's roundings (Gemma's 1 + w and folded query scale, Llama 3's
    // factors in float32): the same numbers to float32 rounding.
    const { maps, logits } = apart(g, hf);
    expect(maps).toBeLessThan(1e-5);
    expect(logits).toBeLessThan(1e-4);
    hf.dispose();
    g.dispose();
  });
});

// A quantized file is the model of its dequantized weights: the same file with each quantized tensor written as the
// float32 values ggml's dequantize_row_* gives (quantize.mjs, written from ggml-quants.c) must run the same, every map
// and logit, through both ways the GEMM reads quantized panels: two or more rows (a prompt, or a few tokens appended:
// dequantized a chunk at a time) and one (a decoding step: decoded in registers).
describe.each([
  { build: 'relaxed-simd-threads' as const, threads: 2 },
  { build: 'simd' as const, threads: 1 },
])('quantized GGUF, $build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  // K-quants take rows of 256 values: d 256, 4 heads of 64, an FFN of 512.
  const shape = { d: 256, heads: 4, kvHeads: 2, headDim: 64, ffn: 512, layers: 2 };
  const Q4_K_M = (name: string) => (/attn_v|ffn_down|token_embd|output\.weight/.test(name) ? 'Q6_K' : 'Q4_K');
  // [name, each tensor's type, the embedding's dtype, general.file_type (llama_ftype) and its name]
  const MIXES: Array<[string, (name: string) => QuantType, string, number, string]> = [
    ['Q8_0', () => 'Q8_0', 'q8_0', 7, 'Q8_0'],
    ['Q4_0', () => 'Q4_0', 'q4_0', 2, 'Q4_0'],
    ['Q4_K', () => 'Q4_K', 'q4_k', 14, 'Q4_K_S'],
    ['Q6_K', () => 'Q6_K', 'q6_k', 18, 'Q6_K'],
    ['Q4_K_M (Q4_K, with Q6_K for attn_v, ffn_down and the embedding)', Q4_K_M, 'q6_k', 15, 'Q4_K_M'],
  ];
  const ARCHS: DecoderSpec[] = [
    { arch: 'llama', ...shape, tied: false },
    { arch: 'gemma2', ...shape, window: 5, attnSoftcap: 20, finalSoftcap: 15, queryPreAttnScalar: 64 },
    { arch: 'qwen3', ...shape, tied: true },
  ];

  it.each(MIXES)(
    '%s: every map and logit as the dequantized weights give them',
    async (_, typeOf, dtype, type, name) => {
      for (const spec of ARCHS) {
        const [bare, tensors] = decoderCheckpoint(spec).ggufParts();
        const keys = [...bare, ['general.file_type', T.UINT32, type] as Key];
        const [quantized, dequantized] = quantizedTwins(tensors, typeOf);
        const before = engine.memory().allocatedBytes;
        const q = await engine.loadModel({ files: { 'q.gguf': gguf(keys, quantized) } });
        const held = engine.memory().allocatedBytes - before;
        const f = await engine.loadModel({ files: { 'f.gguf': gguf(keys, dequantized) } });
        expect(q.info.weightsDtype, spec.arch).toBe(dtype);
        expect(q.info.weights).toBe(name);
        // Held quantized: at most 10 bits a value (Q6_K's codes as bytes), against float32's 32.
        expect(held).toBeLessThan((engine.memory().allocatedBytes - before - held) / 2.5);
        // 24 tokens at once, then 1, 2 and 3: a decoding step's row counts.
        for (const ids of [IDS, IDS.slice(0, 1), IDS.slice(0, 2), IDS.slice(0, 3)]) {
          const { maps, logits } = apart(q, f, ids);
          expect(maps, `${spec.arch}, ${ids.length} tokens`).toBeLessThan(1e-5);
          expect(logits, `${spec.arch}, ${ids.length} tokens`).toBeLessThan(1e-4);
        }
        // Generation: each step one new row against the cache, the same tokens and maps.
        const greedy = { maxNewTokens: 6, temperature: 0, stopAtEos: false };
        const [a, b] = [await q.generate(IDS.slice(0, 5), greedy), await f.generate(IDS.slice(0, 5), greedy)];
        expect(a.ids).toEqual(b.ids);
        expect(worst(a.attentions!, b.attentions!)).toBeLessThan(1e-5);
        q.dispose();
        f.dispose();
      }
    },
  );
});

describe('GGUF files', () => {
  let engine: Engine;
  let working: Model;
  const llama = decoderCheckpoint({ arch: 'llama', layers: 3 });
  const [keys, tensors] = llama.ggufParts();
  beforeAll(async () => {
    engine = await engineFor('simd', 1);
    working = await engine.loadModel({ files: llama.files });
  });
  afterAll(() => engine.dispose());

  /** The twin with each matrix retyped. */
  const retyped = (type: number, convert: (data: Float32Array) => Float32Array | Uint16Array) =>
    tensors.map((t) => (t.dims.length === 2 ? { ...t, type, data: convert(t.data as Float32Array) } : t));

  it("Llama's q and k rows are put back as the converter found them: a file without its permutation differs", async () => {
    const wrong = decoderCheckpoint({ arch: 'llama', layers: 3, interleavedRope: true });
    const g = await engine.loadModel({ files: { 'unpermuted.gguf': wrong.gguf() } });
    const right = await engine.loadModel({ files: { 'twin.gguf': gguf(keys, tensors) } });
    expect(apart(right, working).maps).toBeLessThan(1e-5);
    expect(apart(g, working).maps).toBeGreaterThan(1e-2);
  });

  it('its own tokenizer: text runs as in the checkpoint with its tokenizer.json', async () => {
    const c = decoderCheckpoint({ arch: 'qwen3', tokenizer: true });
    const g = await engine.loadModel({ files: { 'qwen3.gguf': c.gguf() } });
    // The GGUF says llama-bpe: a word the vocabulary holds whole is one token (ignore_merges, as in Llama 3's
    // tokenizer.json and llama.cpp), where the test's tokenizer.json would merge "she" as "s" + "he".
    const json = JSON.parse(new TextDecoder().decode(c.files['tokenizer.json']));
    json.model.ignore_merges = true;
    const tokenizer = new TextEncoder().encode(JSON.stringify(json));
    const hf = await engine.loadModel({ files: { ...c.files, 'tokenizer.json': tokenizer } });
    for (const text of ['The cat sat on the mat.', "she's 3.14159 and\n\n  it was <|endoftext|> the end"]) {
      expect(g.tokenize(text)).toEqual(hf.tokenize(text));
      const [a, b] = [g.run(text), hf.run(text)];
      expect(a.tokens).toEqual(b.tokens);
      expect(worst(a.attentions, b.attentions)).toBeLessThan(1e-5);
    }
    expect(g.info.eosTokenIds).toEqual([319]);
    // An instruction model's end of turn ends a generation too, as in llama.cpp (Llama 3's <|eot_id|>).
    const [keys, tensors] = c.ggufParts();
    const chat = await engine.loadModel({
      files: { 'chat.gguf': gguf([...keys, ['tokenizer.ggml.eot_token_id', T.UINT32, 7]] as never, tensors) },
    });
    expect(chat.info.eosTokenIds).toEqual([319, 7]);
    expect(g.decode(g.tokenize('the cat').ids)).toBe('the cat');
  });

  it('BF16 tensors: the same model as the checkpoint that holds them', async () => {
    const c = decoderCheckpoint({ arch: 'llama', layers: 3, dtype: 'bf16' });
    const [k, t] = c.ggufParts();
    const bf16 = t.map((x) => (x.dims.length === 2 ? { ...x, data: toBf16(x.data as Float32Array) } : x));
    const g = await engine.loadModel({ files: { 'bf16.gguf': gguf(k, bf16) } });
    const hf = await engine.loadModel({ files: c.files });
    expect(g.info.weightsDtype).toBe('bf16');
    expect(g.info.weights).toBe('BF16'); // no general.file_type: as the embedding is stored
    const { maps, logits } = apart(g, hf);
    expect(maps).toBeLessThan(1e-6);
    expect(logits).toBeLessThan(1e-5);
  });

  it('F16 tensors: the model of their values, kept 16-bit', async () => {
    const half = retyped(GGML.F16, (d) => Uint16Array.from(d, halfBits));
    const widened = retyped(GGML.F32, (d) => Float32Array.from(d, (x) => halfValue(halfBits(x))));
    const g = await engine.loadModel({ files: { 'f16.gguf': gguf(keys, half) } });
    const f32 = await engine.loadModel({ files: { 'f32.gguf': gguf(keys, widened) } });
    expect(g.info.weightsDtype).toBe('f16');
    const { maps, logits } = apart(g, f32);
    expect(maps).toBeLessThan(1e-6);
    expect(logits).toBeLessThan(1e-5);
  });

  it('a split GGUF loads from its parts in any order; a missing part is named', async () => {
    const split = (no: number, count: number, own: GgufTensor[], withKeys: boolean) =>
      gguf(
        [
          ...(withKeys ? keys : []),
          ['split.no', T.UINT16, no] as Key,
          ['split.count', T.UINT16, count] as Key,
          ['split.tensors.count', T.INT32, tensors.length] as Key,
        ],
        own,
      );
    const half = Math.floor(tensors.length / 2);
    const files = {
      'twin-00002-of-00002.gguf': split(1, 2, tensors.slice(half), false),
      'twin-00001-of-00002.gguf': split(0, 2, tensors.slice(0, half), true),
    };
    const g = await engine.loadModel({ files });
    const whole = await engine.loadModel({ files: { 'twin.gguf': gguf(keys, tensors) } });
    expect(apart(g, whole)).toEqual({ maps: 0, logits: 0 });
    await expect(
      engine.loadModel({ files: { 'twin-00001-of-00002.gguf': files['twin-00001-of-00002.gguf'] } }),
    ).rejects.toThrow('twin-00001-of-00002.gguf: a split GGUF of 2 files, given 1 file (every part is needed, once)');
  });

  /** A GGUF as bytes, with a 64-bit little-endian value changed at the first place `find` occurs. */
  const bytes = gguf(keys, tensors);
  const patched = (at: number, write: (view: DataView) => void) => {
    const copy = bytes.slice();
    write(new DataView(copy.buffer, at));
    return copy;
  };
  const indexOf = (text: string) => {
    const needle = new TextEncoder().encode(text);
    outer: for (let i = 0; i < bytes.length - needle.length; i++) {
      for (let j = 0; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
      return i;
    }
    throw new Error(`${text} is not in the file`);
  };
  const layer = (t: GgufTensor) => t.name.startsWith('blk.');
  const BAD: Array<[string, () => Uint8Array, string | RegExp]> = [
    ['not a GGUF', () => new TextEncoder().encode('{"architectures": ["LlamaForCausalLM"]}'), 'not a GGUF file'],
    ['truncated', () => bytes.slice(0, Math.floor(bytes.length / 2)), /past the end of the data section .* truncated/],
    ['an unknown version', () => patched(4, (v) => v.setUint32(0, 7, true)), 'GGUF version 7 is not supported'],
    [
      'a key count the file cannot hold',
      () => patched(16, (v) => v.setBigUint64(0, 1n << 40n, true)),
      '1099511627776 metadata keys cannot fit in the file',
    ],
    [
      'a metadata string of absurd length',
      () => patched(indexOf('llama') - 8, (v) => v.setBigUint64(0, 1n << 50n, true)),
      /is 1125899906842624 bytes long, above the limit/,
    ],
    [
      'an unknown tensor type',
      () => gguf(keys, [{ ...tensors[0], type: 99 }, ...tensors.slice(1)]),
      'has ggml type 99, which ggml does not define',
    ],
    [
      'a quantized tensor whose scale is NaN',
      () => {
        const [q] = quantizedTwins(tensors, () => 'Q8_0');
        const i = q.findIndex((t) => t.type === QUANT.Q8_0.id);
        const blocks = (q[i].data as Uint8Array).slice();
        new DataView(blocks.buffer).setUint16(3 * QUANT.Q8_0.bytes, 0x7e00, true); // block 3's d
        return gguf(
          keys,
          q.map((t, j) => (j === i ? { ...t, data: blocks } : t)),
        );
      },
      /tensor "[a-z_.0-9]+" has a non-finite scale in block 3 \(Q8_0\)/,
    ],
    [
      'a quantized type AttnScope does not multiply',
      () => {
        const i = tensors.findIndex((t) => t.dims.length === 2);
        const count = tensors[i].dims[0] * tensors[i].dims[1];
        return gguf(keys, [
          ...tensors.slice(0, i),
          { ...tensors[i], type: GGML.Q5_0, data: new Uint8Array((count / 32) * 22) },
          ...tensors.slice(i + 1),
        ]);
      },
      /is Q5_0; AttnScope reads GGUF tensors in F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K/,
    ],
    [
      'a block count that contradicts the tensors',
      () =>
        gguf(
          keys.map((k) => (k[0] === 'llama.block_count' ? ([k[0], k[1], 2] as Key) : k)),
          tensors,
        ),
      /tensor "blk\.2\.[a-z_]+\.weight" is in block 2, but block_count is 2/,
    ],
    [
      'a block count with no tensors for its last block',
      () =>
        gguf(
          keys,
          tensors.filter((t) => !t.name.startsWith('blk.2.')),
        ),
      'block_count is 3, but the tensors are of 2 blocks',
    ],
    [
      'an architecture it does not run',
      () =>
        gguf(
          keys.map((k) => (k[0] === 'general.architecture' ? ([k[0], k[1], 'mamba'] as Key) : k)),
          tensors,
        ),
      'GGUF architecture "mamba" is not supported (supported: llama, qwen2, qwen3, gemma2, gemma3, phi3)',
    ],
    [
      'a tensor a Llama does not have',
      () => gguf(keys, [...tensors, { ...tensors.find(layer)!, name: 'blk.0.ssm_conv1d.weight' }]),
      'tensor "blk.0.ssm_conv1d.weight" is not one a llama model has',
    ],
  ];
  it.each(BAD)('%s: a clear error, and the engine goes on', async (_, make, message) => {
    await expect(engine.loadModel({ files: { 'broken.gguf': make() } })).rejects.toThrow(message);
    expect(working.run(IDS.slice(0, 4)).tokens.length).toBe(4);
  });
});
