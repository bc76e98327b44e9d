// What Whisper's decoding leaves out before each token, and the segments its timestamp tokens mark, as
// openai/whisper's decoding runs them (SuppressBlank, SuppressTokens, ApplyTimestampRules; transcribe's segments
// and seek) and transformers' processors of the same names.

/** A window's token filters, from generation_config.json and the options. */
export interface Filters {
  /** `<|endoftext|>`: the tokens below it are text. */
  endOfText: number;
  /** `<|notimestamps|>`; the timestamps (0.00 s, 0.02 s, …) follow it. */
  noTimestamps: number;
  vocabSize: number;
  /** Never generated (`suppress_tokens`). */
  suppress: readonly number[];
  /** Not generated first (`begin_suppress_tokens`). */
  beginSuppress: readonly number[];
  /** Whether the window is decoded with timestamp tokens. */
  timestamps: boolean;
  /** With timestamps: the latest the first may be, in 20 ms steps (`max_initial_timestamp_index`; 50: 1 s). */
  maxInitialTimestamp?: number;
}

/**
 * The ids left out of the next token after `generated` (the tokens after the prompt), given the next `logits`.
 * Without timestamps, no timestamp token. With them: `<|notimestamps|>` never; timestamps in pairs (after two, text;
 * after text and one, another or the end), never earlier than the last (a segment of nonzero length), the first token
 * a timestamp of at most `maxInitialTimestamp`; and text not at all where the timestamps together are likelier than
 * any one text token.
 */
export function filtered(logits: Float32Array, generated: readonly number[], f: Filters): Int32Array {
  const begin = f.noTimestamps + 1;
  const out = new Uint8Array(f.vocabSize);
  const ban = (from: number, to: number) => out.fill(1, Math.max(0, from), Math.min(to, f.vocabSize));
  for (const id of f.suppress) out[id] = 1;
  if (generated.length === 0) for (const id of f.beginSuppress) out[id] = 1;
  if (!f.timestamps) ban(begin, f.vocabSize);
  else {
    out[f.noTimestamps] = 1;
    const n = generated.length;
    const last = n >= 1 && generated[n - 1] >= begin;
    const penultimate = n < 2 || generated[n - 2] >= begin;
    if (last) {
      if (penultimate) ban(begin, f.vocabSize);
      else ban(0, f.endOfText);
    }
    let latest = -1;
    for (const id of generated) if (id >= begin) latest = id;
    if (latest >= 0) ban(begin, last && !penultimate ? latest : latest + 1);
    if (n === 0) {
      ban(0, begin);
      if (f.maxInitialTimestamp !== undefined) ban(begin + f.maxInitialTimestamp + 1, f.vocabSize);
    }
    // The timestamps' summed probability against the likeliest text token, over what is left.
    const stamps = logSumExpLeft(logits, out, begin, f.vocabSize);
    let text = -Infinity;
    for (let i = 0; i < begin; i++) if (!out[i] && logits[i] > text) text = logits[i];
    if (stamps > text) ban(0, begin);
  }
  let count = 0;
  for (let i = 0; i < f.vocabSize; i++) count += out[i];
  const ids = new Int32Array(count);
  for (let i = 0, k = 0; i < f.vocabSize; i++) if (out[i]) ids[k++] = i;
  return ids;
}

/**
 * log Σ exp(logits[i]) over the ids in [from, to) that `out` leaves in (the timestamps: Whisper's last 1,501 ids, so a
 * pass over them, not the vocabulary); −∞ when it leaves none.
 */
function logSumExpLeft(logits: Float32Array, out: Uint8Array, from: number, to: number): number {
  let max = -Infinity;
  for (let i = from; i < to; i++) if (!out[i] && logits[i] > max) max = logits[i];
  if (max === -Infinity) return max;
  let sum = 0;
  for (let i = from; i < to; i++) if (!out[i]) sum += Math.exp(logits[i] - max);
  return max + Math.log(sum);
}

/** A segment between two timestamp tokens: its times in 20 ms steps and its tokens `[from, to)` in `generated`. */
export interface Marked {
  start: number;
  end: number;
  from: number;
  to: number;
}

/**
 * The segments `generated` (after the prompt, without the end of text) marks, as openai's transcribe cuts them, and
 * how far into the window the next should start (in 20 ms steps; undefined: after the whole window): where two
 * timestamps meet a segment ends; a window that ends on one timestamp after text heard nothing after it; otherwise the
 * unfinished segment is dropped and the next window starts at the last timestamp. Without two timestamps in a row,
 * one segment from the window's start to its last timestamp (or the whole window).
 */
export function segmentsOf(
  generated: readonly number[],
  noTimestamps: number,
  windowSteps: number,
): { segments: Marked[]; kept: number; advance?: number } {
  const begin = noTimestamps + 1;
  const stamp = generated.map((id) => id >= begin);
  const n = generated.length;
  const singleEnding = n >= 2 && !stamp[n - 2] && stamp[n - 1];
  const cuts: number[] = [];
  for (let i = 1; i < n; i++) if (stamp[i - 1] && stamp[i]) cuts.push(i);
  if (cuts.length === 0) {
    let last = -1;
    for (let i = 0; i < n; i++) if (stamp[i]) last = generated[i] - begin;
    const end = last > 0 ? last : windowSteps;
    return { segments: n ? [{ start: 0, end, from: 0, to: n }] : [], kept: n };
  }
  if (singleEnding) cuts.push(n);
  const segments: Marked[] = [];
  let from = 0;
  for (const to of cuts) {
    segments.push({ start: generated[from] - begin, end: generated[to - 1] - begin, from, to });
    from = to;
  }
  return singleEnding ? { segments, kept: n } : { segments, kept: from, advance: generated[from - 1] - begin };
}
