// A GGUF v3 writer (F32, F16 and BF16 tensors, and quantized blocks: quantize.mjs), for llama.cpp twins of the tests' Hugging Face checkpoints.
// The layout, from ggml's gguf.h and gguf.cpp:
//   "GGUF" · u32 version 3 · i64 tensor count · i64 key count
//   keys: string key · u32 type · value (an array: u32 element type · u64 count · elements)
//   tensor infos: string name · u32 dims · i64 dims innermost first · u32 ggml type · u64 offset
//   zero padding to 32 bytes, then the data: each tensor at its offset, each padded to 32 bytes.
// Strings are a u64 byte length and UTF-8. llama.cpp reads key types strictly (a u32 key
// written as i32 fails), and wants exactly the tensors its architecture asks for.

/** GGUF value types. */
export const T = { UINT16: 2, UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9, UINT64: 10 };
/** ggml.h's ggml_type ids. */
export const GGML = { F32: 0, F16: 1, Q4_0: 2, Q5_0: 6, Q8_0: 8, Q4_K: 12, Q6_K: 14, BF16: 30 };
/** Values and bytes per block of the quantized types. */
const BLOCKS = { 2: [32, 18], 6: [32, 22], 8: [32, 34], 12: [256, 144], 14: [256, 210] };
/** The quantized types tests/llm/quantize.mjs writes: ggml id, values per block, bytes per block. */
export const QUANT = {
  Q8_0: { id: GGML.Q8_0, values: 32, bytes: 34 },
  Q4_0: { id: GGML.Q4_0, values: 32, bytes: 18 },
  Q4_K: { id: GGML.Q4_K, values: 256, bytes: 144 },
  Q6_K: { id: GGML.Q6_K, values: 256, bytes: 210 },
};

class Writer {
  constructor() {
    /** @type {Uint8Array[]} */
    this.parts = [];
    this.length = 0;
  }
  /** @param {Uint8Array} bytes */
  push(bytes) {
    this.parts.push(bytes);
    this.length += bytes.length;
  }
  /** @param {number} bytes @param {(view: DataView) => void} write */
  fixed(bytes, write) {
    const b = new Uint8Array(bytes);
    write(new DataView(b.buffer));
    this.push(b);
  }
  /** @param {number} v */
  u32(v) {
    this.fixed(4, (d) => d.setUint32(0, v, true));
  }
  /** @param {number} v */
  i32(v) {
    this.fixed(4, (d) => d.setInt32(0, v, true));
  }
  /** @param {number} v */
  f32(v) {
    this.fixed(4, (d) => d.setFloat32(0, v, true));
  }
  /** @param {number} v */
  u64(v) {
    this.fixed(8, (d) => d.setBigUint64(0, BigInt(v), true));
  }
  /** @param {string} s */
  string(s) {
    const bytes = new TextEncoder().encode(s);
    this.u64(bytes.length);
    this.push(bytes);
  }
  /** @param {number} type @param {unknown} v */
  value(type, v) {
    if (type === T.UINT32) return this.u32(/** @type {number} */ (v));
    if (type === T.INT32) return this.i32(/** @type {number} */ (v));
    if (type === T.FLOAT32) return this.f32(/** @type {number} */ (v));
    if (type === T.BOOL) return this.fixed(1, (d) => d.setUint8(0, v ? 1 : 0));
    if (type === T.STRING) return this.string(/** @type {string} */ (v));
    if (type === T.UINT64) return this.u64(/** @type {number} */ (v));
    if (type === T.UINT16) return this.fixed(2, (d) => d.setUint16(0, /** @type {number} */ (v), true));
    throw new Error(`gguf: unsupported value type ${type}`);
  }
  bytes() {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) out.set(p, (at += p.length) - p.length);
    return out;
  }
}

/**
 * A GGUF file.
 * @param {Array<[string, number, unknown] | [string, 9, number, unknown[]]>} keys `[key, type, value]`, or `[key, T.ARRAY, elementType, values]`
 * @param {Array<{ name: string, dims: number[], data: Float32Array | Uint16Array | Uint8Array, type?: number }>} tensors
 *   dims innermost first; data row-major over them: float32, 16-bit values (bf16 bits unless `type` says GGML.F16),
 *   or a quantized `type`'s blocks
 * @param {{ version?: number, alignment?: number, headerOnly?: boolean }} [options] a version or alignment other than
 *   3 and 32; headerOnly: the header alone (and its padding), where a tensor's `data` may be just its
 *   `{ length, byteLength }`: a file too large to write, as far as a reader of its header sees it
 * @returns {Uint8Array}
 */
export function gguf(keys, tensors, options = {}) {
  const ALIGN = options.alignment ?? 32;
  const padded = (/** @type {number} */ n) => Math.ceil(n / ALIGN) * ALIGN;
  const w = new Writer();
  w.push(new TextEncoder().encode('GGUF'));
  w.u32(options.version ?? 3);
  w.u64(tensors.length);
  w.u64(keys.length);
  for (const [key, type, ...rest] of keys) {
    w.string(key);
    w.u32(type);
    if (type === T.ARRAY) {
      const [element, values] = /** @type {[number, unknown[]]} */ (/** @type {unknown} */ (rest));
      w.u32(element);
      w.u64(values.length);
      for (const v of values) w.value(element, v);
    } else {
      w.value(type, rest[0]);
    }
  }
  let offset = 0;
  for (const t of tensors) {
    const count = t.dims.reduce((a, b) => a * b, 1);
    const blocks = BLOCKS[/** @type {keyof typeof BLOCKS} */ (t.type ?? -1)];
    const length = blocks ? (count / blocks[0]) * blocks[1] : count;
    if (t.data.length !== length) throw new Error(`gguf: ${t.name} has ${t.data.length} values for dims ${t.dims}`);
    if (new TextEncoder().encode(t.name).length >= 64) throw new Error(`gguf: ${t.name} is longer than 63 bytes`);
    w.string(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.type ?? (t.data instanceof Uint16Array ? GGML.BF16 : GGML.F32));
    w.u64(offset);
    offset += padded(t.data.byteLength);
  }
  w.push(new Uint8Array(padded(w.length) - w.length));
  if (options.headerOnly) return w.bytes();
  for (const t of tensors) {
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    w.push(bytes);
    w.push(new Uint8Array(padded(bytes.length) - bytes.length));
  }
  return w.bytes();
}
