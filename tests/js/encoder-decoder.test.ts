// Encoder-decoder models (BART, T5) through the package: random checkpoints in the Hub's names and layout, held to
// float64 references (tests/golden/make_seq2seq_goldens.py: PyTorch's own encoder and decoder layers for BART, T5's
// definition written out for T5), and texts tokenized as Hugging Face's tokenizers do (a byte-level BPE tokenizer.json with BART's RobertaProcessing, against
// @huggingface/tokenizers).
import { Tokenizer as Reference } from '@huggingface/tokenizers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, MapSet } from '../../dist/node.js';
import { bartTokenizer, bartWithTokenizer, SEQ2SEQ_GOLDENS, seq2seqFiles, type Seq2SeqGolden } from '../seq2seq.mjs';
import { BUILDS, engineFor } from './engines.js';

type Golden = Seq2SeqGolden;
const goldens = SEQ2SEQ_GOLDENS;
const filesOf = (g: Golden) => seq2seqFiles(g);

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

  it.each(goldens.map((g) => [g.name, g] as const))(
    '%s: every encoder, decoder and cross-attention map and the logits match the reference within 1e-4',
    async (_, g) => {
      const model = await engine.loadModel({ files: filesOf(g) });
      expect(model.info).toMatchObject({
        architecture: (g.config.architectures as string[])[0],
        encoderDecoder: true,
        encoderLayers: 2,
        encoderHeads: 4,
        encoderMaxTokens: 32,
        layers: 3,
        heads: 4,
        causal: true,
        languageModel: true,
        decoderStartTokenId: g.config.decoder_start_token_id,
        eosTokenIds: [g.config.eos_token_id],
      });
      expect(model.info.forcedBosTokenId).toBe(g.config.forced_bos_token_id);
      const r = model.run({ source: g.source, target: g.target }, { returnLogits: true, topK: 2 });
      expect(Array.from(r.sourceIds)).toEqual(g.source);
      expect(Array.from(r.targetIds)).toEqual(g.target);
      const { encoder, decoder, cross } = r.maps;
      for (const [set, want] of [
        [encoder, g.encoder],
        [decoder, g.decoder],
        [cross, g.cross],
      ] as Array<[MapSet, Golden['encoder']]>) {
        expect(set.shape).toEqual(want.shape);
        expect(worstDifference(set.attentions, want.data)).toBeLessThanOrEqual(1e-4);
      }
      expect([encoder.kind, decoder.kind, cross.kind]).toEqual(['self', 'self', 'cross']);
      expect([encoder.causal, decoder.causal, cross.causal]).toEqual([false, true, false]);
      expect(cross.queryTokens).toEqual(r.targetTokens);
      expect(cross.keyTokens).toEqual(r.sourceTokens);
      expect(r.logits!.shape).toEqual(g.logits.shape);
      expect(worstDifference(r.logits!.data, g.logits.data)).toBeLessThanOrEqual(1e-4);
      expect(r.predictions!.ids.length).toBe(2 * g.target.length);
      expect(r.sourceHidden.shape).toEqual([g.source.length, 16]);
      // Rollout is defined on the encoder's and the decoder's maps, not on cross-attention's.
      expect(engine.rollout(encoder).shape).toEqual([2, g.source.length, g.source.length]);
      expect(() => engine.rollout(cross)).toThrowError(/cross-attention/);
      model.dispose();
    },
  );

  it('reads texts as Hugging Face tokenizes them: the source with <s> … </s>, the target after the start token', async () => {
    const json = bartTokenizer();
    const files = bartWithTokenizer();
    const model = await engine.loadModel({ files });
    const reference = new Reference(json, {});
    const [source, target] = ['the cat sat on the mat', 'the hat'];
    const r = model.run({ source, target }, { topK: 1 });
    expect(Array.from(r.sourceIds)).toEqual(reference.encode(source).ids);
    expect(r.sourceIds[0]).toBe(0);
    expect(r.sourceIds[r.sourceIds.length - 1]).toBe(2);
    expect(Array.from(r.targetIds)).toEqual([2, ...reference.encode(target).ids.slice(0, -1)]);
    expect(r.targetTokens).toEqual(['</s>', '<s>', 't', 'he', 'Ġhat']);
    const byIds = model.run({ source: r.sourceIds, target: r.targetIds });
    expect(byIds.maps.cross.attentions).toEqual(r.maps.cross.attentions);
    // A source longer than the encoder's 32 positions is cut, and says so.
    const long = model.run({ source: 'the cat '.repeat(20), target });
    expect(long.truncated).toBe(true);
    expect(long.totalSourceTokens).toBeGreaterThan(32);
    expect(long.maps.cross.shape).toEqual([3, 4, r.targetIds.length, 32]);
    model.dispose();
  });

  it.each(goldens.map((g) => [g.name, g] as const))(
    "%s: greedy generation is the reference's; each token's rows are a run's, and the maps a run's",
    async (_, g) => {
      const model = await engine.loadModel({ files: filesOf(g) });
      const tokens: Array<{ position: number; rows?: Float32Array; crossRows?: Float32Array }> = [];
      const r = await model.generate(
        { source: g.source },
        { maxNewTokens: g.greedy.length - 1, temperature: 0, stopAtEos: false, onToken: (t) => tokens.push(t) },
      );
      // The start token, the forced BOS where the model has one (BART's forced_bos_token_id), then the likeliest
      // token each step, as in the reference.
      expect(Array.from(r.targetIds)).toEqual(g.greedy);
      expect(r.stopReason).toBe('maxNewTokens');
      expect(tokens.map((t) => t.position)).toEqual(g.greedy.slice(1).map((_, i) => i + 1));
      // The maps are the generation's own (the encoder's one run, the decoder's and cross rows token by token, with
      // the KV cache): a teacher-forced run of the result gives them, within float rounding.
      const run = model.run({ source: g.source, target: r.targetIds });
      const { encoder, decoder, cross } = r.maps;
      expect(encoder!.attentions).toEqual(run.maps.encoder.attentions);
      for (const [ours, theirs] of [
        [decoder!, run.maps.decoder],
        [cross!, run.maps.cross],
      ]) {
        expect(ours.shape).toEqual(theirs.shape);
        expect(ours.queryTokens).toEqual(theirs.queryTokens);
        expect(ours.keyTokens).toEqual(theirs.keyTokens);
        expect(worstDifference(ours.attentions, theirs.attentions)).toBeLessThanOrEqual(1e-5);
      }
      expect(r.sourceTokens).toEqual(run.sourceTokens);
      const [n, m] = [g.greedy.length, g.source.length];
      for (const t of tokens) {
        // Token at position i: its rows of the decoder's maps [3, 4, i + 1] and of the cross maps [3, 4, m].
        const i = t.position;
        expect(t.rows!.length).toBe(12 * (i + 1));
        expect(t.crossRows!.length).toBe(12 * m);
        let worst = 0;
        for (let map = 0; map < 12; map++) {
          for (let j = 0; j < m; j++)
            worst = Math.max(worst, Math.abs(t.crossRows![map * m + j] - cross!.attentions[(map * n + i) * m + j]));
          for (let j = 0; j <= i; j++)
            worst = Math.max(worst, Math.abs(t.rows![map * (i + 1) + j] - decoder!.attentions[(map * n + i) * n + j]));
        }
        expect(worst).toBeLessThanOrEqual(1e-5);
      }
      // Stopping at </s> (id 2) when asked; seeded sampling repeats.
      const sampled = await model.generate({ source: g.source }, { maxNewTokens: 6, seed: 7, attentions: false });
      const again = await model.generate({ source: g.source }, { maxNewTokens: 6, seed: 7, attentions: false });
      expect(again.targetIds).toEqual(sampled.targetIds);
      expect(sampled.maps).toEqual({});
      if (sampled.stopReason === 'eos')
        expect(sampled.targetIds[sampled.targetIds.length - 1]).toBe(g.config.eos_token_id);
      model.dispose();
    },
  );

  it('bad input is an error naming it, and the model stays usable', async () => {
    const g = goldens[0];
    const model = await engine.loadModel({ files: filesOf(g) });
    const pair = { source: g.source, target: g.target };
    expect(() => model.run(g.source)).toThrowError(/is an encoder-decoder model: run it on a source and a target/);
    expect(() => model.run({ source: g.source, target: [] })).toThrowError('run: the target has no tokens');
    expect(() => model.run({ source: [0, 99], target: g.target })).toThrowError(
      'id 99 at position 1 of the source is outside the vocabulary [0, 50)',
    );
    expect(() => model.run({ source: g.source, target: new Array(40).fill(5) })).toThrowError(
      "the target has 40 tokens, more than the decoder's 32 positions",
    );
    expect(() => model.run({ source: 'text', target: 'text' })).toThrowError(/hold no tokenizer/);
    expect(() => model.run(pair, { mapLayers: [0] })).toThrowError(/mapLayers/);
    expect(() => model.run(pair, { ablateHeads: [[3, 0]] })).toThrowError(/outside the decoder's 3 layers/);
    expect(() => model.run(pair, { attentionMask: [1, 1] })).toThrowError(/attentionMask is for runs of one text/);
    expect(() => model.run(pair, { into: { attentions: new Float32Array(8) } })).toThrowError(
      'run: into is for runs of one text or one image; a pair returns three sets of maps',
    );
    expect(model.run(pair).maps.cross.shape).toEqual([3, 4, g.target.length, g.source.length]);
    await expect(model.generate(g.source)).rejects.toThrowError(/generate\(\{ source \}\)/);
    await expect(model.generate({ source: [] })).rejects.toThrowError('the source has no tokens');
    await expect(model.generate({ source: g.source }, { maxNewTokens: 40 })).rejects.toThrowError(/maxNewTokens/);
    // A one-stack model has no pair to run.
    const bert = await engine.loadModel('default');
    expect(() => bert.run({ source: 'a', target: 'b' })).toThrowError(/is not an encoder-decoder model/);
    await expect(bert.generate({ source: 'a' })).rejects.toThrowError(/is not an encoder-decoder model/);
    bert.dispose();
    model.dispose();
  });
});
