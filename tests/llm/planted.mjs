// A Llama checkpoint with an induction head built in by hand, so that a test can know which head an induction
// search must rank first. Two layers, four query heads over two key/value heads (head size 32, RoPE with
// theta 1e8, the byte-level test tokenizer). The residual stream has three parts: dims 0–15 hold the token's
// code (a random unit vector per token), dim 16 a constant, dims 32–47 a copy of the previous token's code.
//   Layer 0, head 0 is a previous-token head made from RoPE alone: its query and key read only the constant,
//   in the four fastest rotary frequencies, with the key turned one step ahead; after RoPE their dot product is
//   α²·Σ_f cos((j + 1 − i)·θ_f), largest at j = i − 1. Its value is the token's code, and W_O writes it into
//   dims 32–47. Every other head of layer 0 writes nothing (zero W_O columns), nor does its MLP (zero W_down).
//   Layer 1, head 2 is the induction head: its query reads the token's code, its key (key/value head 1) the
//   copied previous token's, both in the eight slowest frequencies (which barely turn over a few hundred
//   tokens); a query attends to the token whose predecessor is the query's own token.
// The other heads have random weights, so the grid has something to show. Plain JS, for Node and the browser test.
import { safetensors } from '../safetensors.mjs';
import { byteLevelTokenizer, normals, TOKENIZER_VOCAB } from './checkpoints.mjs';

const D = 128,
  HEADS = 4,
  KV = 2,
  HD = 32,
  FFN = 64,
  THETA = 1e8;
/** The previous-token head's strength (its logits' spread), and the induction head's. */
const ALPHA = 10,
  BETA = 6;

/** @param {{ maxPositions?: number, seed?: number }} [o] */
export function inductionCheckpoint({ maxPositions = 512, seed = 7 } = {}) {
  const random = normals(seed);
  /** @type {(rows: number, cols: number, scale: number) => { shape: number[], data: Float32Array }} */
  const matrix = (rows, cols, scale) => ({
    shape: [rows, cols],
    data: Float32Array.from({ length: rows * cols }, () => scale * random()),
  });
  const zeros = (/** @type {number} */ rows, /** @type {number} */ cols) => matrix(rows, cols, 0);
  const ones = (/** @type {number} */ n) => ({ shape: [n], data: new Float32Array(n).fill(1) });
  const set = (
    /** @type {{ shape: number[], data: Float32Array }} */ m,
    /** @type {number} */ r,
    /** @type {number} */ c,
    /** @type {number} */ v,
  ) => (m.data[r * m.shape[1] + c] = v);

  // Embeddings: the code (norm 4) in dims 0–15, the constant 4 in dim 16; RMSNorm then scales by 1 / 0.5.
  const vocab = TOKENIZER_VOCAB;
  const embed = zeros(vocab, D);
  for (let t = 0; t < vocab; t++) {
    const code = Array.from({ length: 16 }, () => random());
    const norm = Math.hypot(...code);
    code.forEach((x, r) => set(embed, t, r, (4 * x) / norm));
    set(embed, t, 16, 4);
  }
  const theta = (/** @type {number} */ f) => THETA ** ((-2 * f) / HD);
  const tensors = { 'model.embed_tokens.weight': embed };
  for (let l = 0; l < 2; l++) {
    const q = matrix(HEADS * HD, D, 1.5 / Math.sqrt(D));
    const k = matrix(KV * HD, D, 1.5 / Math.sqrt(D));
    const v = matrix(KV * HD, D, 1 / Math.sqrt(D));
    const o = l === 0 ? zeros(D, HEADS * HD) : matrix(D, HEADS * HD, 0.5 / Math.sqrt(D));
    if (l === 0) {
      // Query head 0 and key/value head 0: a constant, turned one rotary step apart. x̂[16] = 8 after the norm.
      for (let r = 0; r < HD; r++) for (let c = 0; c < D; c++) (set(q, r, c, 0), set(k, r, c, 0), set(v, r, c, 0));
      for (let f = 0; f < 4; f++) {
        set(q, f, 16, ALPHA / 8);
        set(k, f, 16, (ALPHA * Math.cos(theta(f))) / 8);
        set(k, f + HD / 2, 16, (ALPHA * Math.sin(theta(f))) / 8);
      }
      for (let r = 0; r < 16; r++) set(v, r, r, 1); // the code, ×8 after the norm
      for (let r = 0; r < 16; r++) set(o, 32 + r, r, 0.5); // back to norm 4, in dims 32–47
    } else {
      // Query head 2 reads the code, key/value head 1 the copy: slots 8–15 and 24–31 of the head.
      const slot = (/** @type {number} */ r) => (r < 8 ? 8 + r : HD / 2 + r);
      for (let r = 0; r < HD; r++) for (let c = 0; c < D; c++) (set(q, 2 * HD + r, c, 0), set(k, HD + r, c, 0));
      for (let r = 0; r < 16; r++) {
        set(q, 2 * HD + slot(r), r, BETA);
        set(k, HD + slot(r), 32 + r, BETA);
      }
    }
    const p = `model.layers.${l}.`;
    Object.assign(tensors, {
      [`${p}input_layernorm.weight`]: ones(D),
      [`${p}post_attention_layernorm.weight`]: ones(D),
      [`${p}self_attn.q_proj.weight`]: q,
      [`${p}self_attn.k_proj.weight`]: k,
      [`${p}self_attn.v_proj.weight`]: v,
      [`${p}self_attn.o_proj.weight`]: o,
      [`${p}mlp.gate_proj.weight`]: matrix(FFN, D, 1 / Math.sqrt(D)),
      [`${p}mlp.up_proj.weight`]: matrix(FFN, D, 1 / Math.sqrt(D)),
      [`${p}mlp.down_proj.weight`]: l === 0 ? zeros(D, FFN) : matrix(D, FFN, 0.3 / Math.sqrt(FFN)),
    });
  }
  Object.assign(tensors, { 'model.norm.weight': ones(D), 'lm_head.weight': matrix(vocab, D, 2 / Math.sqrt(D)) });
  const config = {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: vocab,
    hidden_size: D,
    intermediate_size: FFN,
    num_hidden_layers: 2,
    num_attention_heads: HEADS,
    num_key_value_heads: KV,
    head_dim: HD,
    max_position_embeddings: maxPositions,
    rms_norm_eps: 1e-6,
    rope_theta: THETA,
    tie_word_embeddings: false,
    hidden_act: 'silu',
    bos_token_id: null,
    eos_token_id: vocab - 1,
    torch_dtype: 'float32',
  };
  const encode = (/** @type {unknown} */ x) => new TextEncoder().encode(JSON.stringify(x));
  return {
    /** The planted head, counted from 0. */
    induction: { layer: 1, head: 2 },
    previous: { layer: 0, head: 0 },
    files: {
      'config.json': encode(config),
      'model.safetensors': safetensors(tensors),
      'tokenizer.json': encode(byteLevelTokenizer()),
    },
  };
}
