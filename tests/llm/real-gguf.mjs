// GGUF files in the real shapes of the 1-3B models people study, with random weights written straight as blocks
// (random codes and scales; no float weights are drawn, and none are quantized): for memory and speed, not for
// numbers. A file holds every tensor its architecture's GGUF holds, under llama.cpp's names and metadata
// (decoderCheckpoint's GGUF twin, from the shapes alone).
import { decoderCheckpoint } from './checkpoints.mjs';
import { GGML, QUANT, gguf } from './gguf.mjs';

/** @typedef {import('./checkpoints.mjs').DecoderSpec} DecoderSpec */
/** @typedef {import('./quantize.mjs').QuantType | 'BF16'} TensorType */

/** The real models' config.json values, as decoder specs. */
export const REAL_GGUF_SHAPES = /** @type {const} */ ({
  'Llama-3.2-1B': {
    arch: 'llama',
    vocab: 128256,
    d: 2048,
    layers: 16,
    heads: 32,
    kvHeads: 8,
    ffn: 8192,
    tied: true,
    theta: 500000,
    maxPositions: 131072,
    ropeScaling: {
      rope_type: 'llama3',
      factor: 32,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 8192,
    },
  },
  'Qwen3-1.7B': {
    arch: 'qwen3',
    vocab: 151936,
    d: 2048,
    layers: 28,
    heads: 16,
    kvHeads: 8,
    headDim: 128,
    ffn: 6144,
    tied: true,
    theta: 1000000,
    maxPositions: 40960,
  },
  'Gemma-2-2B': {
    arch: 'gemma2',
    vocab: 256000,
    d: 2304,
    layers: 26,
    heads: 8,
    kvHeads: 4,
    headDim: 256,
    ffn: 9216,
    window: 4096,
    attnSoftcap: 50,
    finalSoftcap: 30,
    queryPreAttnScalar: 256,
    maxPositions: 8192,
  },
});

/**
 * llama.cpp's Q4_K_M (llama-quantize, no importance matrix): Q6_K for the output (the embedding, when tied), and for
 * attn_v and ffn_down in the first and last eighth of the layers and every third between; Q4_K for the rest.
 * @param {number} layers
 * @returns {(name: string) => TensorType}
 */
export const q4KM = (layers) => (name) => {
  if (name === 'output.weight' || name === 'token_embd.weight') return 'Q6_K';
  const layer = Number(/^blk\.(\d+)\./.exec(name)?.[1] ?? -1);
  const moreBits = layer < layers / 8 || layer >= (7 * layers) / 8 || (layer - Math.floor(layers / 8)) % 3 === 2;
  return /attn_v|ffn_down/.test(name) && moreBits ? 'Q6_K' : 'Q4_K';
};

/**
 * Fills `bytes` with xorshift32's stream from `seed` (deterministic, and in Node and browsers alike).
 * @param {Uint8Array | Uint16Array} array @param {number} seed
 */
function randomFill(array, seed) {
  const words = new Uint32Array(array.buffer, array.byteOffset, array.byteLength >> 2);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x;
  }
}
let seed = 1;

/** An f16's bits for a scale of 2^e (e from -24 up). @param {number} e */
const halfOf = (e) => (e + 15) << 10;

/**
 * Random blocks of `type` for `count` values: random codes, d (and dmin) small powers of two, so that values stay in
 * a trained model's range.
 * @param {import('./quantize.mjs').QuantType} type @param {number} count
 */
function randomBlocks(type, count) {
  const { values, bytes } = QUANT[type];
  const out = new Uint8Array((count / values) * bytes);
  randomFill(out, seed++);
  const view = new DataView(out.buffer);
  for (let b = 0; b < count / values; b++) {
    const o = b * bytes;
    if (type === 'Q8_0' || type === 'Q4_0') view.setUint16(o, halfOf(-12), true);
    else if (type === 'Q4_K') (view.setUint16(o, halfOf(-14), true), view.setUint16(o + 2, halfOf(-14), true));
    else view.setUint16(o + 208, halfOf(-17), true);
  }
  return out;
}

/** Random BF16 bits: a sign, an exponent of 2^-9 … 2^-2, 7 random mantissa bits. @param {number} count */
function randomBf16(count) {
  const out = new Uint16Array(count);
  randomFill(out, seed++);
  for (let i = 0; i < count; i++) out[i] = (out[i] & 0x807f) | ((118 + ((out[i] >> 7) & 7)) << 7);
  return out;
}

/**
 * A GGUF in a real model's shape, each matrix of the type `typeOf(name)` gives, norms 1.
 * @param {keyof typeof REAL_GGUF_SHAPES} name @param {(name: string) => TensorType} typeOf
 * @param {Array<[string, number, unknown]>} [extraKeys] metadata beside the architecture's (general.file_type, ...)
 * @param {{ tokenizer?: boolean }} [options] tokenizer: a byte-level BPE of the model's whole vocabulary in the
 *   file's tokenizer.ggml keys (byteLevelTokenizer's), so that text can be typed; else llama.cpp's `test` vocabulary
 */
export function realShapeGguf(name, typeOf, extraKeys = [], options = {}) {
  const spec = /** @type {DecoderSpec} */ ({ ...REAL_GGUF_SHAPES[name], shapesOnly: true, ...options });
  const [keys, tensors] = decoderCheckpoint(spec).ggufParts();
  let parameters = 0;
  const filled = tensors.map((t) => {
    const count = t.dims.reduce((a, b) => a * b, 1);
    if (t.dims.length === 1) return t.data.length ? t : { ...t, data: new Float32Array(count).fill(1) };
    parameters += count;
    const type = typeOf(t.name);
    if (type === 'BF16') return { ...t, type: GGML.BF16, data: randomBf16(count) };
    return { ...t, type: QUANT[type].id, data: randomBlocks(type, count) };
  });
  return { parameters, bytes: gguf([...keys, ...extraKeys], filled) };
}
