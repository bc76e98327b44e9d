// A seeded corpus of varied strings for the tokenizer tests: accents, CJK, emoji,
// whitespace runs, contractions, very long words, control characters, random code
// points across the planes and lone surrogates.

/** A seeded corpus of at least 1,000 varied strings for the tokenizer. */
export function corpus(sentences: string[] = []): string[] {
  let seed = 12345;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  const words = [
    'the',
    'model',
    'attention',
    'héllo',
    'naïve',
    "don't",
    "it's",
    "y'all",
    'Straße',
    'ﬁne',
    'ＡＢＣ',
    '東京',
    '日本語',
    '한국어',
    '中文分词',
    '😀',
    '👍🏽',
    '👨‍👩‍👧',
    'مرحبا',
    'שלום',
    'Привет',
    'Γειά',
    'नमस्ते',
    '3.14',
    '1,000',
    '$5',
    '50%',
    'e-mail',
    'state-of-the-art',
    'U.S.A.',
    '...',
    '!!!',
    '?!',
    '—',
    '–',
    '"',
    "'",
    'supercalifragilisticexpialidocious',
    'a'.repeat(60),
    'zz'.repeat(40),
    '\u200d',
    '\u200b',
    '\u00ad',
    'x\u0301',
    'ẞ',
    'Ⅻ',
    '½',
    '①',
    '㎏',
    '\ufeff',
    '\u2028',
    'tab\there',
    'new\nline',
    '\u0000',
    '\u0007',
    '\ud800',
    '\udfff',
  ];
  const spaces = [' ', ' ', ' ', '  ', '   ', '\t', '\n', ' \u00a0', '\u3000'];
  const out = [...sentences, '', ' ', '   ', '\t\n', '▁', '▁▁', '<unk>', '<s>', '</s>'];
  while (out.length < 1200) {
    const kind = rand();
    if (kind < 0.6) {
      const n = 1 + Math.floor(rand() * 12);
      out.push(
        Array.from({ length: n }, () => pick(words) + pick(spaces))
          .join('')
          .trim(),
      );
    } else if (kind < 0.85) {
      // random code points across planes, including unassigned ones and lone surrogates
      const n = 1 + Math.floor(rand() * 10);
      out.push(
        Array.from({ length: n }, () => {
          const r = rand();
          const cp =
            r < 0.4
              ? 0x20 + Math.floor(rand() * 0x5f)
              : r < 0.8
                ? Math.floor(rand() * 0xffff)
                : 0x10000 + Math.floor(rand() * 0xfffff);
          return cp <= 0xffff ? String.fromCharCode(cp) : String.fromCodePoint(cp);
        }).join(''),
      );
    } else {
      out.push(pick(words).repeat(1 + Math.floor(rand() * 8)) + pick(spaces) + pick(words).toUpperCase());
    }
  }
  return out;
}

/**
 * The corpus for LLM tokenizers: corpus() plus what their pre-tokenizers split on: code, digit runs,
 * contractions in either case, runs of spaces and newlines, CJK without spaces, and the tokenizer's own
 * special-token text (`specials`) inside sentences.
 */
export function llmCorpus(specials: string[]): string[] {
  let seed = 777;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  const pieces = [
    'def f(x):\n    return x**2 + 1',
    'for (let i = 0; i < n; i++) { sum += a[i]; }',
    '#include <stdio.h>\nint main() { printf("%d\\n", 42); }',
    'SELECT * FROM users WHERE id = 7;',
    '    indented\n\n\n    code',
    '1234567890',
    '3.14159265358979',
    '2024-11-23T17:30:00Z',
    "I'M",
    "YOU'RE",
    "we'LL",
    "they'VE",
    "She'D",
    "it'S",
    '東京は日本の首都です。',
    '我爱自然语言处理',
    'ひらがなとカタカナ',
    '👩‍💻🚀✨',
    '\n\n\n',
    '  \n  \n',
    '\r\n',
    ' \t ',
    'https://huggingface.co/HuggingFaceTB/SmolLM2-135M',
    'naïve café résumé',
    'Ω≈ç√∫˜µ≤≥÷',
    'x'.repeat(300),
    'ab'.repeat(120),
    '▁leading metaspace',
    ' leading space',
    'trailing space ',
  ];
  const out = corpus([...pieces, ...specials]);
  while (out.length < 1600) {
    const n = 1 + Math.floor(rand() * 6);
    const parts = Array.from({ length: n }, () => (rand() < 0.25 && specials.length ? pick(specials) : pick(pieces)));
    out.push(parts.join(pick(['', ' ', '\n', '  '])));
  }
  return out;
}
