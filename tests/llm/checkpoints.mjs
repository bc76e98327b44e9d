// Small random decoder checkpoints, written twice: in the Hugging Face Hub's names and layout
// (config.json + model.safetensors), which AttnScope loads, and as GGUF in llama.cpp's names
// and metadata, which llama.cpp loads. The GGUF applies what llama.cpp's converter
// (convert_hf_to_gguf.py) applies: Llama's q/k rows permuted for its interleaved RoPE, Gemma's
// norm weights stored as 1 + w, and Gemma's query_pre_attn_scalar folded into the weights
// (llama.cpp scales queries by 1/√head_dim and reads no such key). Plain JS, for Vitest and Workers.
import { safetensors } from '../safetensors.mjs';
import { T, gguf } from './gguf.mjs';

/** The Hugging Face class and the GGUF architecture of each row. */
export const ARCHITECTURES = {
  llama: { hf: 'LlamaForCausalLM', gguf: 'llama' },
  mistral: { hf: 'MistralForCausalLM', gguf: 'llama' }, // llama.cpp runs Mistral as llama, without its window
  qwen2: { hf: 'Qwen2ForCausalLM', gguf: 'qwen2' },
  qwen3: { hf: 'Qwen3ForCausalLM', gguf: 'qwen3' },
  gemma2: { hf: 'Gemma2ForCausalLM', gguf: 'gemma2' },
  gemma3: { hf: 'Gemma3ForCausalLM', gguf: 'gemma3' },
  phi3: { hf: 'Phi3ForCausalLM', gguf: 'phi3' }, // q, k, v and gate, up stacked by rows; partial rotary; longrope
};

/**
 * A seeded standard normal source (mulberry32 and Box-Muller).
 * @param {number} seed
 */
export function normals(seed) {
  let s = seed >>> 0;
  const uniform = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

/**
 * @typedef {object} DecoderSpec
 * @property {keyof typeof ARCHITECTURES} arch
 * @property {number} [vocab] @property {number} [d] @property {number} [heads] @property {number} [kvHeads]
 * @property {number} [headDim] @property {number} [ffn] @property {number} [layers] @property {number} [maxPositions]
 * @property {boolean} [tied] @property {number} [theta] @property {object} [ropeScaling] rope_scaling as config.json holds it
 * @property {number} [window] sliding window (Mistral, Gemma) @property {string[]} [layerTypes] Gemma 3
 * @property {number} [queryPreAttnScalar] Gemma @property {number | null} [attnSoftcap] Gemma 2 @property {number | null} [finalSoftcap] Gemma
 * @property {number} [localTheta] Gemma 3 @property {number} [seed] @property {number} [headScale] the untied LM head's spread, × 1/√d
 * @property {number} [partialRotary] Phi-3: partial_rotary_factor, the share of each head RoPE turns
 * @property {{ short: number[], long: number[], original: number }} [longrope] Phi-3: rope_scaling longrope's factors
 *   (rotary dims / 2 each) and original_max_position_embeddings
 * @property {number} [ggufRotaryDims] a deliberate mistake: the GGUF's rope.dimension_count, not the converter's
 * @property {boolean} [interleavedRope] a deliberate mistake: Llama's q/k rows left unpermuted in the GGUF
 * @property {boolean} [shapesOnly] every tensor empty but for its shape (realShapeGguf fills them otherwise)
 * @property {'f32' | 'bf16'} [dtype] how model.safetensors stores the weights (bf16: rounded to nearest even; the GGUF
 *   twin and `tensors` then hold those rounded values, so both are the same model)
 * @property {boolean} [tokenizer] add a tokenizer.json (byteLevelTokenizer()); the vocabulary then holds its 320 tokens
 */

/** @typedef {{ shape: number[], data: Float32Array }} HfTensor */
/** @typedef {{ shape: number[], data: Float32Array | Uint16Array }} AnyTensor a float32 tensor, or BF16 bits */
/** @typedef {Required<Pick<DecoderSpec, 'vocab' | 'd' | 'heads' | 'kvHeads' | 'ffn' | 'layers' | 'maxPositions' | 'tied' | 'theta' | 'seed' | 'headScale'>> & DecoderSpec} Resolved */
/** @typedef {{ rope_type?: string, type?: string, factor: number, low_freq_factor?: number, high_freq_factor?: number, original_max_position_embeddings: number }} RopeScaling */

/**
 * The checkpoint in both forms.
 * @param {DecoderSpec} spec
 */
export function decoderCheckpoint(spec) {
  const arch = spec.arch;
  const gemma = arch.startsWith('gemma');
  /** @type {Resolved} */
  const s = {
    vocab: spec.tokenizer ? TOKENIZER_VOCAB : 96,
    d: 32,
    heads: 4,
    kvHeads: 2,
    ffn: 48,
    layers: 2,
    maxPositions: 256,
    tied: gemma,
    theta: arch === 'gemma3' ? 1e6 : 1e4,
    seed: 1,
    headScale: 2,
    ...spec,
  };
  const headDim = s.headDim ?? s.d / s.heads;
  const random = normals(s.seed);
  /** @type {(shape: number[], scale: number, offset?: number) => HfTensor} */
  const tensor = (shape, scale, offset = 0) => {
    const data = new Float32Array(s.shapesOnly ? 0 : shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = offset + scale * random();
    return { shape, data };
  };
  const norm = (/** @type {number} */ n) => tensor([n], 0.1, gemma ? 0 : 1);
  const q = s.heads * headDim;
  const kv = s.kvHeads * headDim;
  /** @type {Record<string, { shape: number[], data: Float32Array }>} */
  // Tied, the embedding is the LM head too: a smaller spread keeps the next-token distributions broad.
  const hf = { 'model.embed_tokens.weight': tensor([s.vocab, s.d], s.tied ? 0.35 : 1) };
  for (let l = 0; l < s.layers; l++) {
    const p = `model.layers.${l}.`;
    hf[`${p}input_layernorm.weight`] = norm(s.d);
    hf[`${p}self_attn.q_proj.weight`] = tensor([q, s.d], 1.5 / Math.sqrt(s.d));
    hf[`${p}self_attn.k_proj.weight`] = tensor([kv, s.d], 1.5 / Math.sqrt(s.d));
    hf[`${p}self_attn.v_proj.weight`] = tensor([kv, s.d], 1 / Math.sqrt(s.d));
    hf[`${p}self_attn.o_proj.weight`] = tensor([s.d, q], 1 / Math.sqrt(q));
    if (arch === 'qwen2') {
      hf[`${p}self_attn.q_proj.bias`] = tensor([q], 0.2);
      hf[`${p}self_attn.k_proj.bias`] = tensor([kv], 0.2);
      hf[`${p}self_attn.v_proj.bias`] = tensor([kv], 0.2);
    }
    if (arch === 'qwen3' || arch === 'gemma3') {
      hf[`${p}self_attn.q_norm.weight`] = norm(headDim);
      hf[`${p}self_attn.k_norm.weight`] = norm(headDim);
    }
    hf[`${p}post_attention_layernorm.weight`] = norm(s.d);
    if (gemma) {
      hf[`${p}pre_feedforward_layernorm.weight`] = norm(s.d);
      // llama.cpp's CPU GeGLU reads a table of fp16 values (~5e-4 relative error), and Gemma normalizes the MLP's
      // output: its norm here scales it to a quarter (1 + w ≈ 0.25), which keeps llama.cpp's rounding below the
      // comparison's 1e-4 in probability. The float64 reference tests (tests/cpp) hold the MLP at full size.
      hf[`${p}post_feedforward_layernorm.weight`] = tensor([s.d], 0.05, -0.75);
    }
    hf[`${p}mlp.gate_proj.weight`] = tensor([s.ffn, s.d], 1 / Math.sqrt(s.d));
    hf[`${p}mlp.up_proj.weight`] = tensor([s.ffn, s.d], 1 / Math.sqrt(s.d));
    hf[`${p}mlp.down_proj.weight`] = tensor([s.d, s.ffn], 1 / Math.sqrt(s.ffn));
  }
  hf['model.norm.weight'] = norm(s.d);
  if (!s.tied) hf['lm_head.weight'] = tensor([s.vocab, s.d], s.headScale / Math.sqrt(s.d));
  if (arch === 'phi3') stackPhi3(hf, s.layers);

  const config = hfConfig(s, headDim);
  if (s.dtype === 'bf16') for (const t of Object.values(hf)) t.data = fromBf16(toBf16(t.data));
  const stored = s.dtype === 'bf16' ? bf16Tensors(hf) : hf;
  /** @type {Record<string, Uint8Array>} */
  const files = {
    'config.json': new TextEncoder().encode(JSON.stringify(config)),
    ...(!s.shapesOnly && { 'model.safetensors': safetensors(stored) }),
  };
  if (s.tokenizer) files['tokenizer.json'] = new TextEncoder().encode(JSON.stringify(byteLevelTokenizer()));
  return {
    spec: s,
    config,
    tensors: hf,
    files,
    gguf: () => gguf(...ggufTwin(s, headDim, hf)),
    /** The twin's keys and tensors, to write otherwise (split, retyped, broken). */
    ggufParts: () => ggufTwin(s, headDim, hf),
  };
}

/**
 * Phi-3's layout: q, k, v rows stacked in qkv_proj, gate and up in gate_up_proj.
 * @param {Record<string, HfTensor>} hf @param {number} layers
 */
function stackPhi3(hf, layers) {
  /** @type {(names: string[], into: string) => void} */
  const stack = (names, into) => {
    const parts = names.map((n) => hf[n]);
    const data = new Float32Array(parts.reduce((a, t) => a + t.data.length, 0));
    let at = 0;
    for (const t of parts) data.set(t.data, (at += t.data.length) - t.data.length);
    hf[into] = { shape: [parts.reduce((a, t) => a + t.shape[0], 0), parts[0].shape[1]], data };
    for (const n of names) delete hf[n];
  };
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    stack(
      ['q', 'k', 'v'].map((x) => `${p}self_attn.${x}_proj.weight`),
      `${p}self_attn.qkv_proj.weight`,
    );
    stack([`${p}mlp.gate_proj.weight`, `${p}mlp.up_proj.weight`], `${p}mlp.gate_up_proj.weight`);
  }
}

/**
 * config.json as the Hub writes it for this row.
 * @param {Resolved} s @param {number} headDim
 */
function hfConfig(s, headDim) {
  const gemma = s.arch.startsWith('gemma');
  /** @type {Record<string, unknown>} */
  const c = {
    architectures: [ARCHITECTURES[s.arch].hf],
    model_type: s.arch === 'gemma3' ? 'gemma3_text' : s.arch,
    vocab_size: s.vocab,
    hidden_size: s.d,
    intermediate_size: s.ffn,
    num_hidden_layers: s.layers,
    num_attention_heads: s.heads,
    num_key_value_heads: s.kvHeads,
    head_dim: headDim,
    max_position_embeddings: s.maxPositions,
    rms_norm_eps: 1e-6,
    rope_theta: s.theta,
    rope_scaling: s.ropeScaling ?? null,
    tie_word_embeddings: s.tied,
    bos_token_id: s.tokenizer ? null : 1,
    eos_token_id: s.tokenizer ? TOKENIZER_VOCAB - 1 : 2,
    torch_dtype: s.dtype === 'bf16' ? 'bfloat16' : 'float32',
  };
  if (s.arch === 'llama') Object.assign(c, { hidden_act: 'silu', attention_bias: false, mlp_bias: false });
  if (s.arch === 'mistral') c.sliding_window = s.window ?? null;
  if (s.arch === 'qwen2' || s.arch === 'qwen3') Object.assign(c, { use_sliding_window: false, attention_bias: false });
  if (gemma) {
    Object.assign(c, {
      hidden_activation: 'gelu_pytorch_tanh',
      query_pre_attn_scalar: s.queryPreAttnScalar ?? headDim,
      sliding_window: s.window ?? 4096,
      final_logit_softcapping: s.finalSoftcap ?? null,
    });
  }
  if (s.arch === 'gemma2') c.attn_logit_softcapping = s.attnSoftcap ?? null;
  if (s.arch === 'phi3') {
    Object.assign(c, { hidden_act: 'silu', sliding_window: null, partial_rotary_factor: s.partialRotary ?? 1 });
    if (s.longrope) {
      c.original_max_position_embeddings = s.longrope.original;
      c.rope_scaling = { type: 'longrope', short_factor: s.longrope.short, long_factor: s.longrope.long };
    }
  }
  if (s.arch === 'gemma3') {
    c.rope_local_base_freq = s.localTheta ?? 1e4;
    if (s.layerTypes) c.layer_types = s.layerTypes;
    else c.sliding_window_pattern = 6;
  }
  return c;
}

/**
 * float32 values to bfloat16 bits, rounded to nearest even (as PyTorch's .to(torch.bfloat16)).
 * @param {Float32Array} values
 */
export function toBf16(values) {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = (bits[i] + 0x7fff + ((bits[i] >>> 16) & 1)) >>> 16;
  return out;
}

/** @param {Uint16Array} bits */
export function fromBf16(bits) {
  const out = new Uint32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = bits[i] << 16;
  return new Float32Array(out.buffer);
}

/**
 * The tensors as BF16 (their values already exact in bfloat16).
 * @param {Record<string, HfTensor>} hf
 */
function bf16Tensors(hf) {
  return Object.fromEntries(
    Object.entries(hf).map(([name, t]) => [
      name,
      { shape: t.shape, dtype: /** @type {'BF16'} */ ('BF16'), data: toBf16(t.data) },
    ]),
  );
}

/** The test tokenizer's vocabulary: 256 bytes, 63 merges and <|endoftext|>. */
export const TOKENIZER_VOCAB = 320;

/**
 * A byte-level BPE tokenizer.json as Llama 3's and Qwen's are made (a Split regex, then ByteLevel),
 * small: GPT-2's byte alphabet, 63 merges of common English, and <|endoftext|> (id 319) as an added token.
 * With a larger `size` (a real model's vocabulary, for speed and the page's bench), merges of letter and digit
 * pairs, then of a space with them, then of triples fill it, and <|endoftext|> is id size − 1.
 * @param {number} [size]
 */
export function byteLevelTokenizer(size = TOKENIZER_VOCAB) {
  /** @type {string[]} */
  const alphabet = [];
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    alphabet.push(String.fromCodePoint(printable ? b : next++));
  }
  /** @type {Record<string, number>} */
  const vocab = Object.fromEntries(alphabet.map((c, i) => [c, i]));
  let count = alphabet.length;
  const words = [
    'the',
    'and',
    'of',
    'to',
    'in',
    'is',
    'on',
    'at',
    'it',
    'he',
    'she',
    'was',
    'for',
    'cat',
    'sat',
    'mat',
  ];
  /** @type {string[][]} */
  const merges = [];
  const add = (/** @type {string} */ a, /** @type {string} */ b) => {
    if (vocab[a + b] !== undefined || count >= size - 1) return;
    merges.push([a, b]);
    vocab[a + b] = count++;
  };
  const space = alphabet[32]; // GPT-2's byte alphabet spells a space as 'Ġ'
  for (const w of words) {
    let piece = space;
    for (const c of w) (add(piece, c), (piece += c));
  }
  for (const w of words) for (let i = 1; i < w.length; i++) add(w.slice(0, i), w[i]);
  for (let b = 97; b < 123 && count < size - 1; b++) add(space, alphabet[b]);
  if (count < size - 1) {
    const chars = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'];
    const pairs = chars.flatMap((a) => chars.map((b) => a + b));
    for (const p of pairs) add(p[0], p[1]);
    for (const c of chars) add(space, c);
    for (const p of pairs) add(space + p[0], p[1]);
    for (const p of pairs) for (const c of chars) add(p, c);
    for (const p of pairs) for (const c of chars) add(space + p, c); // Gemma's 256,000
    if (count < size - 1) throw new Error(`byteLevelTokenizer: cannot fill a vocabulary of ${size}`);
  }
  return {
    version: '1.0',
    added_tokens: [{ id: size - 1, content: '<|endoftext|>', special: true, normalized: false }],
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        {
          type: 'Split',
          pattern: {
            Regex:
              "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
          },
          behavior: 'Isolated',
          invert: false,
        },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, fuse_unk: false, byte_fallback: false, vocab, merges },
  };
}

/**
 * Llama's q/k rows from rotate-half order to llama.cpp's interleaved pairs (the converter's permute).
 * @template {Float32Array | Uint16Array} D
 * @param {{ shape: number[], data: D }} t @param {number} heads @returns {D}
 */
function permute({ shape, data }, heads) {
  const [rows, cols] = shape.length === 2 ? shape : [shape[0], 1];
  const per = rows / heads;
  const out = new /** @type {any} */ (data.constructor)(data.length);
  if (!data.length) return out; // shapes only
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < per / 2; i++)
      for (let j = 0; j < 2; j++) {
        const from = h * per + j * (per / 2) + i; // the converter: reshape(heads, 2, per/2, …).swapaxes(1, 2)
        const to = h * per + 2 * i + j;
        out.set(data.subarray(from * cols, (from + 1) * cols), to * cols);
      }
  return out;
}

/**
 * llama3 RoPE as llama.cpp takes it: per-frequency divisors in a rope_freqs tensor (the converter's formula).
 * @param {Resolved} s @param {number} headDim
 */
function llama3Factors(s, headDim) {
  const r = /** @type {RopeScaling} */ (s.ropeScaling);
  const [factor, low, high, old] = [
    r.factor,
    r.low_freq_factor ?? 1,
    r.high_freq_factor ?? 4,
    r.original_max_position_embeddings,
  ];
  const out = new Float32Array(headDim / 2);
  for (let i = 0; i < headDim / 2; i++) {
    const wavelen = (2 * Math.PI) / (1 / s.theta ** ((2 * i) / headDim));
    if (wavelen < old / high) out[i] = 1;
    else if (wavelen > old / low) out[i] = factor;
    else {
      const smooth = (old / wavelen - low) / (high - low);
      out[i] = 1 / ((1 - smooth) / factor + smooth);
    }
  }
  return out;
}

/**
 * A byte-level tokenizer.json (byteLevelTokenizer's: Llama 3's split) as llama.cpp's converter writes it into a GGUF:
 * the tokens in id order, added special ones as control tokens, the merges as "a b", <|endoftext|> as EOS.
 * @param {ReturnType<typeof byteLevelTokenizer>} t
 */
function ggufTokenizer(t) {
  const tokens = Object.entries(t.model.vocab)
    .sort((a, b) => a[1] - b[1])
    .map(([token]) => token);
  const types = tokens.map(() => 1);
  for (const a of t.added_tokens) ((tokens[a.id] = a.content), (types[a.id] = 3));
  return [
    ['tokenizer.ggml.model', T.STRING, 'gpt2'],
    ['tokenizer.ggml.pre', T.STRING, 'llama-bpe'],
    ['tokenizer.ggml.tokens', T.ARRAY, T.STRING, tokens],
    ['tokenizer.ggml.token_type', T.ARRAY, T.INT32, types],
    ['tokenizer.ggml.merges', T.ARRAY, T.STRING, t.model.merges.map((m) => m.join(' '))],
    ['tokenizer.ggml.eos_token_id', T.UINT32, t.added_tokens[0].id],
    ['tokenizer.ggml.add_bos_token', T.BOOL, false],
  ];
}

/**
 * The GGUF twin, as llama.cpp's converter would write it.
 * @param {Resolved} s @param {number} headDim @param {Record<string, AnyTensor>} hf (BF16 matrices stay BF16)
 */
function ggufTwin(s, headDim, hf) {
  const arch = ARCHITECTURES[s.arch].gguf;
  const gemma = s.arch.startsWith('gemma');
  const A = (/** @type {string} */ key) => `${arch}.${key}`;
  /** @type {Array<any>} */
  const keys = [
    ['general.architecture', T.STRING, arch],
    [A('context_length'), T.UINT32, s.maxPositions],
    [A('embedding_length'), T.UINT32, s.d],
    [A('block_count'), T.UINT32, s.layers],
    [A('feed_forward_length'), T.UINT32, s.ffn],
    [A('attention.head_count'), T.UINT32, s.heads],
    [A('attention.head_count_kv'), T.UINT32, s.kvHeads],
    [A('attention.key_length'), T.UINT32, headDim],
    [A('attention.value_length'), T.UINT32, headDim],
    [A('attention.layer_norm_rms_epsilon'), T.FLOAT32, 1e-6],
    [A('rope.freq_base'), T.FLOAT32, s.theta],
    ...(s.tokenizer
      ? ggufTokenizer(byteLevelTokenizer(s.vocab))
      : [
          ['tokenizer.ggml.model', T.STRING, 'test'],
          ['tokenizer.ggml.tokens', T.ARRAY, T.STRING, Array.from({ length: s.vocab }, (_, i) => `tok${i}`)],
        ]),
  ];
  const scaling = /** @type {RopeScaling | undefined} */ (s.ropeScaling);
  if (scaling && (scaling.rope_type ?? scaling.type) === 'linear')
    keys.push([A('rope.scaling.type'), T.STRING, 'linear'], [A('rope.scaling.factor'), T.FLOAT32, scaling.factor]);
  if (gemma) {
    keys.push([A('attention.sliding_window'), T.UINT32, s.window ?? 4096]);
    // llama.cpp cannot turn Gemma 2's caps off; one of 10⁶ changes nothing a float can hold.
    if (s.arch === 'gemma2') keys.push([A('attn_logit_softcapping'), T.FLOAT32, s.attnSoftcap ?? 1e6]);
    if (s.arch === 'gemma2' || s.finalSoftcap)
      keys.push([A('final_logit_softcapping'), T.FLOAT32, s.finalSoftcap ?? 1e6]);
  }
  if (s.arch === 'phi3') {
    // the converter: int(partial_rotary_factor × hidden_size) // heads rotary dims, longrope's attention factor
    const dims = s.ggufRotaryDims ?? Math.floor(Math.floor((s.partialRotary ?? 1) * s.d) / s.heads);
    keys.push([A('rope.dimension_count'), T.UINT32, dims], [A('attention.sliding_window'), T.UINT32, 0]);
    if (s.longrope) {
      const scale = s.maxPositions / s.longrope.original;
      const factor = scale > 1 ? Math.sqrt(1 + Math.log(scale) / Math.log(s.longrope.original)) : 1;
      keys.push(
        [A('rope.scaling.original_context_length'), T.UINT32, s.longrope.original],
        [A('rope.scaling.attn_factor'), T.FLOAT32, factor],
      );
    }
  }
  if (s.arch === 'gemma3') {
    keys.push([A('rope.freq_base_swa'), T.FLOAT32, s.localTheta ?? 1e4]);
    const types =
      s.layerTypes ??
      Array.from({ length: s.layers }, (_, i) => ((i + 1) % 6 ? 'sliding_attention' : 'full_attention'));
    keys.push([A('attention.sliding_window_pattern'), T.ARRAY, T.BOOL, types.map((t) => t === 'sliding_attention')]);
  }
  const plusOne = (/** @type {AnyTensor} */ t) => (gemma ? Float32Array.from(t.data, (x) => x + 1) : t.data);
  // llama.cpp scales queries by 1/√head_dim; Gemma's 1/√query_pre_attn_scalar goes into the weights.
  const qScale = gemma ? Math.sqrt(headDim / (s.queryPreAttnScalar ?? headDim)) : 1;
  /** @type {Array<{ name: string, dims: number[], data: Float32Array | Uint16Array }>} */
  const tensors = [];
  /** @type {(name: string, t: AnyTensor, data?: Float32Array | Uint16Array) => void} */
  const put = (name, t, data = t.data) => tensors.push({ name, dims: [...t.shape].reverse(), data });
  put('token_embd.weight', hf['model.embed_tokens.weight']);
  put('output_norm.weight', hf['model.norm.weight'], plusOne(hf['model.norm.weight']));
  if (!s.tied) put('output.weight', hf['lm_head.weight']);
  if (scaling && (scaling.rope_type ?? scaling.type) === 'llama3')
    tensors.push({ name: 'rope_freqs.weight', dims: [headDim / 2], data: llama3Factors(s, headDim) });
  if (s.longrope) {
    const { long, short } = s.longrope;
    tensors.push({ name: 'rope_factors_long.weight', dims: [long.length], data: Float32Array.from(long) });
    tensors.push({ name: 'rope_factors_short.weight', dims: [short.length], data: Float32Array.from(short) });
  }
  const permuted = arch === 'llama' && !s.interleavedRope;
  for (let l = 0; l < s.layers; l++) {
    const p = `model.layers.${l}.`;
    const b = `blk.${l}.`;
    const t = (/** @type {string} */ n) => hf[p + n];
    put(`${b}attn_norm.weight`, t('input_layernorm.weight'), plusOne(t('input_layernorm.weight')));
    if (s.arch === 'phi3') {
      put(`${b}attn_qkv.weight`, t('self_attn.qkv_proj.weight'));
      put(`${b}attn_output.weight`, t('self_attn.o_proj.weight'));
      put(`${b}ffn_norm.weight`, t('post_attention_layernorm.weight'));
      put(`${b}ffn_up.weight`, t('mlp.gate_up_proj.weight')); // llama.cpp's fused SwiGLU: gate rows, then up
      put(`${b}ffn_down.weight`, t('mlp.down_proj.weight'));
      continue;
    }
    const wq = t('self_attn.q_proj.weight');
    put(
      `${b}attn_q.weight`,
      wq,
      permuted ? permute(wq, s.heads) : wq.data.map((x) => x * (s.arch === 'gemma2' ? qScale : 1)),
    );
    const wk = t('self_attn.k_proj.weight');
    put(`${b}attn_k.weight`, wk, permuted ? permute(wk, s.kvHeads) : wk.data);
    put(`${b}attn_v.weight`, t('self_attn.v_proj.weight'));
    put(`${b}attn_output.weight`, t('self_attn.o_proj.weight'));
    for (const x of ['q', 'k', 'v'])
      if (t(`self_attn.${x}_proj.bias`)) put(`${b}attn_${x}.bias`, t(`self_attn.${x}_proj.bias`));
    if (t('self_attn.q_norm.weight')) {
      put(
        `${b}attn_q_norm.weight`,
        t('self_attn.q_norm.weight'),
        plusOne(t('self_attn.q_norm.weight')).map((x) => x * qScale),
      );
      put(`${b}attn_k_norm.weight`, t('self_attn.k_norm.weight'), plusOne(t('self_attn.k_norm.weight')));
    }
    if (gemma) {
      put(
        `${b}post_attention_norm.weight`,
        t('post_attention_layernorm.weight'),
        plusOne(t('post_attention_layernorm.weight')),
      );
      put(`${b}ffn_norm.weight`, t('pre_feedforward_layernorm.weight'), plusOne(t('pre_feedforward_layernorm.weight')));
      put(
        `${b}post_ffw_norm.weight`,
        t('post_feedforward_layernorm.weight'),
        plusOne(t('post_feedforward_layernorm.weight')),
      );
    } else {
      put(`${b}ffn_norm.weight`, t('post_attention_layernorm.weight'));
    }
    put(`${b}ffn_gate.weight`, t('mlp.gate_proj.weight'));
    put(`${b}ffn_up.weight`, t('mlp.up_proj.weight'));
    put(`${b}ffn_down.weight`, t('mlp.down_proj.weight'));
  }
  return /** @type {const} */ ([keys, tensors]);
}

/** The shapes of real models people run (their config.json values), for size and speed tests. */
export const REAL_SHAPES = {
  'SmolLM2-135M': {
    arch: 'LlamaForCausalLM',
    vocab: 49152,
    d: 576,
    layers: 30,
    heads: 9,
    kvHeads: 3,
    ffn: 1536,
    theta: 100000,
    qkvBias: false,
  },
  'SmolLM2-360M': {
    arch: 'LlamaForCausalLM',
    vocab: 49152,
    d: 960,
    layers: 32,
    heads: 15,
    kvHeads: 5,
    ffn: 2560,
    theta: 100000,
    qkvBias: false,
  },
  'Qwen2.5-0.5B': {
    arch: 'Qwen2ForCausalLM',
    vocab: 151936,
    d: 896,
    layers: 24,
    heads: 14,
    kvHeads: 2,
    ffn: 4864,
    theta: 1e6,
    qkvBias: true,
  },
};

/**
 * A checkpoint in a real model's shape with random BF16 weights (fast: random bits, small finite values), as the
 * Hub ships them: tied embeddings, 8,192 positions. For memory and speed, not for numbers. With `tokenizer`, a
 * tokenizer.json of its vocabulary's size (byteLevelTokenizer), so that it takes text and gives text back.
 * @param {keyof typeof REAL_SHAPES} name
 * @param {{ tokenizer?: boolean }} [options]
 */
export function realShapeCheckpoint(name, options = {}) {
  const s = REAL_SHAPES[name];
  const hd = s.d / s.heads;
  /** @type {Record<string, number[]>} */
  const shapes = { 'model.embed_tokens.weight': [s.vocab, s.d], 'model.norm.weight': [s.d] };
  for (let l = 0; l < s.layers; l++) {
    const p = `model.layers.${l}.`;
    Object.assign(shapes, {
      [`${p}input_layernorm.weight`]: [s.d],
      [`${p}post_attention_layernorm.weight`]: [s.d],
      [`${p}self_attn.q_proj.weight`]: [s.heads * hd, s.d],
      [`${p}self_attn.k_proj.weight`]: [s.kvHeads * hd, s.d],
      [`${p}self_attn.v_proj.weight`]: [s.kvHeads * hd, s.d],
      [`${p}self_attn.o_proj.weight`]: [s.d, s.heads * hd],
      [`${p}mlp.gate_proj.weight`]: [s.ffn, s.d],
      [`${p}mlp.up_proj.weight`]: [s.ffn, s.d],
      [`${p}mlp.down_proj.weight`]: [s.d, s.ffn],
    });
    if (s.qkvBias)
      Object.assign(shapes, {
        [`${p}self_attn.q_proj.bias`]: [s.heads * hd],
        [`${p}self_attn.k_proj.bias`]: [s.kvHeads * hd],
        [`${p}self_attn.v_proj.bias`]: [s.kvHeads * hd],
      });
  }
  let seed = 12345;
  let params = 0;
  /** @type {Record<string, { shape: number[], dtype: 'BF16', data: Uint16Array }>} */
  const tensors = {};
  for (const [tensor, shape] of Object.entries(shapes)) {
    const data = new Uint16Array(shape.reduce((a, b) => a * b, 1));
    params += data.length;
    if (tensor.endsWith('norm.weight'))
      data.fill(0x3f80); // 1.0
    else
      for (let i = 0; i < data.length; i++) {
        seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
        // sign, an exponent of 2^-9 … 2^-2, 7 random mantissa bits
        data[i] = ((seed >>> 31) << 15) | ((118 + ((seed >>> 24) & 7)) << 7) | ((seed >>> 8) & 0x7f);
      }
    tensors[tensor] = { shape, dtype: 'BF16', data };
  }
  const config = {
    architectures: [s.arch],
    vocab_size: s.vocab,
    hidden_size: s.d,
    intermediate_size: s.ffn,
    num_hidden_layers: s.layers,
    num_attention_heads: s.heads,
    num_key_value_heads: s.kvHeads,
    max_position_embeddings: 8192,
    rms_norm_eps: 1e-6,
    rope_theta: s.theta,
    tie_word_embeddings: true,
    torch_dtype: 'bfloat16',
    ...(options.tokenizer && { eos_token_id: s.vocab - 1 }),
  };
  const arch = /** @type {keyof typeof ARCHITECTURES} */ (
    Object.keys(ARCHITECTURES).find(
      (key) => ARCHITECTURES[/** @type {keyof typeof ARCHITECTURES} */ (key)].hf === s.arch,
    )
  );
  /** @type {Resolved} */
  const resolved = { ...s, arch, maxPositions: 8192, tied: true, seed: 12345, headScale: 1 };
  // llama.cpp's twin keeps the matrices BF16 and, as its converter does, the norms' vectors F32.
  const twinParts = () =>
    ggufTwin(
      resolved,
      hd,
      Object.fromEntries(
        Object.entries(tensors).map(([name, { shape, data }]) => [
          name,
          { shape, data: shape.length === 1 ? fromBf16(data) : data },
        ]),
      ),
    );
  return {
    params,
    files: {
      'config.json': new TextEncoder().encode(JSON.stringify(config)),
      'model.safetensors': safetensors(tensors),
      ...(options.tokenizer && {
        'tokenizer.json': new TextEncoder().encode(JSON.stringify(byteLevelTokenizer(s.vocab))),
      }),
    },
    gguf: () => gguf(...twinParts()),
    ggufParts: twinParts,
  };
}
