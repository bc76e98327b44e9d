// A small random GPT-2 checkpoint in the Hub's names (wte, wpe, h.N.attn.c_attn, … as Conv1D stores them,
// [in, out]) with the byte-level test tokenizer, so that a page can type into GPT-2 as into the other decoders.
// Plain JS, for Node and the browser test.
import { safetensors } from '../safetensors.mjs';
import { byteLevelTokenizer, normals, TOKENIZER_VOCAB } from './checkpoints.mjs';

/** @param {{ d?: number, layers?: number, heads?: number, positions?: number, seed?: number }} [o] */
export function gpt2Checkpoint({ d = 32, layers = 2, heads = 4, positions = 256, seed = 3 } = {}) {
  const random = normals(seed);
  const tensor = (/** @type {number[]} */ shape, /** @type {number} */ scale, offset = 0) => ({
    shape,
    data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => offset + scale * random()),
  });
  /** @type {Record<string, { shape: number[], data: Float32Array }>} */
  const t = { 'wte.weight': tensor([TOKENIZER_VOCAB, d], 0.5), 'wpe.weight': tensor([positions, d], 0.1) };
  for (let l = 0; l < layers; l++) {
    const p = `h.${l}.`;
    Object.assign(t, {
      [`${p}ln_1.weight`]: tensor([d], 0.1, 1),
      [`${p}ln_1.bias`]: tensor([d], 0.1),
      [`${p}attn.c_attn.weight`]: tensor([d, 3 * d], 1.5 / Math.sqrt(d)),
      [`${p}attn.c_attn.bias`]: tensor([3 * d], 0.1),
      [`${p}attn.c_proj.weight`]: tensor([d, d], 1 / Math.sqrt(d)),
      [`${p}attn.c_proj.bias`]: tensor([d], 0.1),
      [`${p}ln_2.weight`]: tensor([d], 0.1, 1),
      [`${p}ln_2.bias`]: tensor([d], 0.1),
      [`${p}mlp.c_fc.weight`]: tensor([d, 4 * d], 1 / Math.sqrt(d)),
      [`${p}mlp.c_fc.bias`]: tensor([4 * d], 0.1),
      [`${p}mlp.c_proj.weight`]: tensor([4 * d, d], 1 / Math.sqrt(4 * d)),
      [`${p}mlp.c_proj.bias`]: tensor([d], 0.1),
    });
  }
  Object.assign(t, { 'ln_f.weight': tensor([d], 0.1, 1), 'ln_f.bias': tensor([d], 0.1) });
  const config = {
    architectures: ['GPT2LMHeadModel'],
    model_type: 'gpt2',
    vocab_size: TOKENIZER_VOCAB,
    n_embd: d,
    n_layer: layers,
    n_head: heads,
    n_positions: positions,
    activation_function: 'gelu_new',
    layer_norm_epsilon: 1e-5,
    bos_token_id: TOKENIZER_VOCAB - 1,
    eos_token_id: TOKENIZER_VOCAB - 1,
  };
  const encode = (/** @type {unknown} */ x) => new TextEncoder().encode(JSON.stringify(x));
  return {
    'config.json': encode(config),
    'model.safetensors': safetensors(t),
    'tokenizer.json': encode(byteLevelTokenizer()),
  };
}
