import type { AlignmentHeadScore } from './model-types.js';

// Word timing from cross-attention, as Whisper publishes it (openai/whisper timing.py; transformers'
// WhisperForConditionalGeneration._extract_token_timestamps): the alignment heads' maps cropped to the audio, each
// normalized along the tokens (population standard deviation), median-filtered along time, averaged over the heads,
// then a dynamic time warping of the tokens onto the frames. Where the path first enters a token's row is the time
// of the token after it.

/**
 * A median filter of odd `width` along `row`, its ends mirrored without repeating the edge (torch's "reflect" pad):
 * index −1 reads 1, and n reads n − 2.
 */
export function medianFilter(row: Float32Array, width: number): Float32Array {
  const half = width >> 1;
  const out = new Float32Array(row.length);
  const window = new Float32Array(width);
  const last = row.length - 1;
  for (let i = 0; i < row.length; i++) {
    for (let j = -half; j <= half; j++) {
      let at = i + j;
      if (at < 0) at = -at;
      else if (at > last) at = 2 * last - at;
      window[j + half] = row[Math.min(Math.max(at, 0), last)];
    }
    window.sort();
    out[i] = window[half];
  }
  return out;
}

/**
 * The cheapest monotone path through `cost` ([rows, columns], row-major) from its first cell to its last, each step
 * one row down, one column right, or both. Costs add up in float32, and a tie goes to the step along the columns,
 * as openai/whisper's `dtw_cpu` and transformers' `_dynamic_time_warping` run it. Returns the path's row and column
 * of every cell, in order.
 */
export function timeWarp(cost: Float32Array, rows: number, columns: number): { rows: number[]; columns: number[] } {
  const width = columns + 1;
  const total = new Float32Array((rows + 1) * width).fill(Infinity);
  const trace = new Int8Array((rows + 1) * width).fill(-1);
  total[0] = 0;
  for (let j = 1; j <= columns; j++)
    for (let i = 1; i <= rows; i++) {
      const c0 = total[(i - 1) * width + j - 1],
        c1 = total[(i - 1) * width + j],
        c2 = total[i * width + j - 1];
      let c: number, t: number;
      if (c0 < c1 && c0 < c2) [c, t] = [c0, 0];
      else if (c1 < c0 && c1 < c2) [c, t] = [c1, 1];
      else [c, t] = [c2, 2];
      total[i * width + j] = cost[(i - 1) * columns + j - 1] + c;
      trace[i * width + j] = t;
    }
  for (let j = 0; j <= columns; j++) trace[j] = 2; // the first row only moves along the columns
  for (let i = 0; i <= rows; i++) trace[i * width] = 1; // the first column only down
  const path = { rows: [] as number[], columns: [] as number[] };
  let i = rows,
    j = columns;
  while (i > 0 || j > 0) {
    path.rows.push(i - 1);
    path.columns.push(j - 1);
    const t = trace[i * width + j];
    if (t === 0 || t === 1) i--;
    if (t === 0 || t === 2) j--;
  }
  path.rows.reverse();
  path.columns.reverse();
  return path;
}

/**
 * The matrix DTW aligns: `[rows, frames]`, the mean over `heads` of their cross maps (`cross`: `[layers, heads,
 * queries, keys]`), each cut to its first `rows` queries and `frames` keys, normalized along the queries and
 * median-filtered along the keys.
 */
export function alignmentMatrix(
  cross: Float32Array,
  shape: readonly number[],
  heads: ReadonlyArray<readonly [number, number]>,
  rows: number,
  frames: number,
  filterWidth = 7,
): Float32Array {
  const [, perLayer, queries, keys] = shape;
  const matrix = new Float32Array(rows * frames);
  const weights = new Float32Array(rows * frames);
  const mean = new Float64Array(frames),
    spread = new Float64Array(frames);
  for (const [layer, head] of heads) {
    const base = (layer * perLayer + head) * queries * keys;
    for (let r = 0; r < rows; r++) weights.set(cross.subarray(base + r * keys, base + r * keys + frames), r * frames);
    mean.fill(0);
    spread.fill(0);
    for (let r = 0; r < rows; r++) for (let f = 0; f < frames; f++) mean[f] += weights[r * frames + f] / rows;
    for (let r = 0; r < rows; r++)
      for (let f = 0; f < frames; f++) spread[f] += (weights[r * frames + f] - mean[f]) ** 2 / rows;
    for (let r = 0; r < rows; r++) {
      const row = weights.subarray(r * frames, (r + 1) * frames);
      // A frame every row attends to equally is 0 after the mean, whatever its spread (0 there).
      for (let f = 0; f < frames; f++) row[f] = spread[f] > 0 ? (row[f] - mean[f]) / Math.sqrt(spread[f]) : 0;
      const filtered = medianFilter(row, filterWidth);
      for (let f = 0; f < frames; f++) matrix[r * frames + f] += filtered[f] / heads.length;
    }
  }
  return matrix;
}

/**
 * Each token's time in seconds (`tokens` of them): the first's is 0, and token k + 1's is where the warping path
 * first enters row k (the row that predicts it), `secondsPerFrame` a frame. The rows are the first `tokens − 1`
 * queries: the last token is not read to predict another.
 */
export function tokenTimes(
  cross: Float32Array,
  shape: readonly number[],
  heads: ReadonlyArray<readonly [number, number]>,
  tokens: number,
  frames: number,
  secondsPerFrame: number,
  filterWidth = 7,
): Float64Array {
  const times = new Float64Array(tokens);
  const rows = tokens - 1;
  if (rows < 1 || frames < 1 || heads.length === 0) return times;
  const matrix = alignmentMatrix(cross, shape, heads, rows, frames, filterWidth);
  for (let i = 0; i < matrix.length; i++) matrix[i] = -matrix[i];
  const path = timeWarp(matrix, rows, frames);
  let at = 1;
  for (let k = 0; k < path.rows.length; k++)
    if (k === 0 || path.rows[k] !== path.rows[k - 1])
      times[at++] = Math.round(path.columns[k] * secondsPerFrame * 1e6) / 1e6;
  return times;
}

/**
 * Every head of `cross` (`[layers, heads, tokens, frames]`, cut to the frames that heard sound) timing the words on
 * its own, by the same normalization, filter and warping as the alignment heads together, against `starts`: each
 * reference word's first token (its index among the `tokens`) and start in seconds.
 */
export function scoreHeads(
  cross: Float32Array,
  shape: readonly number[],
  starts: ReadonlyArray<{ token: number; seconds: number }>,
  secondsPerFrame: number,
  tolerance: number,
): AlignmentHeadScore[] {
  const [layers, heads, tokens, frames] = shape;
  const out: AlignmentHeadScore[] = [];
  for (let layer = 0; layer < layers; layer++)
    for (let head = 0; head < heads; head++) {
      const times = tokenTimes(cross, shape, [[layer, head]], tokens, frames, secondsPerFrame);
      let near = 0,
        error = 0;
      for (const { token, seconds } of starts) {
        const d = Math.abs(times[token] - seconds);
        error += d;
        if (d <= tolerance + 1e-9) near++;
      }
      out.push({
        layer,
        head,
        score: starts.length ? near / starts.length : 0,
        meanError: starts.length ? error / starts.length : 0,
      });
    }
  return out.sort((a, b) => b.score - a.score || a.meanError - b.meanError);
}
