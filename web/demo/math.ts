// One head's arithmetic, step by step, on the model's own numbers:
//   Q, K, V → scores = Q Kᵀ → ÷ √d_k → mask → softmax → weights · V
// then the heads side by side, which the output projection W_O maps back to d_model.
import { viridis } from './heatmap.js';

export interface MatrixView {
  data: Float32Array;
  rows: number;
  cols: number;
}

export interface Steps {
  q: MatrixView;
  k: MatrixView;
  v: MatrixView;
  scores: MatrixView;
  scaled: MatrixView;
  masked: MatrixView;
  weights: MatrixView;
  output: MatrixView;
}

/** Head `h` of a [heads, n, d] tensor as an n×d matrix. */
export function headOf(t: { data: Float32Array; shape: number[] }, h: number): MatrixView {
  const [, rows, cols] = t.shape;
  return { data: t.data.subarray(h * rows * cols, (h + 1) * rows * cols), rows, cols };
}

function matmul(a: MatrixView, b: MatrixView, transposeB: boolean): MatrixView {
  const rows = a.rows,
    cols = transposeB ? b.rows : b.cols,
    inner = a.cols;
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++)
    for (let j = 0; j < cols; j++) {
      let s = 0;
      for (let p = 0; p < inner; p++)
        s += a.data[i * inner + p] * (transposeB ? b.data[j * inner + p] : b.data[p * cols + j]);
      out[i * cols + j] = s;
    }
  return { data: out, rows, cols };
}

/** Columns [begin, begin + width) of a row-major matrix. */
export function columns(m: { data: Float32Array; shape: number[] }, begin: number, width: number): MatrixView {
  const [rows, cols] = m.shape;
  const out = new Float32Array(rows * width);
  for (let i = 0; i < rows; i++) out.set(m.data.subarray(i * cols + begin, i * cols + begin + width), i * width);
  return { data: out, rows, cols: width };
}

export function whole(m: { data: Float32Array; shape: number[] }): MatrixView {
  return { data: m.data, rows: m.shape[0], cols: m.shape[1] };
}

/** The steps for one head; `scale` divides by √d_k, `causal` hides later keys. */
export function steps(q: MatrixView, k: MatrixView, v: MatrixView, o: { scale: boolean; causal: boolean }): Steps {
  const n = q.rows;
  const scores = matmul(q, k, true);
  const factor = o.scale ? 1 / Math.sqrt(q.cols) : 1;
  const scaled = { ...scores, data: scores.data.map((x) => x * factor) };
  const masked = {
    ...scaled,
    data: scaled.data.map((x, idx) => (o.causal && idx % n > Math.floor(idx / n) ? -Infinity : x)),
  };
  const weights = { ...masked, data: new Float32Array(n * n) };
  for (let i = 0; i < n; i++) {
    const row = masked.data.subarray(i * n, (i + 1) * n);
    const max = row.reduce((a, b) => (b > a ? b : a), -Infinity);
    let sum = 0;
    for (let j = 0; j < n; j++) sum += weights.data[i * n + j] = Math.exp(row[j] - max);
    for (let j = 0; j < n; j++) weights.data[i * n + j] /= sum;
  }
  return { q, k, v, scores, scaled, masked, weights, output: matmul(weights, v, false) };
}

/** Paints a matrix scaled from its own min (dark) to max (bright); -∞ shows as the page background. */
/** The smallest and largest finite values, in one pass (a spread would overflow the stack on big matrices). */
export function range(data: ArrayLike<number>): { min: number; max: number } {
  let min = Infinity,
    max = -Infinity;
  for (let i = 0; i < data.length; i++) {
    const x = data[i];
    if (!Number.isFinite(x)) continue;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  return { min, max };
}

export function paint(canvas: HTMLCanvasElement, m: MatrixView): { min: number; max: number } {
  const { min, max } = range(m.data);
  const image = new ImageData(m.cols, m.rows);
  for (let i = 0; i < m.data.length; i++) {
    const x = m.data[i];
    const [r, g, b] = Number.isFinite(x) ? viridis(max > min ? (x - min) / (max - min) : 0.5) : [0, 0, 0];
    image.data.set([r, g, b, Number.isFinite(x) ? 255 : 0], i * 4);
  }
  canvas.width = m.cols;
  canvas.height = m.rows;
  canvas.getContext('2d')!.putImageData(image, 0, 0);
  return { min, max };
}
