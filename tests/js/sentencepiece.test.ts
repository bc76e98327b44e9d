// SentencePiece unigram tokenizers against SentencePiece itself: models that Debian's spm_train trains here (on a
// generated corpus, tests/reference/spm_reference.py), each string encoded by Debian's python3-sentencepiece. The
// same models as Marian reads them (source.spm and target.spm with vocab.json, as transformers' MarianTokenizer
// computes the ids) and as T5 reads one (tokenizer.json, as transformers converts it), the latter also against
// @huggingface/tokenizers, whose Precompiled normalizer is NFKC rather than the model's charsmap: on text both leave
// as it is.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer as Reference } from '@huggingface/tokenizers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Tokenizer } from '../../dist/node.js';
import { SEQ2SEQ_GOLDENS, seq2seqFiles } from '../seq2seq.mjs';
import { corpus, llmCorpus } from './corpus.js';
import { engineFor } from './engines.js';

interface Encoded {
  pieces: string[];
  ids: number[];
  decoded: string;
}
type Side = 'source' | 'target' | 'fallback' | 'bare' | 't5';

// Text that exercises the normalizer: spaces at the ends and in runs, tabs and newlines, no-break and ideographic
// spaces, fullwidth, circled, ligature and halfwidth forms NFKC rewrites, combining accents, pieces no model holds
// (CJK, emoji, a lone control character), Marian's language codes and special tokens inside the text.
const EDGES = [
  '',
  ' ',
  '   ',
  'The cat sat on the mat.',
  '  leading and trailing  ',
  'runs   of    spaces',
  'tabs\tand\nnewlines\r\nhere',
  'no\u00a0break\u3000ideographic\u2003em',
  'Ｆｕｌｌｗｉｄｔｈ １２３ ＡＢＣ',
  'ﬁne ﬂow ① ② ㌀ ½ ™ ｶﾀｶﾅ',
  'cafe\u0301 vs café, nai\u0308ve',
  '中文 and 😀 and 👩‍💻',
  'a\u0007bell\u200bzero\ufeffwidth',
  '>>de<< Die Katze saß auf der Matte.',
  '>>fra<<Le chat',
  'Hallo </s> Welt <unk> und <pad>',
  '>> not a code',
  '1234567890 3.14 2026-11-27',
  'Straße ÜBER über Ärger',
  'x'.repeat(300),
];

const dir = mkdtempSync(join(tmpdir(), 'attnscope-spm-'));
const strings = [...EDGES, ...corpus().slice(0, 400), ...llmCorpus(['</s>', '<unk>']).filter((_, i) => i % 2 === 0)]
  // Lone surrogates are not text SentencePiece (or UTF-8) can take.
  .map((s) => s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD'));
const reference: Record<Side, Encoded[]> & { marian: Array<{ ids: number[]; decoded: string }> } = JSON.parse(
  execFileSync('/usr/bin/python3', [new URL('../reference/spm_reference.py', import.meta.url).pathname, dir], {
    input: JSON.stringify(strings),
    maxBuffer: 1 << 28,
    encoding: 'utf8',
  }),
);
const file = (name: string) => new Uint8Array(readFileSync(join(dir, name)));

let engine: Engine;
beforeAll(async () => {
  engine = await engineFor('relaxed-simd', 1);
});
afterAll(() => {
  engine.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** Marian splits off a language code and special tokens before SentencePiece reads the text. */
const marianOnly = (s: string) => s.startsWith('>>') || /<\/s>|<unk>|<pad>/.test(s);

/** The strings whose ids differ, with both (of those `which` picks). */
function differences(ours: (s: string) => number[], theirs: (i: number) => number[], which = (_: string) => true) {
  const wrong: string[] = [];
  strings.forEach((s, i) => {
    if (!which(s)) return;
    const [a, b] = [ours(s), theirs(i)];
    if (a.join() !== b.join()) wrong.push(`${JSON.stringify(s)}: ${a.join()} vs ${b.join()}`);
  });
  return wrong;
}

describe("Marian's tokenizer: source.spm, target.spm and vocab.json", () => {
  let tokenizer: Tokenizer;
  const marian = (source: string) => ({
    'source.spm': file(`${source}.spm`),
    'target.spm': file('target.spm'),
    'vocab.json': file('vocab.json'),
    'tokenizer_config.json': file('tokenizer_config.json'),
  });
  const vocab: Record<string, number> = JSON.parse(readFileSync(join(dir, 'vocab.json'), 'utf8'));
  const toVocab = (pieces: string[]) => [...pieces.map((p) => vocab[p] ?? vocab['<unk>']), vocab['</s>']];
  beforeAll(async () => {
    tokenizer = await engine.loadTokenizer({ files: marian('source') });
  });
  afterAll(() => tokenizer.dispose());

  it(`gives MarianTokenizer's ids (python3-sentencepiece's pieces through vocab.json) on ${strings.length} strings`, () => {
    expect(strings.length).toBeGreaterThan(1000);
    expect(
      differences(
        (s) => Array.from(tokenizer.tokenize(s).ids),
        (i) => reference.marian[i].ids,
      ),
    ).toEqual([]);
    // The language code stays one token; the special tokens in the text are theirs.
    const { tokens } = tokenizer.tokenize('>>de<< Hallo </s> Welt');
    expect(tokens[0]).toBe('>>de<<');
    expect(tokens.filter((t) => t === '</s>')).toHaveLength(2);
  });

  it('tokenizes the target with target.spm (its own normalizer: case folded, digits apart)', () => {
    const wrong = differences(
      (s) => Array.from(tokenizer.tokenize(s, { target: true }).ids),
      (i) => toVocab(reference.target[i].pieces),
      (s) => !marianOnly(s),
    );
    expect(wrong).toEqual([]);
    expect(tokenizer.tokenize('Die KATZE', { target: true }).ids).toEqual(
      tokenizer.tokenize('die katze', { target: true }).ids,
    );
    expect(tokenizer.tokenize('Die KATZE').ids).not.toEqual(tokenizer.tokenize('die katze').ids);
  });

  it('decodes as MarianTokenizer.decode, special tokens kept or skipped', () => {
    const wrong: string[] = [];
    strings.forEach((s, i) => {
      const ids = reference.marian[i].ids;
      const ours = tokenizer.decode(ids);
      if (ours !== reference.marian[i].decoded) wrong.push(`${JSON.stringify(s)}: ${JSON.stringify(ours)}`);
    });
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(tokenizer.decode(tokenizer.tokenize('Die Katze saß').ids, { skipSpecialTokens: true })).toBe(
      'Die Katze saß',
    );
  });

  it('labels pieces as a person reads them: ▁ as ␣, special tokens as they are', () => {
    const { ids, tokens } = tokenizer.tokenize('the cat </s>');
    expect(tokenizer.labels(ids)).toEqual(tokens.map((t) => t.replace(/\u2581/g, '␣')));
  });

  it("a source model with byte fallback: unknown characters as SentencePiece's byte pieces", async () => {
    const fallback = await engine.loadTokenizer({ files: marian('fallback') });
    const wrong = differences(
      (s) => Array.from(fallback.tokenize(s).ids),
      (i) => toVocab(reference.fallback[i].pieces),
      (s) => !marianOnly(s),
    );
    fallback.dispose();
    expect(wrong).toEqual([]);
    expect(reference.fallback[strings.indexOf('中文 and 😀 and 👩‍💻')].pieces).toContain('<0xE4>');
  });

  it('a source model with no dummy prefix and its spaces kept', async () => {
    const bare = await engine.loadTokenizer({ files: marian('bare') });
    const wrong = differences(
      (s) => Array.from(bare.tokenize(s).ids),
      (i) => toVocab(reference.bare[i].pieces),
      (s) => !marianOnly(s),
    );
    bare.dispose();
    expect(wrong).toEqual([]);
  });

  it('broken .spm files are clear errors, and the engine goes on', async () => {
    const good = file('source.spm');
    const cases: Array<[string, Uint8Array, RegExp]> = [
      ['empty', new Uint8Array(), /source\.spm: not a SentencePiece model \(it has no pieces\)/],
      ['text', new TextEncoder().encode('{"not": "protobuf"}'), /source\.spm: not a SentencePiece model/],
      ['cut short', good.slice(0, 1000), /source\.spm: not a SentencePiece model \(a field of \d+ bytes runs past/],
      ['a BPE model', file('bpe.spm'), /source\.spm: a BPE SentencePiece model; AttnScope reads unigram ones/],
    ];
    for (const [, bytes, message] of cases)
      await expect(engine.loadTokenizer({ files: { ...marian('source'), 'source.spm': bytes } })).rejects.toThrow(
        message,
      );
    // A charsmap whose trie claims more bytes than it has.
    const bent = good.slice();
    const at = findCharsmap(bent);
    bent[at] = 0xff;
    bent[at + 1] = 0xff;
    bent[at + 2] = 0xff;
    await expect(engine.loadTokenizer({ files: { ...marian('source'), 'source.spm': bent } })).rejects.toThrow(
      /source\.spm: the precompiled charsmap's trie of \d+ bytes does not fit/,
    );
    await expect(
      engine.loadTokenizer({ files: { 'source.spm': good, 'vocab.json': file('vocab.json') } }),
    ).rejects.toThrow(/needs source\.spm, target\.spm and vocab\.json together/);
    expect(Array.from(tokenizer.tokenize(strings[3]).ids)).toEqual(reference.marian[3].ids);
  });
});

describe('a Marian model with its tokenizer', () => {
  it('reads the source with source.spm, the target with target.spm after <pad>, and writes text', async () => {
    // The Marian golden's checkpoint (tests/golden/seq2seq.json) widened to this vocabulary.
    const golden = SEQ2SEQ_GOLDENS.find((g) => (g.config.architectures as string[])[0] === 'MarianMTModel')!;
    const vocab: Record<string, number> = JSON.parse(readFileSync(join(dir, 'vocab.json'), 'utf8'));
    const size = Object.keys(vocab).length;
    const d = golden.config.d_model as number;
    const wave = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed));
    const pad = vocab['<pad>'];
    const files = {
      ...seq2seqFiles(
        golden,
        {
          'model.shared.weight': { shape: [size, d], data: wave(size * d, 1) },
          'model.encoder.embed_tokens.weight': { shape: [size, d], data: wave(size * d, 1) },
          'model.decoder.embed_tokens.weight': { shape: [size, d], data: wave(size * d, 1) },
          'lm_head.weight': { shape: [size, d], data: wave(size * d, 1) },
          final_logits_bias: { shape: [1, size], data: wave(size, 2) },
        },
        { vocab_size: size, pad_token_id: pad, decoder_start_token_id: pad },
      ),
      'source.spm': file('source.spm'),
      'target.spm': file('target.spm'),
      'vocab.json': file('vocab.json'),
      'tokenizer_config.json': file('tokenizer_config.json'),
    };
    const model = await engine.loadModel({ files });
    expect(model.info.architecture).toBe('MarianMTModel');
    const [source, target] = ['The cat sat on the mat.', 'Die KATZE saß']; // the target side folds case
    const r = model.run({ source, target });
    expect(Array.from(r.sourceIds)).toEqual(Array.from(model.tokenize(source).ids));
    const targetIds = Array.from(model.tokenize(target, { target: true }).ids);
    expect(Array.from(r.targetIds)).toEqual([pad, ...targetIds.slice(0, -1)]); // no </s> at the end
    expect(r.targetTokens[0]).toBe('<pad>');
    expect(r.targetTokens.slice(1).join('')).toBe(
      model.tokenize('die katze saß', { target: true }).tokens.slice(0, -1).join(''),
    );
    const g = await model.generate({ source }, { maxNewTokens: 5, temperature: 0, stopAtEos: false });
    expect(g.targetIds[0]).toBe(pad);
    expect(g.text).toBe(model.decode(g.targetIds, { skipSpecialTokens: true }));
    model.dispose();
  });
});

describe("T5's tokenizer.json: Unigram, SentencePiece's charsmap", () => {
  const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
  const jsReference = new Reference(json, {});
  // Text NFKC leaves as it is, and the charsmap too: ASCII and Latin-1's letters, no control characters.
  const plain = (s: string) => /^[\x20-\x7e\u00c0-\u00ff]*$/.test(s) && s.normalize('NFKC') === s;

  for (const layout of ['tokenizer.json', 'tokenizer-new.json']) {
    describe(layout === 'tokenizer.json' ? 'the legacy layout' : 'the current layout', () => {
      let tokenizer: Tokenizer;
      beforeAll(async () => {
        tokenizer = await engine.loadTokenizer({ files: { 'tokenizer.json': file(layout) } });
      });
      afterAll(() => tokenizer.dispose());

      it("gives python3-sentencepiece's ids, then </s>", () => {
        // Special tokens in the text are tokenizer.json's added tokens (as transformers' fast tokenizer splits them),
        // where SentencePiece reads them as text: those strings are held to @huggingface/tokenizers below.
        const special = (s: string) => /<\/s>|<unk>|<pad>/.test(s);
        const wrong = differences(
          (s) => (special(s) ? [] : Array.from(tokenizer.tokenize(s).ids)),
          (i) => (special(strings[i]) ? [] : [...reference.t5[i].ids, 1]),
        );
        expect(wrong).toEqual([]);
        expect(strings.filter(special).some(plain)).toBe(true);
      });

      it("gives @huggingface/tokenizers' ids and text on text both normalizers leave alone", () => {
        const chosen = strings.filter(plain);
        expect(chosen.length).toBeGreaterThan(100);
        const wrong: string[] = [];
        for (const s of chosen) {
          const ours = Array.from(tokenizer.tokenize(s).ids);
          const theirs = jsReference.encode(s).ids;
          if (ours.join() !== theirs.join()) wrong.push(`${JSON.stringify(s)}: ${ours.join()} vs ${theirs.join()}`);
          const text = tokenizer.decode(ours, { skipSpecialTokens: true });
          const expected = jsReference.decode(theirs, {
            skip_special_tokens: true,
            clean_up_tokenization_spaces: false,
          });
          if (text !== expected) wrong.push(`decoding ${JSON.stringify(s)}: ${JSON.stringify(text)}`);
        }
        expect(wrong.slice(0, 5)).toEqual([]);
      });
    });
  }

  it('a null charsmap (as some exports write it) normalizes nothing', async () => {
    const bare = { ...json, normalizer: { type: 'Precompiled', precompiled_charsmap: null } };
    const files = (j: unknown) => ({ 'tokenizer.json': new TextEncoder().encode(JSON.stringify(j)) });
    const [none, mapped] = [
      await engine.loadTokenizer({ files: files(bare) }),
      await engine.loadTokenizer({ files: files(json) }),
    ];
    const text = 'Ｈｅｌｌｏ ﬁne ① the cat';
    const ids = Array.from(none.tokenize(text).ids);
    expect(ids).toEqual(new Reference({ ...json, normalizer: null }, {}).encode(text).ids);
    expect(ids).not.toEqual(Array.from(mapped.tokenize(text).ids));
    expect(Array.from(mapped.tokenize(text).ids)).toEqual(Array.from(mapped.tokenize('Hello fine 1 the cat').ids));
    none.dispose();
    mapped.dispose();
  });
});

/** The byte offset of the first model's normalizer charsmap length prefix (NormalizerSpec field 2 in field 3). */
function findCharsmap(bytes: Uint8Array): number {
  // The charsmap starts with its trie's size, a little-endian uint32 a multiple of 4: find the nmt_nfkc blob by the
  // rule name that precedes it ("nmt_nfkc" in field 1, then field 2's tag 0x12 and a varint length).
  const name = new TextEncoder().encode('nmt_nfkc');
  for (let i = 0; i + name.length < bytes.length; i++)
    if (name.every((b, k) => bytes[i + k] === b) && bytes[i + name.length] === 0x12) {
      let at = i + name.length + 1;
      while (bytes[at] & 0x80) at++;
      return at + 1;
    }
  throw new Error('no nmt_nfkc charsmap in the model');
}
