// safetensors files written and read in memory, and random BERT checkpoints with the Hub's tensor names and shapes
// for size and speed tests (weights are irrelevant there; shapes are not). Decoder checkpoints are llm/checkpoints.mjs.
// Plain JS: Vitest in Node and the browser test's Worker both import it.

/**
 * A safetensors file: F32 tensors (`data` a Float32Array), BF16 and F16 ones (`data` a Uint16Array of their bits), or
 * I64 ones (`data` a BigInt64Array), as older checkpoints keep their position_ids.
 * @param {Record<string, { data: Float32Array | Uint16Array | BigInt64Array, shape: number[], dtype?: 'F32' | 'BF16' | 'F16' | 'I64' }>} tensors
 * @returns {Uint8Array}
 */
export function safetensors(tensors) {
  /** @type {Record<string, unknown>} */
  const header = {};
  let offset = 0;
  for (const [name, { shape, dtype = 'F32' }] of Object.entries(tensors)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * (dtype === 'I64' ? 8 : dtype === 'F32' ? 4 : 2);
    header[name] = { dtype, shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const file = new Uint8Array(8 + json.length + offset);
  new DataView(file.buffer).setBigUint64(0, BigInt(json.length), true);
  file.set(new TextEncoder().encode(json), 8);
  let at = 8 + json.length;
  for (const { data } of Object.values(tensors)) {
    file.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), at);
    at += data.byteLength;
  }
  return file;
}

/**
 * The tensors of a safetensors file: dtype, shape, and for F32 tensors a Float32Array
 * view into the file (so writing to it changes the file). `file.byteOffset` must be a multiple of 4.
 * @param {Uint8Array} file
 * @returns {Record<string, { dtype: string, shape: number[], data?: Float32Array }>}
 */
export function safetensorsViews(file) {
  const length = Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + length)));
  /** @type {Record<string, { dtype: string, shape: number[], data?: Float32Array }>} */
  const out = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const {
      dtype,
      shape,
      data_offsets: [a, b],
    } = info;
    const data =
      dtype === 'F32' ? new Float32Array(file.buffer, file.byteOffset + 8 + length + a, (b - a) / 4) : undefined;
    out[name] = { dtype, shape, data };
  }
  return out;
}

/**
 * A safetensors file holding `tensors` (name → shape), F32 values from a fast PRNG.
 * @param {Record<string, number[]>} tensors
 * @returns {Uint8Array}
 */
export function randomSafetensors(tensors, seed = 1) {
  const sizes = Object.values(tensors).map((shape) => shape.reduce((a, b) => a * b, 1));
  const values = new Float32Array(sizes.reduce((a, b) => a + b, 0));
  let s = seed >>> 0;
  for (let i = 0; i < values.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    values[i] = (s / 2 ** 32 - 0.5) * 0.1;
  }
  let at = 0;
  return safetensors(
    Object.fromEntries(
      Object.entries(tensors).map(([name, shape], k) => [name, { shape, data: values.subarray(at, (at += sizes[k])) }]),
    ),
  );
}

/**
 * config.json and model.safetensors of a BERT with bert-base-uncased's shapes by default.
 * @param {{ layers?: number, hidden?: number, heads?: number, vocab?: number }} o
 * @returns {{ params: number, files: Record<string, Uint8Array> }}
 */
export function bertCheckpoint(o = {}) {
  const { layers = 12, hidden: d = 768, heads = 12, vocab = 30522 } = o;
  const ffn = 4 * d;
  /** @type {Record<string, number[]>} */
  const t = {
    'embeddings.word_embeddings.weight': [vocab, d],
    'embeddings.position_embeddings.weight': [512, d],
    'embeddings.token_type_embeddings.weight': [2, d],
    'embeddings.LayerNorm.weight': [d],
    'embeddings.LayerNorm.bias': [d],
  };
  for (let l = 0; l < layers; l++) {
    const p = `encoder.layer.${l}.`;
    for (const m of ['attention.self.query', 'attention.self.key', 'attention.self.value', 'attention.output.dense']) {
      t[`${p}${m}.weight`] = [d, d];
      t[`${p}${m}.bias`] = [d];
    }
    t[`${p}intermediate.dense.weight`] = [ffn, d];
    t[`${p}intermediate.dense.bias`] = [ffn];
    t[`${p}output.dense.weight`] = [d, ffn];
    t[`${p}output.dense.bias`] = [d];
    for (const ln of ['attention.output.LayerNorm', 'output.LayerNorm']) {
      t[`${p}${ln}.weight`] = [d];
      t[`${p}${ln}.bias`] = [d];
    }
  }
  t['pooler.dense.weight'] = [d, d];
  t['pooler.dense.bias'] = [d];
  const config = {
    architectures: ['BertModel'],
    hidden_size: d,
    num_hidden_layers: layers,
    num_attention_heads: heads,
    intermediate_size: ffn,
    hidden_act: 'gelu',
    layer_norm_eps: 1e-12,
    vocab_size: vocab,
    max_position_embeddings: 512,
    type_vocab_size: 2,
  };
  const params = Object.values(t).reduce((sum, shape) => sum + shape.reduce((a, b) => a * b, 1), 0);
  return {
    params,
    files: {
      'config.json': new TextEncoder().encode(JSON.stringify(config)),
      'model.safetensors': randomSafetensors(t),
    },
  };
}
