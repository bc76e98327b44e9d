// ggml's reference quantizers and dequantizers (ggml-quants.c: quantize_row_{q8_0,q4_0,q4_K,q6_K}_ref and
// dequantize_row_*), written from the C for the tests' GGUF files: the blocks llama.cpp's own `llama-quantize` would
// write without an importance matrix. Arithmetic in float32 where ggml's is (Math.fround), f16 rounded to nearest even.
//
//   Q8_0  34 bytes / 32 values:  f16 d · int8 q[32]                                x = d·q
//   Q4_0  18 bytes / 32 values:  f16 d · q[16] (value j low nibble, j + 16 high)   x = d·(q − 8)
//   Q4_K 144 bytes / 256 values: f16 d, dmin · 12 bytes of 6-bit scales and mins · q[128]
//   Q6_K 210 bytes / 256 values: ql[128] · qh[64] · int8 scales[16] · f16 d
import { GGML, QUANT } from './gguf.mjs';
import { halfBits } from '../whisper.mjs';

const f = Math.fround;

export { QUANT };
/** @typedef {keyof typeof QUANT} QuantType */

/** An f16's value. @param {number} h */
export function halfValue(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f,
    m = h & 0x3ff;
  return sign * (e ? 2 ** (e - 15) * (1 + m / 1024) : 2 ** -14 * (m / 1024));
}

/** ggml's nearest_int: round to nearest, ties to even (float32 input). @param {number} x */
function nearestInt(x) {
  const v = f(x),
    r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
/** roundf: ties away from zero. @param {number} x */
const roundAway = (x) => Math.sign(x) * Math.floor(Math.abs(x) + 0.5);

/** @param {DataView} view @param {number} at @param {number} x f16 of x at byte `at` */
const putHalf = (view, at, x) => view.setUint16(at, halfBits(x), true);

/** @param {Float32Array} x @param {number} at @param {DataView} out @param {number} o */
function q8_0(x, at, out, o) {
  let amax = 0;
  for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[at + j]));
  const d = f(amax / 127),
    id = d ? f(1 / d) : 0;
  putHalf(out, o, d);
  for (let j = 0; j < 32; j++) out.setInt8(o + 2 + j, roundAway(f(x[at + j] * id)));
}

/** @param {Float32Array} x @param {number} at @param {DataView} out @param {number} o */
function q4_0(x, at, out, o) {
  let amax = 0,
    max = 0;
  for (let j = 0; j < 32; j++)
    if (amax < Math.abs(x[at + j])) {
      amax = Math.abs(x[at + j]);
      max = x[at + j];
    }
  const d = f(max / -8),
    id = d ? f(1 / d) : 0;
  putHalf(out, o, d);
  for (let j = 0; j < 16; j++) {
    const x0 = Math.min(15, Math.trunc(f(f(x[at + j] * id) + 8.5)));
    const x1 = Math.min(15, Math.trunc(f(f(x[at + 16 + j] * id) + 8.5)));
    out.setUint8(o + 2 + j, x0 | (x1 << 4));
  }
}

/**
 * make_qkx2_quants(32, 15, x, weights, L, &min, Laux, -1, 0.1, 20, false): a scale and min for 32 values.
 * @param {Float32Array} x @param {number} at @param {Float64Array} w @param {Uint8Array} L levels out
 * @returns {[number, number]} scale, and the min to subtract (positive)
 */
function qkx2(x, at, w, L) {
  const n = 32,
    nmax = 15;
  let min = x[at],
    max = x[at],
    sumW = w[0],
    sumX = f(sumW * x[at]);
  for (let i = 1; i < n; i++) {
    min = Math.min(min, x[at + i]);
    max = Math.max(max, x[at + i]);
    sumW = f(sumW + w[i]);
    sumX = f(sumX + f(w[i] * x[at + i]));
  }
  if (min > 0) min = 0;
  if (max === min) {
    L.fill(0);
    return [0, -min];
  }
  let iscale = f(nmax / f(max - min)),
    scale = f(1 / iscale),
    best = 0;
  for (let i = 0; i < n; i++) {
    L[i] = Math.max(0, Math.min(nmax, nearestInt(f(iscale * f(x[at + i] - min)))));
    const diff = f(f(f(scale * L[i]) + min) - x[at + i]);
    best = f(best + f(w[i] * f(diff * diff)));
  }
  const aux = new Uint8Array(n);
  for (let is = 0; is <= 20; is++) {
    iscale = f(f(-1 + f(0.1 * is) + nmax) / f(max - min));
    let sumL = 0,
      sumL2 = 0,
      sumXL = 0;
    for (let i = 0; i < n; i++) {
      const l = Math.max(0, Math.min(nmax, nearestInt(f(iscale * f(x[at + i] - min)))));
      aux[i] = l;
      sumL = f(sumL + f(w[i] * l));
      sumL2 = f(sumL2 + f(f(w[i] * l) * l));
      sumXL = f(sumXL + f(f(w[i] * l) * x[at + i]));
    }
    const D = f(f(sumW * sumL2) - f(sumL * sumL));
    if (D > 0) {
      let thisScale = f(f(f(sumW * sumXL) - f(sumX * sumL)) / D);
      let thisMin = f(f(f(sumL2 * sumX) - f(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = f(sumXL / sumL2);
      }
      let mad = 0;
      for (let i = 0; i < n; i++) {
        const diff = f(f(f(thisScale * aux[i]) + thisMin) - x[at + i]);
        mad = f(mad + f(w[i] * f(diff * diff)));
      }
      if (mad < best) {
        L.set(aux);
        best = mad;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  return [scale, -min];
}

/** @param {Float32Array} x @param {number} at @param {DataView} out @param {number} o */
function q4_K(x, at, out, o) {
  const L = new Uint8Array(256),
    scales = new Float64Array(8),
    mins = new Float64Array(8),
    w = new Float64Array(32),
    sub = new Uint8Array(32);
  let maxScale = 0,
    maxMin = 0;
  for (let j = 0; j < 8; j++) {
    let sumX2 = 0;
    for (let l = 0; l < 32; l++) sumX2 = f(sumX2 + f(x[at + 32 * j + l] * x[at + 32 * j + l]));
    const av = f(Math.sqrt(f(sumX2 / 32)));
    for (let l = 0; l < 32; l++) w[l] = f(av + Math.abs(x[at + 32 * j + l]));
    [scales[j], mins[j]] = qkx2(x, at + 32 * j, w, sub);
    maxScale = Math.max(maxScale, scales[j]);
    maxMin = Math.max(maxMin, mins[j]);
  }
  const invScale = maxScale > 0 ? f(63 / maxScale) : 0,
    invMin = maxMin > 0 ? f(63 / maxMin) : 0;
  const sm = new Uint8Array(12);
  for (let j = 0; j < 8; j++) {
    const ls = Math.min(63, nearestInt(f(invScale * scales[j])) & 0xff);
    const lm = Math.min(63, nearestInt(f(invMin * mins[j])) & 0xff);
    if (j < 4) {
      sm[j] = ls;
      sm[j + 4] = lm;
    } else {
      sm[j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
      sm[j - 4] |= (ls >> 4) << 6;
      sm[j] |= (lm >> 4) << 6;
    }
  }
  putHalf(out, o, f(maxScale / 63));
  putHalf(out, o + 2, f(maxMin / 63));
  const d = halfValue(out.getUint16(o, true)),
    dmin = halfValue(out.getUint16(o + 2, true));
  for (let j = 0; j < 8; j++) {
    const [sc, m] = scaleMinK4(j, sm);
    const ds = f(d * sc);
    if (!ds) continue;
    const dm = f(dmin * m);
    for (let i = 0; i < 32; i++)
      L[32 * j + i] = Math.max(0, Math.min(15, nearestInt(f(f(x[at + 32 * j + i] + dm) / ds))));
  }
  for (let b = 0; b < 12; b++) out.setUint8(o + 4 + b, sm[b]);
  for (let j = 0; j < 4; j++)
    for (let l = 0; l < 32; l++) out.setUint8(o + 16 + 32 * j + l, L[64 * j + l] | (L[64 * j + 32 + l] << 4));
}

/** get_scale_min_k4. @param {number} j @param {Uint8Array} q @returns {[number, number]} */
function scaleMinK4(j, q) {
  if (j < 4) return [q[j] & 63, q[j + 4] & 63];
  return [(q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4)];
}

/**
 * make_qx_quants(16, 32, x, L, rmse_type 1, NULL): a signed scale for 16 values, levels in [0, 63] (value + 32).
 * @param {Float32Array} x @param {number} at @param {Int8Array} L
 */
function qx(x, at, L) {
  const n = 16,
    nmax = 32;
  let max = 0,
    amax = 0;
  for (let i = 0; i < n; i++)
    if (Math.abs(x[at + i]) > amax) {
      amax = Math.abs(x[at + i]);
      max = x[at + i];
    }
  if (amax < 1e-15) {
    L.fill(0);
    return 0;
  }
  const level = (/** @type {number} */ iscale, /** @type {number} */ i) =>
    Math.max(-nmax, Math.min(nmax - 1, nearestInt(f(iscale * x[at + i]))));
  const sums = (/** @type {number} */ iscale) => {
    let sumlx = 0,
      suml2 = 0;
    for (let i = 0; i < n; i++) {
      const l = level(iscale, i),
        w = f(x[at + i] * x[at + i]);
      sumlx = f(sumlx + f(f(w * x[at + i]) * l));
      suml2 = f(suml2 + f(f(w * l) * l));
    }
    return [sumlx, suml2];
  };
  let iscale = f(-nmax / max);
  for (let i = 0; i < n; i++) L[i] = level(iscale, i) + nmax;
  let [sumlx, suml2] = sums(iscale);
  let scale = suml2 ? f(sumlx / suml2) : 0,
    best = f(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = f(-f(nmax + f(0.1 * is)) / max);
    [sumlx, suml2] = sums(iscale);
    if (suml2 > 0 && f(sumlx * sumlx) > f(best * suml2)) {
      for (let i = 0; i < n; i++) L[i] = level(iscale, i) + nmax;
      scale = f(sumlx / suml2);
      best = f(scale * sumlx);
    }
  }
  return scale;
}

/** @param {Float32Array} x @param {number} at @param {DataView} out @param {number} o */
function q6_K(x, at, out, o) {
  const L = new Int8Array(256),
    scales = new Float64Array(16);
  let maxScale = 0,
    maxAbs = 0;
  for (let ib = 0; ib < 16; ib++) {
    scales[ib] = qx(x, at + 16 * ib, L.subarray(16 * ib, 16 * ib + 16));
    if (Math.abs(scales[ib]) > maxAbs) {
      maxAbs = Math.abs(scales[ib]);
      maxScale = scales[ib];
    }
  }
  if (maxAbs < 1e-15) return; // the block stays zero: d = 0
  const iscale = f(-128 / maxScale);
  putHalf(out, o + 208, f(1 / iscale));
  const d = halfValue(out.getUint16(o + 208, true));
  for (let ib = 0; ib < 16; ib++) out.setInt8(o + 192 + ib, Math.min(127, nearestInt(f(iscale * scales[ib]))));
  const Lq = new Uint8Array(256);
  for (let j = 0; j < 16; j++) {
    const ds = f(d * out.getInt8(o + 192 + j));
    if (!ds) continue;
    for (let i = 0; i < 16; i++)
      Lq[16 * j + i] = Math.max(-32, Math.min(31, nearestInt(f(x[at + 16 * j + i] / ds)))) + 32;
  }
  for (let h = 0; h < 2; h++) {
    const base = 128 * h,
      ql = o + 64 * h,
      qh = o + 128 + 32 * h;
    for (let l = 0; l < 32; l++) {
      const [a, b, c, e] = [Lq[base + l], Lq[base + l + 32], Lq[base + l + 64], Lq[base + l + 96]];
      out.setUint8(ql + l, (a & 0xf) | ((c & 0xf) << 4));
      out.setUint8(ql + l + 32, (b & 0xf) | ((e & 0xf) << 4));
      out.setUint8(qh + l, (a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6));
    }
  }
}

const QUANTIZE = { Q8_0: q8_0, Q4_0: q4_0, Q4_K: q4_K, Q6_K: q6_K };

/**
 * Rows of float32 values (row-major, each `row` values, a whole number of blocks) as ggml blocks.
 * @param {QuantType} type @param {Float32Array} x @param {number} row
 */
export function quantize(type, x, row) {
  const { values, bytes } = QUANT[type];
  if (row % values) throw new Error(`quantize: rows of ${row} values are not whole ${type} blocks of ${values}`);
  const out = new Uint8Array((x.length / values) * bytes);
  const view = new DataView(out.buffer);
  for (let b = 0; b < x.length / values; b++) QUANTIZE[type](x, b * values, view, b * bytes);
  return out;
}

/**
 * ggml blocks as the float32 values they stand for (dequantize_row_*).
 * @param {QuantType} type @param {Uint8Array} blocks
 */
export function dequantize(type, blocks) {
  const { values, bytes } = QUANT[type];
  const count = (blocks.length / bytes) * values;
  const out = new Float32Array(count);
  const view = new DataView(blocks.buffer, blocks.byteOffset, blocks.byteLength);
  for (let b = 0; b < blocks.length / bytes; b++) {
    const o = b * bytes,
      y = b * values;
    if (type === 'Q8_0') {
      const d = halfValue(view.getUint16(o, true));
      for (let j = 0; j < 32; j++) out[y + j] = d * view.getInt8(o + 2 + j);
    } else if (type === 'Q4_0') {
      const d = halfValue(view.getUint16(o, true));
      for (let j = 0; j < 16; j++) {
        const q = blocks[o + 2 + j];
        out[y + j] = ((q & 0xf) - 8) * d;
        out[y + j + 16] = ((q >> 4) - 8) * d;
      }
    } else if (type === 'Q4_K') {
      const d = halfValue(view.getUint16(o, true)),
        dmin = halfValue(view.getUint16(o + 2, true));
      const sm = blocks.subarray(o + 4, o + 16);
      for (let j = 0; j < 4; j++)
        for (let h = 0; h < 2; h++) {
          const [sc, m] = scaleMinK4(2 * j + h, sm);
          const d1 = f(d * sc),
            m1 = f(dmin * m);
          for (let l = 0; l < 32; l++) {
            const q = blocks[o + 16 + 32 * j + l];
            out[y + 64 * j + 32 * h + l] = f(f(d1 * (h ? q >> 4 : q & 0xf)) - m1);
          }
        }
    } else {
      const d = halfValue(view.getUint16(o + 208, true));
      for (let h = 0; h < 2; h++)
        for (let l = 0; l < 32; l++) {
          const ql = o + 64 * h,
            qh = blocks[o + 128 + 32 * h + l];
          const q = [
            (blocks[ql + l] & 0xf) | ((qh & 3) << 4),
            (blocks[ql + l + 32] & 0xf) | (((qh >> 2) & 3) << 4),
            (blocks[ql + l] >> 4) | (((qh >> 4) & 3) << 4),
            (blocks[ql + l + 32] >> 4) | (((qh >> 6) & 3) << 4),
          ];
          for (let t = 0; t < 4; t++) {
            const v = 128 * h + 32 * t + l;
            out[y + v] = f(f(d * view.getInt8(o + 192 + (v >> 4))) * (q[t] - 32));
          }
        }
    }
  }
  return out;
}

/** @typedef {{ name: string, dims: number[], data: Float32Array | Uint16Array | Uint8Array, type?: number }} Tensor */

/**
 * A GGUF's tensors with each matrix whose rows are whole blocks of its type (`typeOf(name)`) quantized; and the same
 * tensors with those matrices as the float32 values ggml dequantizes them to: the model the quantized file describes.
 * @param {Tensor[]} tensors float32 matrices @param {(name: string) => QuantType} typeOf
 * @returns {[Tensor[], Tensor[]]}
 */
export function quantizedTwins(tensors, typeOf) {
  /** @type {Tensor[]} */
  const quantized = [],
    dequantized = [];
  for (const t of tensors) {
    const type = typeOf(t.name);
    if (t.dims.length !== 2 || t.dims[0] % QUANT[type].values) {
      (quantized.push(t), dequantized.push(t));
      continue;
    }
    const blocks = quantize(type, /** @type {Float32Array} */ (t.data), t.dims[0]);
    quantized.push({ ...t, type: QUANT[type].id, data: blocks });
    dequantized.push({ ...t, type: GGML.F32, data: dequantize(type, blocks) });
  }
  return [quantized, dequantized];
}
