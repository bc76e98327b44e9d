// Encoder-decoder models (BART) through the package: random checkpoints in the Hub's names and layout, held to
// PyTorch's own encoder and decoder layers (tests/golden/make_seq2seq_goldens.py), and texts tokenized as Hugging
// Face's tokenizers do (a byte-level BPE tokenizer.json with BART's RobertaProcessing, against
// @huggingface/tokenizers).
import { readFileSync } from 'node:fs';
import { Tokenizer as Reference } from '@huggingface/tokenizers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, MapSet } from '../../dist/node.js';
import { safetensors } from '../safetensors.mjs';
import { BUILDS, engineFor } from './engines.js';

interface Golden {
  name: string;
  config: Record<string, unknown>;
  state: Record<string, { shape: number[]; data: number[] }>;
  source: number[];
  target: number[];
  encoder: { shape: number[]; data: number[] };
  decoder: { shape: number[]; data: number[] };
  cross: { shape: number[]; data: number[] };
  logits: { shape: number[]; data: number[] };
}

const goldens: Golden[] = JSON.parse(readFileSync(new URL('../golden/seq2seq.json', import.meta.url), 'utf8')).cases;

type State = Record<string, { shape: number[]; data: Float32Array }>;

function filesOf(config: Record<string, unknown>, state: State) {
  return {
    'config.json': new TextEncoder().encode(JSON.stringify(config)),
    'model.safetensors': safetensors(state),
  };
}

const stateOf = (g: Golden): State =>
  Object.fromEntries(
    Object.entries(g.state).map(([name, t]) => [name, { shape: t.shape, data: Float32Array.from(t.data) }]),
  );

function worstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

/** GPT-2's byte-to-character table: every byte a printable character, as byte-level BPE's vocabularies spell them. */
function byteCharacters(): string[] {
  const printable = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const out: string[] = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCharCode(printable(b) ? b : 256 + extra++));
  return out;
}

/** A small BART tokenizer.json: its four special tokens, the 256 bytes, and a few merges, with RobertaProcessing. */
function bartTokenizer() {
  const specials = ['<s>', '<pad>', '</s>', '<unk>'];
  const merges = [
    ['Ġ', 't'],
    ['h', 'e'],
    ['Ġt', 'he'],
    ['a', 't'],
    ['Ġ', 'c'],
    ['Ġc', 'at'],
    ['Ġ', 'h'],
    ['Ġh', 'at'],
  ];
  const vocab: Record<string, number> = {};
  for (const t of [...specials, ...byteCharacters(), ...merges.map(([a, b]) => a + b)])
    vocab[t] ??= Object.keys(vocab).length;
  const added = specials.map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: {
      type: 'RobertaProcessing',
      sep: ['</s>', 2],
      cls: ['<s>', 0],
      trim_offsets: true,
      add_prefix_space: false,
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      vocab,
      merges: merges.map(([a, b]) => `${a} ${b}`),
    },
  };
}

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it.each(goldens.map((g) => [g.name, g] as const))(
    '%s: every encoder, decoder and cross-attention map and the logits match PyTorch within 1e-4',
    async (_, g) => {
      const model = await engine.loadModel({ files: filesOf(g.config, stateOf(g)) });
      expect(model.info).toMatchObject({
        architecture: 'BartForConditionalGeneration',
        encoderDecoder: true,
        encoderLayers: 2,
        encoderHeads: 4,
        encoderMaxTokens: 32,
        layers: 3,
        heads: 4,
        causal: true,
        languageModel: true,
        decoderStartTokenId: 2,
        eosTokenIds: [2],
      });
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
    const g = goldens[0];
    const json = bartTokenizer();
    const vocab = Object.keys(json.model.vocab).length;
    const state = stateOf(g);
    const random = (n: number, seed: number) =>
      Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 0.5);
    state['model.shared.weight'] = { shape: [vocab, 16], data: random(vocab * 16, 1) };
    state['final_logits_bias'] = { shape: [1, vocab], data: random(vocab, 2) };
    const files = {
      ...filesOf({ ...g.config, vocab_size: vocab }, state),
      'tokenizer.json': new TextEncoder().encode(JSON.stringify(json)),
    };
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

  it('bad input is an error naming it, and the model stays usable', async () => {
    const g = goldens[0];
    const model = await engine.loadModel({ files: filesOf(g.config, stateOf(g)) });
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
    expect(model.run(pair).maps.cross.shape).toEqual([3, 4, g.target.length, g.source.length]);
    // A one-stack model has no pair to run.
    const bert = await engine.loadModel('default');
    expect(() => bert.run({ source: 'a', target: 'b' })).toThrowError(/is not an encoder-decoder model/);
    bert.dispose();
    model.dispose();
  });
});
