// Loading from the Hub over real HTTP: a loopback server in the Hub's URL layout
// (<base>/<id>/resolve/<revision>/<file>) serves tiny models, and some failures.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createEngine, type Engine, type HubProgress } from '../../dist/node.js';
import { goldenModelFiles, hubListing, TINY_BERT_VOCAB } from '../golden-models.mjs';
import { decoderCheckpoint, toBf16 } from '../llm/checkpoints.mjs';
import { GGML, gguf, T } from '../llm/gguf.mjs';
import { type QuantType, quantizedTwins } from '../llm/quantize.mjs';
import { halfBits } from '../whisper.mjs';
import { SEQ2SEQ_GOLDENS, seq2seqFiles } from '../seq2seq.mjs';
import { testImage, VISION_GOLDENS, visionFiles } from '../vision.mjs';

const read = goldenModelFiles;
const vocabTxt = new TextEncoder().encode(TINY_BERT_VOCAB.join('\n'));

// id → files; the server answers 404 for anything else.
const REPOS: Record<string, Record<string, Uint8Array>> = {
  'org/tiny-bert': { ...read('bert'), 'vocab.txt': vocabTxt },
  'tiny-bert-sharded': { ...read('bert-sharded'), 'vocab.txt': vocabTxt },
  'org/truncated': { ...read('bert'), 'vocab.txt': vocabTxt },
  'org/wrong-length': { ...read('bert'), 'vocab.txt': vocabTxt },
  'org/no-weights': { 'config.json': read('bert')['config.json'] },
  'org/wrong-checksum': { ...read('bert'), 'vocab.txt': vocabTxt },
  'org/short': { ...read('bert'), 'vocab.txt': vocabTxt },
  'org/changing': { ...read('bert'), 'vocab.txt': vocabTxt },
  'org/no-api': { ...read('bert'), 'vocab.txt': vocabTxt },
  'org/too-big': { ...read('bert'), 'vocab.txt': vocabTxt },
  // A decoder in the Hub's layout (a Llama with its tokenizer.json and generation_config.json), as SmolLM2 ships.
  'HuggingFaceTB/tiny-llama': {
    ...decoderCheckpoint({ arch: 'llama', tied: true, tokenizer: true }).files,
    'generation_config.json': new TextEncoder().encode('{"bos_token_id": 0, "eos_token_id": [319, 7]}'),
  },
};

// GGUF repositories as people publish them (a README beside the files): one file, and one split in two parts.
const qwen = decoderCheckpoint({ arch: 'qwen3', tokenizer: true });
const [ggufKeys, ggufTensors] = qwen.ggufParts();
const part = (no: number, tensors: typeof ggufTensors) =>
  gguf(
    [
      ...(no === 0 ? ggufKeys : []),
      ['split.no', T.UINT16, no],
      ['split.count', T.UINT16, 2],
      ['split.tensors.count', T.INT32, ggufTensors.length],
    ] as never,
    tensors,
  );
const half = ggufTensors.length >> 1;
REPOS['someone/tiny-qwen3-GGUF'] = {
  'README.md': new TextEncoder().encode('# tiny-qwen3 GGUF\n'),
  'tiny-qwen3-f32.gguf': qwen.gguf(),
  'tiny-qwen3-f32-00001-of-00002.gguf': part(0, ggufTensors.slice(0, half)),
  'tiny-qwen3-f32-00002-of-00002.gguf': part(1, ggufTensors.slice(half)),
};

// Each tensor type a GGUF may hold, and Phi-3's stacked q, k, v and gate, up (packed as separate matrices), for what
// a plan says their weights take of the heap. K-quants take rows of 256 values.
const kShape = { d: 256, heads: 4, kvHeads: 2, headDim: 64, ffn: 512, layers: 2 };
const quantized = (spec: Parameters<typeof decoderCheckpoint>[0], typeOf: (name: string) => QuantType) => {
  const [keys, tensors] = decoderCheckpoint(spec).ggufParts();
  return gguf(keys, quantizedTwins(tensors, typeOf)[0]);
};
const sixteen = (arch: 'qwen3' | 'llama', type: number) => {
  const [keys, tensors] = decoderCheckpoint({ arch, ...kShape }).ggufParts();
  const bits = (data: Float32Array) => (type === GGML.BF16 ? toBf16(data) : Uint16Array.from(data, halfBits));
  return gguf(
    keys,
    tensors.map((t) => (t.dims.length === 2 ? { ...t, type, data: bits(t.data as Float32Array) } : t)),
  );
};
const Q4_K_M = (name: string): QuantType => (/attn_v|ffn_down|token_embd|output\.weight/.test(name) ? 'Q6_K' : 'Q4_K');
REPOS['someone/every-type-GGUF'] = {
  'llama-Q8_0.gguf': quantized({ arch: 'llama', ...kShape, tied: false }, () => 'Q8_0'),
  'llama-Q4_0.gguf': quantized({ arch: 'llama', ...kShape }, () => 'Q4_0'),
  'qwen3-Q4_K.gguf': quantized({ arch: 'qwen3', ...kShape, tied: true }, () => 'Q4_K'),
  'qwen3-Q6_K.gguf': quantized({ arch: 'qwen3', ...kShape, tied: true }, () => 'Q6_K'),
  'gemma2-Q4_K_M.gguf': quantized({ arch: 'gemma2', ...kShape, window: 5, queryPreAttnScalar: 64 }, Q4_K_M),
  'qwen3-BF16.gguf': sixteen('qwen3', GGML.BF16),
  'llama-F16.gguf': sixteen('llama', GGML.F16),
  'phi3-F32.gguf': decoderCheckpoint({ arch: 'phi3', kvHeads: 1, ffn: 52 }).gguf(),
};

// A Marian translation model as Helsinki-NLP's repositories lay it out: config.json, the weights, two SentencePiece
// models (a small unigram model spm_train wrote for the tokenizer fuzzer's seeds, its first byte the fuzzer's case),
// vocab.json, tokenizer_config.json and generation_config.json.
const marianGolden = SEQ2SEQ_GOLDENS.find((g) => (g.config.architectures as string[])[0] === 'MarianMTModel')!;
const spm = new Uint8Array(readFileSync(new URL('../fuzz/corpus/tokenizers/marian_spm', import.meta.url))).subarray(1);
const json = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
REPOS['Helsinki-NLP/opus-mt-tiny'] = {
  ...seq2seqFiles(marianGolden),
  'source.spm': spm,
  'target.spm': spm,
  'vocab.json': json({ '</s>': 0, '<unk>': 1, '\u2581the': 2, '\u2581a': 3, e: 4, '<pad>': 49 }),
  'tokenizer_config.json': json({ unk_token: '<unk>', eos_token: '</s>', pad_token: '<pad>' }),
  'generation_config.json': json({ num_beams: 4, max_length: 12, bad_words_ids: [[49]], decoder_start_token_id: 49 }),
};

// DINOv2 with registers as facebook/dinov2-with-registers-small lays it out: config.json, preprocessor_config.json
// (BitImageProcessor) and the weights.
const dinov2 = VISION_GOLDENS.find((g) => g.name === 'Dinov2WithRegistersModel')!;
REPOS['facebook/dinov2-with-registers-tiny'] = visionFiles(dinov2, {
  image_processor_type: 'BitImageProcessor',
  size: { shortest_edge: 64 },
  resample: 3,
  do_center_crop: true,
  crop_size: { height: 56, width: 56 },
  image_mean: [0.485, 0.456, 0.406],
  image_std: [0.229, 0.224, 0.225],
});

// A body that differs from what the list promises: one byte flipped, or cut to half with a matching content-length.
function served(id: string, name: string, body: Uint8Array): Uint8Array {
  if (id === 'org/wrong-checksum' && name === 'model.safetensors') {
    const copy = body.slice();
    copy[copy.length - 1] ^= 1;
    return copy;
  }
  if (id === 'org/short' && name === 'model.safetensors') return body.subarray(0, body.length >> 1);
  return body;
}

// Files listed at a size other than their bytes': org/too-big's weights at 5 GB (the bytes served are a tiny model's);
// a GGUF written as its header alone, at the size its tensors make (served as the header, then zeros).
const CLAIMED: Record<string, Record<string, number>> = { 'org/too-big': { 'model.safetensors': 5e9 } };

// The Hub's file list.
function listing(id: string, files: Record<string, Uint8Array>): string {
  const list = JSON.parse(hubListing(files));
  for (const sibling of list.siblings) {
    const size = CLAIMED[id]?.[sibling.rfilename];
    if (size !== undefined) sibling.size = size;
    if (size !== undefined && sibling.lfs) sibling.lfs.size = size;
  }
  return JSON.stringify(list);
}

let offline = false; // every connection is refused, as when the network is down

let server: Server;
let base: string;
const requests: string[] = [];

beforeAll(async () => {
  process.env.ATTNSCOPE_CACHE_DIR = mkdtempSync(join(tmpdir(), 'attnscope-cache-'));
  server = createServer((req, res) => {
    if (offline) {
      req.socket.destroy();
      return;
    }
    requests.push(req.headers.range ? `${req.url!} (${req.headers.range})` : req.url!);
    const api = /^\/api\/models\/(.+)\/revision\/main\?blobs=true$/.exec(req.url!);
    if (api) {
      const files = api[1] === 'org/no-api' ? undefined : REPOS[api[1]];
      if (files) res.writeHead(200, { 'content-type': 'application/json' }).end(listing(api[1], files));
      else res.writeHead(404).end('{"error":"Repository not found"}');
      return;
    }
    const m = /^\/(.+)\/resolve\/main\/([^/]+)$/.exec(req.url!);
    const body = m && REPOS[m[1]]?.[m[2]] && served(m[1], m[2], REPOS[m[1]][m[2]]);
    if (!m || !body) {
      res.writeHead(404).end('Entry not found');
      return;
    }
    if (m[1] === 'org/truncated' && m[2] === 'model.safetensors') {
      res.writeHead(200, { 'content-length': body.length });
      res.write(body.subarray(0, body.length >> 1));
      setTimeout(() => res.destroy(), 20); // the connection drops mid-file
      return;
    }
    if (m[1] === 'org/wrong-length' && m[2] === 'model.safetensors') {
      res.writeHead(200, { 'content-length': body.length + 100, connection: 'close' });
      res.end(body);
      return;
    }
    // A range (a GGUF's header read before its download), of the file or of one listed larger than its bytes.
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (range) {
      const size = CLAIMED[m[1]]?.[m[2]] ?? body.length;
      const [from, to] = [Number(range[1]), Math.min(Number(range[2]), size - 1)];
      const part = new Uint8Array(to + 1 - from);
      part.set(body.subarray(from, to + 1));
      res.writeHead(206, { 'content-length': part.length, 'content-range': `bytes ${from}-${to}/${size}` }).end(part);
      return;
    }
    res.writeHead(200, { 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => {
  server.close();
  rmSync(process.env.ATTNSCOPE_CACHE_DIR!, { recursive: true, force: true });
});

describe('loadModel({ hub })', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await createEngine({ threads: 2 });
  });
  afterAll(() => engine.dispose());

  it('downloads config, tokenizer and weights over HTTP, reporting progress, then runs', async () => {
    const progress: HubProgress[] = [];
    const model = await engine.loadModel({ hub: 'org/tiny-bert', baseUrl: base, onProgress: (p) => progress.push(p) });
    const files = new Set(progress.map((p) => p.file));
    expect([...files]).toEqual(['config.json', 'vocab.txt', 'model.safetensors']);
    const last = progress.filter((p) => p.file === 'model.safetensors').at(-1)!;
    expect(last).toMatchObject({ cached: false, total: REPOS['org/tiny-bert']['model.safetensors'].length });
    expect(last.loaded).toBe(last.total);
    expect(requests[0]).toBe('/api/models/org/tiny-bert/revision/main?blobs=true');
    // The list says which files exist: nothing else is asked for.
    expect(requests.filter((u) => u.includes('/resolve/'))).toEqual(
      ['config.json', 'vocab.txt', 'model.safetensors'].map((f) => `/org/tiny-bert/resolve/main/${f}`),
    );
    const r = model.run('The cat sat.');
    expect(r.tokens).toEqual(['[CLS]', 'the', 'cat', 'sat', '.', '[SEP]']);
    const local = await engine.loadModel({ files: { ...REPOS['org/tiny-bert'] } });
    expect(local.run('The cat sat.').attentions).toEqual(r.attentions);
  });

  it('downloads a decoder with its tokenizer.json and generation_config.json, then predicts and generates', async () => {
    const progress: HubProgress[] = [];
    const id = 'HuggingFaceTB/tiny-llama';
    const model = await engine.loadModel({ hub: id, baseUrl: base, onProgress: (p) => progress.push(p) });
    expect([...new Set(progress.map((p) => p.file))]).toEqual([
      'config.json',
      'tokenizer.json',
      'generation_config.json',
      'model.safetensors',
    ]);
    expect(model.info).toMatchObject({ architecture: 'LlamaForCausalLM', languageModel: true, eosTokenIds: [319, 7] });
    const r = model.run('the cat sat on the mat', { topK: 3 });
    expect(r.tokens.slice(0, 3)).toEqual(['the', 'Ġcat', 'Ġsat']);
    expect(r.predictions!.ids.length).toBe(3 * r.ids.length);
    const g = await model.generate('the cat', { maxNewTokens: 5, temperature: 0, stopAtEos: false });
    expect(g.text.startsWith('the cat')).toBe(true);
    const local = await engine.loadModel({ files: REPOS[id] });
    expect(local.run('the cat sat on the mat').attentions).toEqual(r.attentions);
    model.dispose();
    local.dispose();
  });

  it('downloads a Marian model with its two SentencePiece models and vocab.json, then translates', async () => {
    const progress: HubProgress[] = [];
    const id = 'Helsinki-NLP/opus-mt-tiny';
    const model = await engine.loadModel({ hub: id, baseUrl: base, onProgress: (p) => progress.push(p) });
    expect([...new Set(progress.map((p) => p.file))]).toEqual([
      'config.json',
      'source.spm',
      'target.spm',
      'vocab.json',
      'tokenizer_config.json',
      'generation_config.json',
      'model.safetensors',
    ]);
    expect(model.info).toMatchObject({ architecture: 'MarianMTModel', encoderDecoder: true, decoderStartTokenId: 49 });
    expect(model.info.generation).toMatchObject({ numBeams: 4, maxLength: 12, bannedTokenIds: [49] });
    const local = await engine.loadModel({ files: REPOS[id] });
    const [source, target] = ['the cat sat on a mat', 'the hat'];
    const r = model.run({ source, target });
    expect(r.sourceTokens.at(-1)).toBe('</s>');
    expect(r.targetTokens[0]).toBe('<pad>');
    expect(Array.from(r.sourceIds)).toEqual(Array.from(local.tokenize(source).ids));
    expect(r.maps.cross.attentions).toEqual(local.run({ source, target }).maps.cross.attentions);
    const g = await model.generate({ source }, { beams: 4, maxNewTokens: 30 });
    expect(g.targetIds.length).toBeLessThanOrEqual(12); // max_length, the start token included
    expect(Array.from(g.targetIds.slice(1))).not.toContain(49); // <pad> is a bad word
    model.dispose();
    local.dispose();
  });

  it('downloads a vision model with its preprocessor_config.json, then runs an image as it says', async () => {
    const progress: HubProgress[] = [];
    const id = 'facebook/dinov2-with-registers-tiny';
    const model = await engine.loadModel({ hub: id, baseUrl: base, onProgress: (p) => progress.push(p) });
    expect([...new Set(progress.map((p) => p.file))]).toEqual([
      'config.json',
      'preprocessor_config.json',
      'model.safetensors',
    ]);
    expect(model.info).toMatchObject({ architecture: 'Dinov2WithRegistersModel', vision: true, registers: 4 });
    const r = model.run({ image: testImage(97, 131, 'noise', 1) });
    expect(r.grid).toEqual([4, 4]); // shortest edge to 64, then the centre 56 × 56: 4 × 4 patches of 14
    expect(r.tokens.slice(0, 6)).toEqual([
      '[CLS]',
      'register 1',
      'register 2',
      'register 3',
      'register 4',
      'patch 0,0',
    ]);
    const local = await engine.loadModel({ files: REPOS[id] });
    expect(local.run({ image: testImage(97, 131, 'noise', 1) }).attentions).toEqual(r.attentions);
    model.dispose();
    local.dispose();
  });

  it('serves a second load from the cache without downloading', async () => {
    const before = requests.length;
    const progress: HubProgress[] = [];
    await engine.loadModel({ hub: 'org/tiny-bert', baseUrl: base, onProgress: (p) => progress.push(p) });
    expect(requests.slice(before)).toEqual(['/api/models/org/tiny-bert/revision/main?blobs=true']);
    expect(progress.every((p) => p.cached)).toBe(true);
  });

  it('offline, loads what the cache holds, and says so for what it does not', async () => {
    offline = true;
    try {
      const model = await engine.loadModel({ hub: 'org/tiny-bert', baseUrl: base });
      expect(model.run('the cat').tokens).toEqual(['[CLS]', 'the', 'cat', '[SEP]']);
      model.dispose();
      await expect(engine.loadModel({ hub: 'org/changing', baseUrl: base })).rejects.toThrow(
        `loadModel: could not reach ${base} to list the files of org/changing, and config.json is not in the cache; are you offline?`,
      );
    } finally {
      offline = false;
    }
  });

  it('downloads a file again when the Hub lists a new checksum for it', async () => {
    await engine.loadModel({ hub: 'org/changing', baseUrl: base });
    const config = JSON.parse(new TextDecoder().decode(REPOS['org/changing']['config.json']));
    REPOS['org/changing']['config.json'] = new TextEncoder().encode(JSON.stringify({ ...config, hidden_act: 'gelu' }));
    const before = requests.length;
    await engine.loadModel({ hub: 'org/changing', baseUrl: base });
    expect(requests.slice(before)).toEqual([
      '/api/models/org/changing/revision/main?blobs=true',
      '/org/changing/resolve/main/config.json',
    ]);
  });

  it('refuses a file whose checksum or size differs from the list, and caches nothing of it', async () => {
    await expect(engine.loadModel({ hub: 'org/wrong-checksum', baseUrl: base })).rejects.toThrow(
      /^loadModel: model.safetensors has the wrong checksum: sha256 [0-9a-f]{64}, but the Hub lists [0-9a-f]{64}; the download is corrupt or was altered$/,
    );
    await expect(engine.loadModel({ hub: 'org/short', baseUrl: base })).rejects.toThrow(
      /^loadModel: the download of model.safetensors is truncated: \d+ bytes of the \d+ listed$/,
    );
    const before = requests.length;
    await expect(engine.loadModel({ hub: 'org/wrong-checksum', baseUrl: base })).rejects.toThrow('wrong checksum');
    expect(requests.slice(before)).toContain('/org/wrong-checksum/resolve/main/model.safetensors');
  });

  it('without a file list (verify: false), probes for files and checks lengths only', async () => {
    await expect(engine.loadModel({ hub: 'org/no-api', baseUrl: base })).rejects.toThrow(
      `loadModel: org/no-api (revision main) is not on the Hub, or is private (HTTP 404 at ${base}/api/models/org/no-api/revision/main?blobs=true)`,
    );
    const model = await engine.loadModel({ hub: 'org/no-api', baseUrl: base, verify: false });
    expect(model.run('the mat').tokens).toEqual(['[CLS]', 'the', 'mat', '[SEP]']);
    expect(requests).toContain('/org/no-api/resolve/main/tokenizer.json'); // asked for, answered 404
  });

  it('loads sharded weights listed by model.safetensors.index.json', async () => {
    const model = await engine.loadModel({ hub: 'tiny-bert-sharded', baseUrl: base, cache: false });
    expect(model.run('the mat').tokens).toEqual(['[CLS]', 'the', 'mat', '[SEP]']);
    expect(requests).toContain('/tiny-bert-sharded/resolve/main/model-00003-of-00003.safetensors');
  });

  it('a missing model, missing weights, a truncated download and a wrong content-length are clear errors', async () => {
    await expect(engine.loadModel({ hub: 'org/missing', baseUrl: base })).rejects.toThrow(
      'loadModel: org/missing (revision main) is not on the Hub, or is private (HTTP 404',
    );
    await expect(engine.loadModel({ hub: 'org/no-weights', baseUrl: base })).rejects.toThrow(
      'loadModel: org/no-weights has no model.safetensors.index.json on the Hub (nor model.safetensors',
    );
    await expect(engine.loadModel({ hub: 'org/truncated', baseUrl: base })).rejects.toThrow(
      /loadModel: the download of model.safetensors (was cut short|is truncated)/,
    );
    await expect(engine.loadModel({ hub: 'org/wrong-length', baseUrl: base })).rejects.toThrow(
      /loadModel: the download of model.safetensors (was cut short|is truncated)/,
    );
    // Nothing incomplete was cached: trying again downloads again.
    const before = requests.length;
    await expect(engine.loadModel({ hub: 'org/truncated', baseUrl: base })).rejects.toThrow();
    expect(requests.slice(before)).toContain('/org/truncated/resolve/main/model.safetensors');
    await expect(engine.loadModel({ hub: 'org/x', baseUrl: 'http://127.0.0.1:9' })).rejects.toThrow(
      'loadModel: could not reach http://127.0.0.1:9 to list the files of org/x, and config.json is not in the cache',
    );
  });

  it('validates ids, revisions and base URLs before fetching anything', async () => {
    const before = requests.length;
    for (const hub of ['', '../etc/passwd', 'a/b/c', 'org/..', '.hidden', 'https://evil.example/x', 'a b', 42])
      await expect(engine.loadModel({ hub: hub as string, baseUrl: base })).rejects.toThrow('is not a Hub model id');
    await expect(engine.loadModel({ hub: 'ok', baseUrl: base, revision: '../main' })).rejects.toThrow(
      'loadModel: revision "../main" is not a branch, tag or commit name',
    );
    await expect(engine.loadModel({ hub: 'ok', baseUrl: 'ftp://example.com' })).rejects.toThrow(
      'loadModel: baseUrl must be http(s), got ftp:',
    );
    expect(requests.length).toBe(before);
  });

  it('refuses a model that cannot fit from the file list, before downloading its weights', async () => {
    const kept = await engine.loadModel({ hub: 'org/tiny-bert', baseUrl: base });
    const asked = requests.length;
    await expect(engine.loadModel({ hub: 'org/too-big', baseUrl: base })).rejects.toThrow(
      /org\/too-big needs 4768 MiB for its weights, and the engine's 4096 MiB heap holds \d+ MiB already and keeps \d+ MiB for running: .*nothing was downloaded/,
    );
    expect(requests.slice(asked).some((url) => url.includes('model.safetensors'))).toBe(false);
    expect(kept.run('the cat').tokens.length).toBe(4);
    kept.dispose();
  });

  it("hubPlan lists what loading downloads, with the Hub's sizes, and whether it fits, from the list alone", async () => {
    for (const id of [
      'org/tiny-bert',
      'tiny-bert-sharded',
      'Helsinki-NLP/opus-mt-tiny',
      'facebook/dinov2-with-registers-tiny',
    ]) {
      const before = requests.length;
      const plan = await engine.hubPlan({ hub: id, baseUrl: base });
      // The list (and a sharded model's index) only: no weights.
      const asked = requests.slice(before);
      expect(
        asked.every((url) => url.startsWith('/api/') || url.endsWith('.index.json')),
        id,
      ).toBe(true);
      // What a load without the cache then downloads, file for file, at the sizes listed.
      const loading = requests.length;
      const model = await engine.loadModel({ hub: id, baseUrl: base, cache: false });
      model.dispose();
      const downloaded = requests
        .slice(loading)
        .map((url) => /\/resolve\/main\/(.+)$/.exec(url)?.[1])
        .filter((name): name is string => !!name && !!REPOS[id][name]);
      expect(plan.files.map((f) => f.name).sort(), id).toEqual([...new Set(downloaded)].sort());
      for (const f of plan.files) expect(f.size, `${id} ${f.name}`).toBe(REPOS[id][f.name].length);
      const weights = plan.files.filter((f) => f.weights).map((f) => f.name);
      expect(
        weights.every((name) => name.endsWith('.safetensors')),
        id,
      ).toBe(true);
      expect(plan.downloadBytes).toBe(plan.files.reduce((a, f) => a + f.size, 0));
      expect(plan.weightBytes).toBe(plan.files.filter((f) => f.weights).reduce((a, f) => a + f.size, 0));
      expect(plan.heapBytes).toBe(plan.weightBytes + engine.info().runningRoomBytes);
      expect(plan.fits).toBe(true);
    }
    const big = await engine.hubPlan({ hub: 'org/too-big', baseUrl: base });
    expect(big.weightBytes).toBe(5e9);
    expect(big.fits).toBe(false);
    expect(big.freeBytes).toBe(engine.info().maxHeapBytes - engine.memory().allocatedBytes);
    await expect(engine.hubPlan({ hub: 'org/missing', baseUrl: base })).rejects.toThrow('is not on the Hub');
    await expect(engine.hubPlan({ hub: 'org/no-weights', baseUrl: base })).rejects.toThrow(
      'hubPlan: org/no-weights has neither model.safetensors nor model.safetensors.index.json on the Hub',
    );
    await expect(engine.hubPlan({ hub: 'org/x', baseUrl: 'http://127.0.0.1:9' })).rejects.toThrow(
      'hubPlan: could not reach http://127.0.0.1:9 to list the files of org/x; are you offline?',
    );
    await expect(engine.hubPlan({ hub: '../x', baseUrl: base })).rejects.toThrow('is not a Hub model id');
  });

  it('keeps working after failed loads', async () => {
    const model = await engine.loadModel({ hub: 'org/tiny-bert', baseUrl: base });
    expect(model.run('the cat').tokens.length).toBe(4);
  });

  // This process's download files in a folder (named `<…>.<pid>.<…>.partial`).
  const ours = (dir: string) => readdirSync(dir).filter((f) => f.includes(`.${process.pid}.`));
  // Loads tiny-bert from the Hub: its weights, once all arrived, in one temporary file, gone after the load.
  async function loadsThroughTemporaryFile(options: { cache?: false }) {
    let during: string[] = [];
    const model = await engine.loadModel({
      hub: 'org/tiny-bert',
      baseUrl: base,
      ...options,
      onProgress: (p) => {
        if (p.file === 'model.safetensors' && p.loaded === p.total) during = ours(tmpdir());
      },
    });
    expect(during).toHaveLength(1);
    expect(model.run('the cat').tokens.length).toBe(4);
    expect(ours(tmpdir())).toEqual([]);
  }

  // Weights are written to disk as they arrive (the cache's folder, or a temporary file when not caching) and read
  // back in pieces: what a failed download wrote is gone, and no file stays open after a load, loaded or not.
  it('keeps no part of a failed download, and leaves no weight file open or temporary file behind', async () => {
    const cacheDir = join(process.env.ATTNSCOPE_CACHE_DIR!, 'hub');
    const cached = (id: string) =>
      join(cacheDir, createHash('sha256').update(`${base}/${id}/resolve/main/model.safetensors`).digest('hex'));
    const openHere = () =>
      readdirSync('/proc/self/fd')
        .map((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`);
          } catch {
            return ''; // the listing's own, closed since
          }
        })
        .filter((target) => target.startsWith(cacheDir) || target.includes('.partial'));
    for (const id of ['org/wrong-checksum', 'org/short', 'org/truncated'])
      await expect(engine.loadModel({ hub: id, baseUrl: base })).rejects.toThrow();
    expect(existsSync(cached('org/wrong-checksum'))).toBe(false);
    expect(existsSync(cached('org/tiny-bert'))).toBe(true);
    // Not cached: a temporary file while the weights arrive, gone once the model has read them.
    await loadsThroughTemporaryFile({ cache: false });
    expect(ours(cacheDir)).toEqual([]);
    expect(openHere()).toEqual([]);
  });

  it('loads with a cache folder that cannot be written: the weights go to a temporary file, removed after', async () => {
    const cacheDir = process.env.ATTNSCOPE_CACHE_DIR;
    const blocked = join(mkdtempSync(join(tmpdir(), 'attnscope-blocked-')), 'a-file');
    writeFileSync(blocked, 'not a folder'); // the cache's folder would be under a file: mkdir fails, even as root
    process.env.ATTNSCOPE_CACHE_DIR = blocked;
    try {
      await loadsThroughTemporaryFile({});
    } finally {
      process.env.ATTNSCOPE_CACHE_DIR = cacheDir;
      rmSync(dirname(blocked), { recursive: true, force: true });
    }
  });
});

describe('loadModel({ hub, file }): a GGUF from a repository', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await createEngine({ threads: 1 });
  });
  afterAll(() => engine.dispose());
  const hub = 'someone/tiny-qwen3-GGUF';
  const text = 'The cat sat on the mat.';

  it('downloads the file asked for, and nothing else, and loads it as the file itself loads', async () => {
    const before = requests.length;
    const progress: HubProgress[] = [];
    const file = 'tiny-qwen3-f32.gguf';
    const model = await engine.loadModel({ hub, file, baseUrl: base, onProgress: (p) => progress.push(p) });
    expect([...new Set(progress.map((p) => p.file))]).toEqual([file]);
    // Its header first (the heap its weights take), then the file.
    const url = `/${hub}/resolve/main/${file}`;
    const head = `${url} (bytes=0-${Math.min(REPOS[hub][file].length, 2 ** 21) - 1})`;
    expect(requests.slice(before).filter((u) => u.includes('/resolve/'))).toEqual([head, url]);
    const local = await engine.loadModel({ files: { [file]: REPOS[hub][file] } });
    const [a, b] = [model.run(text), local.run(text)];
    expect(a.tokens).toEqual(b.tokens);
    expect(Array.from(a.attentions)).toEqual(Array.from(b.attentions));
    const plan = await engine.hubPlan({ hub, file, baseUrl: base });
    expect(plan.files).toEqual([{ name: file, size: REPOS[hub][file].length, weights: true }]);
  });

  it('the first part of a split GGUF brings the others', async () => {
    const file = 'tiny-qwen3-f32-00001-of-00002.gguf';
    const model = await engine.loadModel({ hub, file, baseUrl: base });
    const whole = await engine.loadModel({ files: { 'x.gguf': REPOS[hub]['tiny-qwen3-f32.gguf'] } });
    expect(Array.from(model.run(text).attentions)).toEqual(Array.from(whole.run(text).attentions));
    const plan = await engine.hubPlan({ hub, file, baseUrl: base });
    expect(plan.files.map((f) => f.name)).toEqual([file, 'tiny-qwen3-f32-00002-of-00002.gguf']);
  });

  it('a file the repository lacks, or a path that is not a .gguf in it, is refused, naming it', async () => {
    await expect(engine.loadModel({ hub, file: 'tiny-qwen3-Q9.gguf', baseUrl: base })).rejects.toThrow(
      `loadModel: ${hub} has no tiny-qwen3-Q9.gguf on the Hub (asked for)`,
    );
    await expect(engine.hubPlan({ hub, file: 'tiny-qwen3-Q9.gguf', baseUrl: base })).rejects.toThrow(
      `hubPlan: ${hub} has no tiny-qwen3-Q9.gguf on the Hub`,
    );
    const before = requests.length;
    for (const file of ['../secrets.gguf', 'model.safetensors', ''])
      await expect(engine.loadModel({ hub, file, baseUrl: base })).rejects.toThrow(
        `loadModel: file ${JSON.stringify(file)} is not a .gguf file's path in the repository`,
      );
    expect(requests.length).toBe(before);
  });

  it("a plan says the heap a GGUF's weights take, from its header, for every tensor type", async () => {
    const id = 'someone/every-type-GGUF';
    for (const [file, bytes] of Object.entries(REPOS[id])) {
      const before = requests.length;
      const plan = await engine.hubPlan({ hub: id, file, baseUrl: base });
      // The list and a range of the file's first bytes: its header.
      expect(requests.slice(before), file).toEqual([
        `/api/models/${id}/revision/main?blobs=true`,
        `/${id}/resolve/main/${file} (bytes=0-${Math.min(bytes.length, 2 ** 21) - 1})`,
      ]);
      expect(plan.heapBytes).toBe(plan.weightBytes + engine.info().runningRoomBytes);
      const held = engine.memory().allocatedBytes;
      const model = await engine.loadModel({ files: { [file]: bytes } });
      // What loading takes beside the weights: the model's own bookkeeping and its small vocabulary's tokenizer.
      const beside = engine.memory().allocatedBytes - held - plan.weightBytes;
      expect(beside, file).toBeGreaterThanOrEqual(0);
      expect(beside, file).toBeLessThan(64 * 1024);
      // Q4_K's panels keep 148 bytes per 256 values a column where the file keeps 144.
      if (file.includes('Q4_K')) expect(plan.weightBytes, file).toBeGreaterThan(bytes.length);
      model.dispose();
    }
  });

  /**
   * A GGUF in Q4_K whose file would fit the heap free now but whose weights would not: its file's bytes (the
   * weights at 144 bytes per 256 values) leave the running room, their panels (148) do not. Written as its header.
   */
  function tooBigGguf(): { header: Uint8Array; size: number; weightBytes: number } {
    const { maxHeapBytes, runningRoomBytes } = engine.info();
    const free = maxHeapBytes - engine.memory().allocatedBytes;
    const k = 4096;
    const columns = Math.floor((free - runningRoomBytes - 2 ** 20) / ((k / 256) * 144) / 8) * 8;
    const bytes = columns * (k / 256) * 144;
    const [keys] = decoderCheckpoint({ arch: 'llama' }).ggufParts();
    const tensor = {
      name: 'token_embd.weight',
      dims: [k, columns],
      type: 12,
      data: { length: bytes, byteLength: bytes },
    };
    const header = gguf(keys, [tensor as never], { headerOnly: true });
    const size = header.length + bytes;
    expect(size + runningRoomBytes).toBeLessThanOrEqual(free);
    return { header, size, weightBytes: (columns / 8) * (k / 256) * 1184 };
  }

  it('a GGUF whose file would fit but whose weights would not is refused from its header, before the download', async () => {
    const id = 'someone/too-big-GGUF';
    const kept = await engine.loadModel({ files: { 'q.gguf': REPOS['someone/every-type-GGUF']['qwen3-Q4_K.gguf'] } });
    const { header, size, weightBytes } = tooBigGguf();
    REPOS[id] = { 'big-Q4_K.gguf': header };
    CLAIMED[id] = { 'big-Q4_K.gguf': size };
    const plan = await engine.hubPlan({ hub: id, file: 'big-Q4_K.gguf', baseUrl: base });
    expect(plan).toMatchObject({ downloadBytes: size, weightBytes, fits: false });
    const before = requests.length;
    const mib = Math.round(weightBytes / 2 ** 20);
    await expect(engine.loadModel({ hub: id, file: 'big-Q4_K.gguf', baseUrl: base })).rejects.toThrow(
      new RegExp(`loadModel: ${id} needs ${mib} MiB for its weights, .*nothing was downloaded`),
    );
    // The list, and the header's bytes read a range at a time: never the file.
    const asked = requests.slice(before);
    expect(asked[0]).toBe(`/api/models/${id}/revision/main?blobs=true`);
    expect(asked.length).toBeGreaterThan(1);
    for (const url of asked.slice(1))
      expect(url).toMatch(/^\/someone\/too-big-GGUF\/resolve\/main\/big-Q4_K\.gguf \(bytes=0-\d+\)$/);
    expect(Array.from(kept.run([1, 2, 3]).ids)).toEqual([1, 2, 3]);
    kept.dispose();
  });

  it('a dropped GGUF (a File) whose weights would not fit is refused from its header, before it is read', async () => {
    const { header, size, weightBytes } = tooBigGguf();
    // A File of `size` bytes, the header then zeros, that must never be read whole.
    class BigFile extends Blob {
      override get size() {
        return size;
      }
      override slice(start = 0, end = size) {
        const part = new Uint8Array(Math.min(end, size) - start);
        part.set(header.subarray(start, end));
        return new Blob([part]);
      }
      override arrayBuffer(): Promise<ArrayBuffer> {
        throw new Error('the file was read whole');
      }
    }
    const mib = Math.round(weightBytes / 2 ** 20);
    await expect(engine.loadModel({ files: { 'big-Q4_K.gguf': new BigFile([]) } })).rejects.toThrow(
      new RegExp(`loadModel: big-Q4_K.gguf needs ${mib} MiB for its weights, .*nothing was read`),
    );
    // Its bytes handed over in hand (not read lazily by the engine): the load refuses before it reads a tensor.
    const bytes = new Uint8Array(size);
    bytes.set(header);
    await expect(engine.loadModel({ files: { 'big-Q4_K.gguf': bytes } })).rejects.toThrow(
      new RegExp(`loadModel: the weights need ${Math.floor(weightBytes / 2 ** 20)} MiB of the engine's \\d+ MiB heap`),
    );
    // A File that fits loads from its header's plan and then its bytes.
    const file = REPOS['someone/every-type-GGUF']['gemma2-Q4_K_M.gguf'];
    const model = await engine.loadModel({ files: { 'g.gguf': new Blob([new Uint8Array(file)]) } });
    expect(model.info.weightsDtype).toBe('q6_k');
    model.dispose();
  });
});
