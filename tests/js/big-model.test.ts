// A model of bert-base-uncased's size (110M parameters, 440 MB in F32) loads and
// runs in the wasm heap, and its peak memory is what docs/models.md ("Memory") states; and everything runs the same
// past 2 GiB of heap.
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { type Engine, createEngine } from '../../dist/node.js';
import { bertCheckpoint } from '../safetensors.mjs';
import { decoderCheckpoint, realShapeCheckpoint } from '../llm/checkpoints.mjs';
import { T, gguf } from '../llm/gguf.mjs';
import { quantizedTwins } from '../llm/quantize.mjs';
import { type TensorType, q4KM, realShapeGguf } from '../llm/real-gguf.mjs';
import { sendFile, sha256InPieces, writeInPieces } from '../llm/write-file.mjs';
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

// A GGUF over 2 GiB as people have it: named by its path, and downloaded from the Hub (a loopback server in its URL
// layout, the file listed with its SHA-256 as an LFS file). Either way it is read a tensor at a time, never whole in
// memory beside the heap it loads into: the download is checked as it arrives, written to the cache, and read back
// from there, as is the next load's. Every file the loads opened is closed after them.
it('a GGUF over 2 GiB loads from its path and from the Hub, read in pieces, never whole in memory', async () => {
  const name = 'Llama-3.2-1B-BF16.gguf';
  const dir = mkdtempSync(join(tmpdir(), 'attnscope-big-'));
  const path = join(dir, name);
  const { size, sha256 } = (() => {
    const { bytes } = realShapeGguf('Llama-3.2-1B', () => 'BF16', [['general.file_type', T.UINT32, 32]]);
    writeInPieces(path, bytes);
    return { size: bytes.length, sha256: sha256InPieces(bytes) };
  })();
  expect(size).toBeGreaterThan(2 ** 31);
  const downloads: string[] = [];
  const server = createServer((req, res) => {
    if (req.url === '/api/models/meta/Llama-GGUF/revision/main?blobs=true') {
      const sibling = { rfilename: name, size, blobId: '0'.repeat(40), lfs: { sha256, size, pointerSize: 134 } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ siblings: [sibling] }));
      return;
    }
    if (req.url !== `/meta/Llama-GGUF/resolve/main/${name}`) {
      res.writeHead(404).end();
      return;
    }
    if (!sendFile(req, res, path, size)) downloads.push(req.url);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const cacheDir = process.env.ATTNSCOPE_CACHE_DIR;
  process.env.ATTNSCOPE_CACHE_DIR = join(dir, 'cache');
  // The files this process holds open under the test's folder (the file, the cache's copy) or as a download.
  const openFiles = () =>
    readdirSync('/proc/self/fd').filter((fd) => {
      const target = (() => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return ''; // closed since it was listed (the listing's own)
        }
      })();
      return target.startsWith(dir) || target.includes('.partial');
    });
  const engine = await createEngine({ threads: 2 });
  try {
    const ids = Array.from({ length: 16 }, (_, i) => 1000 + ((i * 7919) % 100000));
    const predict = (model: Awaited<ReturnType<Engine['loadModel']>>) => {
      const { predictions } = model.run(ids, { topK: 5, mapLayers: [] });
      model.dispose();
      return [Array.from(predictions!.ids), Array.from(predictions!.probs)];
    };
    const fromPath = predict(await engine.loadModel({ files: { [name]: path } }));

    // The memory the process's ArrayBuffers hold, every 64 MiB of the download: it stays near where it began.
    let first: number | undefined;
    let grew = 0;
    let sampled = 0;
    const fromHub = predict(
      await engine.loadModel({
        hub: 'meta/Llama-GGUF',
        file: name,
        baseUrl,
        onProgress: ({ loaded }) => {
          if (loaded < sampled + 2 ** 26 && loaded < size) return;
          sampled = loaded;
          const now = process.memoryUsage().arrayBuffers;
          first ??= now;
          grew = Math.max(grew, now - first);
        },
      }),
    );
    expect(downloads).toHaveLength(1);
    console.log(
      `${name} (${(size / 2 ** 30).toFixed(2)} GiB) from the Hub: the process's ArrayBuffers grew by ` +
        `${(grew / 2 ** 20).toFixed(0)} MiB at most while it downloaded`,
    );
    expect(grew).toBeLessThan(2 ** 28);
    expect(fromHub).toEqual(fromPath);

    const cached: boolean[] = [];
    const fromCache = predict(
      await engine.loadModel({ hub: 'meta/Llama-GGUF', file: name, baseUrl, onProgress: (p) => cached.push(p.cached) }),
    );
    expect(downloads).toHaveLength(1);
    expect(cached).toEqual([true]);
    expect(fromCache).toEqual(fromPath);
    expect(openFiles()).toEqual([]);
  } finally {
    engine.dispose();
    server.close();
    if (cacheDir === undefined) delete process.env.ATTNSCOPE_CACHE_DIR;
    else process.env.ATTNSCOPE_CACHE_DIR = cacheDir;
    rmSync(dir, { recursive: true, force: true });
  }
}, 600_000);

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
