// Whisper's words from its text tokens, as transformers' WhisperTokenizer groups them (_combine_tokens_into_words):
// tokens join until one decodes to whole characters; then, in languages written with spaces, a piece that starts
// with a space or is one ASCII punctuation mark starts a word; opening punctuation joins the word after it, closing
// punctuation the word before.

/** Languages written without spaces between words: their words are whole characters. */
const UNSPACED = new Set(['zh', 'ja', 'th', 'lo', 'my', 'yue']);
const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'; // Python's string.punctuation
const PREPENDED = '"\'“¡¿([{-';
const APPENDED = '"\'.。,，!！?？:：”)]}、';

/** A word and its tokens, as indices into the tokens grouped. */
export interface WordSpan {
  word: string;
  indices: number[];
}

/** Groups `ids` (text tokens only) into words; `decode` turns ids into text. */
export function groupWords(ids: readonly number[], decode: (ids: number[]) => string, language = 'en'): WordSpan[] {
  let words = pieces(ids, decode);
  if (!UNSPACED.has(language)) {
    const joined: WordSpan[] = [];
    for (const p of words) {
      const starts = p.word.startsWith(' ') || PUNCTUATION.includes(p.word.trim()) || joined.length === 0;
      if (starts) joined.push({ word: p.word, indices: [...p.indices] });
      else {
        const last = joined[joined.length - 1];
        last.word += p.word;
        last.indices.push(...p.indices);
      }
    }
    words = joined;
  }
  // Opening punctuation onto the word after it, from the end.
  for (let i = words.length - 2, j = words.length - 1; i >= 0; i--) {
    if (words[i].word.startsWith(' ') && PREPENDED.includes(words[i].word.trim())) {
      words[j] = { word: words[i].word + words[j].word, indices: [...words[i].indices, ...words[j].indices] };
      words[i] = { word: '', indices: [] };
    } else j = i;
  }
  // Closing punctuation onto the word before it.
  for (let i = 0, j = 1; j < words.length; j++) {
    if (!words[i].word.endsWith(' ') && APPENDED.includes(words[j].word)) {
      words[i] = { word: words[i].word + words[j].word, indices: [...words[i].indices, ...words[j].indices] };
      words[j] = { word: '', indices: [] };
    } else i = j;
  }
  return words.filter((w) => w.word !== '' && w.indices.length > 0);
}

/** Runs of tokens that decode to whole characters (no U+FFFD but where the whole text has one). */
function pieces(ids: readonly number[], decode: (ids: number[]) => string): WordSpan[] {
  const whole = decode([...ids]);
  const out: WordSpan[] = [];
  let current: number[] = [],
    indices: number[] = [],
    offset = 0;
  ids.forEach((id, i) => {
    current.push(id);
    indices.push(i);
    const text = decode(current);
    const bad = text.indexOf('\uFFFD');
    if (bad < 0 || whole[offset + bad] === '\uFFFD') {
      out.push({ word: text, indices });
      offset += text.length;
      current = [];
      indices = [];
    }
  });
  return out;
}
