// Encoder-decoder checkpoints for the tests: the BART goldens of tests/golden/seq2seq.json (written by
// make_seq2seq_goldens.py) as model files, and a small BART tokenizer.json (byte-level BPE with its RobertaProcessing)
// with a checkpoint whose vocabulary fits it. Plain JS: Vitest and the browser test (Node) both import it.
import { readFileSync } from 'node:fs';

import { safetensors } from './safetensors.mjs';

/** @typedef {{ shape: number[], data: number[] }} Stored */
/**
 * @typedef {{ name: string, config: Record<string, unknown>, state: Record<string, Stored>, source: number[],
 *   target: number[], encoder: Stored, decoder: Stored, cross: Stored, logits: Stored, greedy: number[] }} Seq2SeqGolden
 */

/** @type {Seq2SeqGolden[]} */
export const SEQ2SEQ_GOLDENS = JSON.parse(
  readFileSync(new URL('./golden/seq2seq.json', import.meta.url), 'utf8'),
).cases;

/**
 * A golden's checkpoint as model files: config.json and model.safetensors (F32).
 * @param {Seq2SeqGolden} golden
 * @param {Record<string, { shape: number[], data: Float32Array }>} [replace] tensors to put in place of the golden's
 * @param {Record<string, unknown>} [config] fields to change in its config.json
 * @returns {Record<string, Uint8Array>}
 */
export function seq2seqFiles(golden, replace = {}, config = {}) {
  const state = Object.fromEntries(
    Object.entries(golden.state).map(([name, t]) => [name, { shape: t.shape, data: Float32Array.from(t.data) }]),
  );
  return {
    'config.json': new TextEncoder().encode(JSON.stringify({ ...golden.config, ...config })),
    'model.safetensors': safetensors({ ...state, ...replace }),
  };
}

/** GPT-2's byte-to-character table: every byte a printable character, as byte-level BPE vocabularies spell them. */
function byteCharacters() {
  const printable = (/** @type {number} */ b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  const out = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCharCode(printable(b) ? b : 256 + extra++));
  return out;
}

/** A small BART tokenizer.json: its four special tokens, the 256 bytes, and a few merges, with RobertaProcessing. */
export function bartTokenizer() {
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
  /** @type {Record<string, number>} */
  const vocab = {};
  for (const t of [...specials, ...byteCharacters(), ...merges.map(([a, b]) => a + b)])
    vocab[t] ??= Object.keys(vocab).length;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true },
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

/**
 * The first golden's BART with a vocabulary the size of bartTokenizer()'s (its embedding and final_logits_bias
 * replaced by deterministic ones of that size), and the tokenizer.json: a BART that runs on text.
 * @returns {Record<string, Uint8Array>}
 */
export function bartWithTokenizer() {
  const golden = SEQ2SEQ_GOLDENS[0];
  const json = bartTokenizer();
  const vocab = Object.keys(json.model.vocab).length;
  const d = /** @type {number} */ (golden.config.d_model);
  const wave = (/** @type {number} */ n, /** @type {number} */ seed) =>
    Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 0.5);
  return {
    ...seq2seqFiles(
      golden,
      {
        'model.shared.weight': { shape: [vocab, d], data: wave(vocab * d, 1) },
        final_logits_bias: { shape: [1, vocab], data: wave(vocab, 2) },
      },
      { vocab_size: vocab },
    ),
    'tokenizer.json': new TextEncoder().encode(JSON.stringify(json)),
  };
}
