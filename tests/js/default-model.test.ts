// The embedded default model against the original it was converted from:
// Universal Sentence Encoder lite run by TensorFlow.js, and its own Tokenizer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createEngine, type Engine, type HubProgress, type Model } from '../../dist/node.js';
import { corpus } from './corpus.js';
import { originalModel, originalTokenizer } from './use-original.js';

const SENTENCES = [
  'The cat sat on the mat.',
  'Hi',
  'a',
  '!',
  'Attention is all you need.',
  'The quick brown fox jumps over the lazy dog, while the dog sleeps.',
  "I can't believe it's already 2026; we've barely started!",
  'Where is the nearest train station? I need to get to Zürich by 5 p.m.',
  'Crème brûlée, jalapeño, naïve café — déjà vu.',
  '東京は日本の首都です。',
  'Emoji: 😀👍🏽 and a family 👨‍👩‍👧 walk into a bar.',
  'Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ and the ﬁ ligature normalize under NFKC.',
  'Multiple     spaces\tand\ttabs\nand newlines.',
  'E = mc^2, 3.14159, $1,000,000 and 50% off!!!',
  'https://example.com/path?query=1&x=y#anchor',
  'Привет, как дела? Γειά σου κόσμε. مرحبا بالعالم. שלום עולם.',
  '\'Quoted\' "double" (parens) [brackets] {braces} <angles>',
  'supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis',
  'He said: "The model attends to every token, even the punctuation."',
  'Long: ' + 'the model reads every word and every word attends to every other word. '.repeat(9),
  'Beyond the limit: ' + 'tokens keep coming and coming, '.repeat(30),
  'A B C D E F G H I J K L M N O P Q R S T U V W X Y Z',
  'lowercase only sentence without punctuation',
  'UPPERCASE SHOUTING SENTENCE!',
];

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

const DIR = new URL('../../dist/models/default/', import.meta.url);

describe('default model: Universal Sentence Encoder lite', () => {
  let engine: Engine;
  let model: Model;
  beforeAll(async () => {
    engine = await createEngine({ threads: 2 });
    model = await engine.loadModel('default');
  });
  afterAll(() => engine.dispose());

  it('reports what it is', () => {
    expect(model.info).toEqual({
      name: 'Universal Sentence Encoder lite',
      architecture: 'UniversalSentenceEncoderLite',
      input: 'text',
      stacks: [
        {
          name: 'encoder',
          layers: 2,
          heads: 4,
          kvHeads: 4,
          headDim: 128,
          maxTokens: 128,
          causal: false,
          window: [0, 0],
        },
      ],
      layers: 2,
      heads: 4,
      dModel: 512,
      maxTokens: 128,
      vocabSize: 8002,
      kvHeads: 4,
      headDim: 128,
      causal: false,
      languageModel: false,
      weightsDtype: 'f32',
      weights: 'F32',
      window: [0, 0],
      eosTokenIds: [],
    });
  });

  it("labels its SentencePiece pieces as a person reads them: ␣ for ▁, the pieces' own text otherwise", () => {
    const { ids, tokens } = model.tokenize('The cat sat.');
    expect(tokens).toEqual(['▁The', '▁cat', '▁sat', '.']);
    expect(model.labels(ids)).toEqual(['␣The', '␣cat', '␣sat', '.']);
  });

  it('tokenizes 1,000+ varied strings exactly as the original Tokenizer', () => {
    const original = originalTokenizer();
    const strings = corpus(SENTENCES);
    expect(strings.length).toBeGreaterThanOrEqual(1000);
    let mismatches = 0;
    for (const s of strings) {
      const ours = Array.from(model.tokenize(s).ids);
      const theirs = original.encode(s);
      if (JSON.stringify(ours) !== JSON.stringify(theirs)) {
        mismatches++;
        if (mismatches <= 5) console.log('mismatch', JSON.stringify(s), ours, theirs);
      }
    }
    expect(mismatches).toBe(0);
  });

  it('matches the original TF.js model: every attention weight within 1e-4, embedding cosine >= 0.9999', async () => {
    const original = await originalModel();
    const tokenizer = originalTokenizer();
    expect(SENTENCES.length).toBeGreaterThanOrEqual(20);
    let worst = 0;
    for (const s of SENTENCES) {
      const ours = model.run(s);
      const ids = tokenizer.encode(s).slice(0, 128); // the original clips to 128 tokens too
      expect(Array.from(ours.ids)).toEqual(ids);
      const n = ids.length;
      expect(ours.shape).toEqual([2, 4, n, n]);
      const theirs = await original.run(ids);
      for (let l = 0; l < 2; l++) {
        const mine = ours.attentions.subarray(l * 4 * n * n, (l + 1) * 4 * n * n);
        for (let i = 0; i < mine.length; i++) worst = Math.max(worst, Math.abs(mine[i] - theirs.attentions[l][i]));
      }
      expect(worst, `after "${s.slice(0, 40)}"`).toBeLessThanOrEqual(1e-4);
      expect(cosine(ours.embedding!, theirs.embedding)).toBeGreaterThanOrEqual(0.9999);
    }
    console.log(`default model: largest attention difference from TF.js ${worst.toExponential(2)}`);
  }, 120_000);

  it('truncates past 128 tokens visibly, never silently', () => {
    const long = 'word '.repeat(300);
    const r = model.run(long);
    expect(r.truncated).toBe(true);
    expect(r.totalTokens).toBe(model.tokenize(long).ids.length);
    expect(r.totalTokens).toBeGreaterThan(128);
    expect(r.tokens.length).toBe(128);
    expect(r.shape).toEqual([2, 4, 128, 128]);
    expect(model.run('short').truncated).toBe(false);
  });

  it('returns hidden states, and per-head q, k, v on request', () => {
    const r = model.run('The cat sat.', { returnProjections: true });
    const n = r.tokens.length;
    expect(r.hidden.shape).toEqual([n, 512]);
    expect(r.q!.map((t) => t.shape)).toEqual([
      [4, n, 64],
      [4, n, 128],
    ]);
    expect(r.v![1].shape).toEqual([4, n, 128]);
    expect(model.run('The cat sat.').q).toBeUndefined();
  });

  it('refuses bad input clearly and keeps working', () => {
    expect(() => model.run('')).toThrowError('run: the text has no tokens');
    expect(() => model.run(42 as never)).toThrowError(
      'run: input must be a string or an array of token ids, got number',
    );
    expect(() => model.run([1, 2.5])).toThrowError('run: ids[1] must be an integer, got 2.5');
    expect(() => model.run([1, 99999])).toThrowError('run: id 99999 at position 1 is outside the vocabulary [0, 8002)');
    expect(model.run([34, 1163]).tokens).toEqual(['▁The', '▁cat']);
    expect(() => model.run('x', { projections: true } as never)).toThrowError("run: unknown option 'projections'");
    expect(model.run('still works').tokens.length).toBeGreaterThan(0);
  });

  it('ships as config, vocabulary and sharded safetensors, each shard at most 20 MiB', async () => {
    const { readdirSync, readFileSync, statSync } = await import('node:fs');
    const { defaultModelFiles } = await import('../../dist/models/default.js');
    const names = Object.keys(defaultModelFiles);
    expect(readdirSync(DIR).sort()).toEqual([...names, 'NOTICE'].sort());
    for (const [name, url] of Object.entries(defaultModelFiles)) expect(url.href).toBe(new URL(name, DIR).href);
    const index = JSON.parse(readFileSync(new URL('model.safetensors.index.json', DIR), 'utf8'));
    const shards = [...new Set(Object.values(index.weight_map))].sort();
    expect(shards).toEqual(names.filter((n) => n.endsWith('.safetensors')));
    const sizes = shards.map((s) => statSync(new URL(s as string, DIR)).size);
    console.log(`default model shards: ${sizes.map((b) => (b / 2 ** 20).toFixed(1)).join(', ')} MiB`);
    for (const bytes of sizes) expect(bytes).toBeLessThanOrEqual(20 * 2 ** 20);
  });

  it('reports each file as it is read, with { default: true, onProgress }, and loads the same model', async () => {
    const { statSync } = await import('node:fs');
    const { defaultModelFiles } = await import('../../dist/models/default.js');
    const calls: HubProgress[] = [];
    const again = await engine.loadModel({ default: true, onProgress: (p) => calls.push(p) });
    // Node reads the package's files: one call per file, whole, and no download.
    expect(calls.map((c) => c.file).sort()).toEqual(Object.keys(defaultModelFiles).sort());
    for (const { file, loaded, total, cached } of calls) {
      const size = statSync(new URL(file, DIR)).size;
      expect({ file, loaded, total, cached }).toEqual({ file, loaded: size, total: size, cached: true });
    }
    expect(again.info).toEqual(model.info);
    expect(Array.from(again.run('The cat sat.').attentions)).toEqual(Array.from(model.run('The cat sat.').attentions));
    again.dispose();
    const plain = await engine.loadModel({ default: true });
    expect(plain.info).toEqual(model.info);
    plain.dispose();
    await expect(engine.loadModel({ default: true, onProgress: 'log' as never })).rejects.toThrow(
      'loadModel: onProgress must be a function, got string',
    );
  });

  it('loads from { files } and refuses broken files with a clear error', async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const names = readdirSync(DIR).filter((f) => f !== 'NOTICE');
    const files = Object.fromEntries(names.map((f) => [f, new Uint8Array(readFileSync(new URL(f, DIR)))]));
    const again = await engine.loadModel({ files });
    expect(Array.from(again.run('The cat sat on the mat.').attentions.slice(0, 64))).toEqual(
      Array.from(model.run('The cat sat on the mat.').attentions.slice(0, 64)),
    );
    again.dispose();
    expect(() => again.run('x')).toThrowError('run: this model was disposed');

    const SHARD = 'model-00002-of-00002.safetensors';
    const truncated = { ...files, [SHARD]: files[SHARD].subarray(0, 1000) };
    await expect(engine.loadModel({ files: truncated })).rejects.toThrow(
      /model-00002-of-00002.safetensors: .*beyond the end of the file|outside the data section/,
    );
    const { [SHARD]: __, ...noShard } = files;
    await expect(engine.loadModel({ files: noShard })).rejects.toThrow(
      `loadModel: shard "${SHARD}" is missing from the model's files`,
    );
    const { 'vocab.json': _, ...noVocab } = files;
    await expect(engine.loadModel({ files: noVocab })).rejects.toThrow('loadModel: vocab.json is missing');
    const t5 = new TextEncoder().encode('{"architectures": ["T5Model"]}');
    await expect(engine.loadModel({ files: { ...files, 'config.json': t5 } })).rejects.toThrow(
      'loadModel: architecture "T5Model" is not supported',
    );
    const bert = new TextEncoder().encode('{"architectures": ["BertModel"]}');
    await expect(engine.loadModel({ files: { ...files, 'config.json': bert } })).rejects.toThrow(
      'config.json: num_hidden_layers is missing',
    );
    const layers = new TextEncoder().encode(
      new TextDecoder()
        .decode(files['config.json'])
        .replace('"num_hidden_layers": 2', '"num_hidden_layers": 1000000000'),
    );
    await expect(engine.loadModel({ files: { ...files, 'config.json': layers } })).rejects.toThrow(
      'config.json: num_hidden_layers must be a whole number from 1 to 64',
    );
    await expect(engine.loadModel('gpt-5' as never)).rejects.toThrow(
      "loadModel: source must be 'default', { hub } or { files }",
    );
    expect(model.run('still works').tokens.length).toBeGreaterThan(0);
  });
});
