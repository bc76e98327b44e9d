// Whisper's decoding through the package, on a random checkpoint in openai/whisper-tiny's layout (its vocabulary,
// special tokens and generation_config.json): the prompt transformers.js builds, language detection, the suppressed
// tokens, 30 s windows; and word timestamps held to transformers.js's own token timestamps (its median filter and
// dynamic time warping) and its tokenizer's words, on the same cross-attention.
import { deflateSync } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Model, SpeechGenerateResult } from '../../dist/node.js';
import { medianFilter, timeWarp, tokenTimes } from '../../dist/alignment.js';
import { filtered } from '../../dist/timestamps.js';
import { groupWords } from '../../dist/words.js';
import {
  WHISPER_LANGUAGES,
  speechWhisper,
  whisperTokenizer,
  windowWhisper,
  xenovaTokenTimes,
  xenovaPrompts,
  xenovaSegments,
  xenovaWarps,
  xenovaWords,
  uniform,
} from '../whisper.mjs';
import { engineFor } from './engines.js';

const WORDS = ['"', 'the', 'dog', 'sat', 'on', 'mat', 'and', 'we', 'choose', 'to', 'go', 'moon', 'caf'];
const { tokenizer, vocab } = whisperTokenizer(WORDS);
const speechModelFiles = () => speechWhisper(WORDS);
const SOT = 50258,
  EOT = 50257,
  TRANSCRIBE = 50359,
  NO_TIMESTAMPS = 50363;

/** Random cross-attention `[layers, heads, rows, keys]`, each row a softmax (so rows sum to 1, as maps do). */
function randomCross(shape: [number, number, number, number], seed: number): Float32Array {
  const next = uniform(seed);
  const [layers, heads, rows, keys] = shape;
  const out = new Float32Array(layers * heads * rows * keys);
  for (let r = 0; r < layers * heads * rows; r++) {
    let sum = 0;
    for (let k = 0; k < keys; k++) sum += out[r * keys + k] = Math.exp(4 * next());
    for (let k = 0; k < keys; k++) out[r * keys + k] /= sum;
  }
  return out;
}

/**
 * Beam search as transformers' BeamSearchScorer runs it (no early stopping), over `next(ids)`'s logits and banned
 * tokens for a sequence: each step every beam's top 2·beams tokens by log-probability, the best 2·beams overall; an end
 * of text among the first `beams` finishes a hypothesis scored sum / length (its length without the end token);
 * it stops once `beams` hypotheses are finished and no running beam can beat the worst, or at `maxLength`.
 */
function referenceBeams(
  start: number[],
  beams: number,
  maxLength: number,
  next: (ids: number[]) => { logits: Float32Array; banned: Int32Array },
): number[] {
  let running = [{ ids: start, sum: 0 }];
  const finished: Array<{ ids: number[]; score: number }> = [];
  const finish = (ids: number[], sum: number, length: number) => {
    finished.push({ ids, score: sum / length });
    finished.sort((a, b) => b.score - a.score);
    finished.length = Math.min(finished.length, beams);
  };
  for (;;) {
    const length = running[0]!.ids.length;
    const candidates: Array<{ score: number; beam: number; token: number }> = [];
    running.forEach(({ ids, sum }, beam) => {
      const { logits, banned } = next(ids);
      let max = -Infinity;
      for (const x of logits) max = Math.max(max, x);
      let total = 0;
      for (const x of logits) total += Math.exp(x - max);
      const logp = Array.from(logits, (x) => x - max - Math.log(total));
      for (const t of banned) logp[t] = -Infinity;
      const order = logp.map((_, t) => t).sort((a, b) => logp[b]! - logp[a]! || a - b);
      for (const t of order.slice(0, 2 * beams))
        if (Number.isFinite(logp[t])) candidates.push({ score: sum + logp[t]!, beam, token: t });
    });
    candidates.sort((a, b) => b.score - a.score);
    candidates.length = Math.min(candidates.length, 2 * beams);
    const grown: typeof running = [];
    candidates.forEach((c, rank) => {
      if (grown.length === beams) return;
      if (c.token === EOT) {
        if (rank < beams) finish([...running[c.beam]!.ids, c.token], c.score, length);
      } else grown.push({ ids: [...running[c.beam]!.ids, c.token], sum: c.score });
    });
    const over = finished.length >= beams && finished.at(-1)!.score >= candidates[0]!.score / length;
    if (over || grown.length === 0) break;
    running = grown;
    if (length + 1 >= maxLength) {
      for (const r of running) finish(r.ids, r.sum, length + 1);
      break;
    }
  }
  return finished[0]!.ids;
}

const speech = (n: number, seed: number) => {
  const next = uniform(seed);
  return Float32Array.from({ length: n }, (_, i) => 0.3 * Math.sin(i / 9) * Math.sin(i / 2300) + 0.05 * (next() - 0.5));
};

describe('word timing as Whisper publishes it', () => {
  it('the median filter mirrors its ends as transformers.js does', async () => {
    const { medianFilter: theirs } = await import(
      '../reference/audio/node_modules/@xenova/transformers/src/utils/maths.js' as string
    );
    for (const n of [7, 8, 50, 301]) {
      const next = uniform(n);
      const row = Float32Array.from({ length: n }, () => next() * 4 - 2);
      expect(Array.from(medianFilter(row, 7))).toEqual(Array.from(theirs(row, 7) as Float32Array));
    }
    // By hand: [3, 1, 2, 5, 4] with width 3 reads [1, 3, 1], [3, 1, 2], … [5, 4, 5] at the ends.
    expect(Array.from(medianFilter(Float32Array.of(3, 1, 2, 5, 4), 3))).toEqual([1, 2, 2, 4, 5]);
  });

  it('the warping path is transformers.js’s, ties to the columns', () => {
    const cases = (
      [
        [1, 5, 1],
        [5, 5, 2],
        [12, 300, 3],
        [40, 1500, 4],
      ] as const
    ).map(([rows, columns, seed]) => {
      const next = uniform(seed);
      // Coarse values make ties, which the rule must break as theirs does.
      return { rows, columns, cost: Float32Array.from({ length: rows * columns }, () => Math.round(next() * 4) - 2) };
    });
    const theirs = xenovaWarps(cases);
    cases.forEach(({ cost, rows, columns }, i) => {
      const mine = timeWarp(cost, rows, columns);
      expect(mine.rows).toEqual(theirs[i]![0]);
      expect(mine.columns).toEqual(theirs[i]![1]);
    });
  });

  it('token times equal transformers.js’s _extract_token_timestamps on the same cross-attention', () => {
    const cases = [
      {
        shape: [2, 3, 9, 1500] as [number, number, number, number],
        heads: [
          [1, 0],
          [1, 2],
        ] as Array<[number, number]>,
        frames: 550,
      },
      {
        shape: [4, 6, 30, 1500] as [number, number, number, number],
        heads: [
          [2, 2],
          [3, 0],
          [3, 4],
        ] as Array<[number, number]>,
        frames: 1500,
      },
      {
        shape: [1, 2, 3, 1500] as [number, number, number, number],
        heads: [[0, 1]] as Array<[number, number]>,
        frames: 60,
      },
    ].map((c, i) => ({ ...c, cross: randomCross(c.shape, 11 + i) }));
    const theirs = xenovaTokenTimes(cases);
    cases.forEach((c, i) => {
      const tokens = c.shape[2] + 1;
      const mine = tokenTimes(c.cross, c.shape, c.heads, tokens, c.frames, 0.02);
      expect(mine.length).toBe(theirs[i]!.length);
      for (let k = 0; k < tokens; k++) expect(mine[k]).toBeCloseTo(theirs[i]![k]!, 5);
    });
  });
});

describe('Whisper decoding', () => {
  let engine: Engine;
  let model: Model;
  beforeAll(async () => {
    engine = await engineFor('relaxed-simd', 1);
    model = await engine.loadModel({ files: speechModelFiles() });
  }, 60_000);
  afterAll(() => engine?.dispose());

  it('reads its decoding settings from generation_config.json', () => {
    const s = model.info.speech!;
    expect(s.multilingual).toBe(true);
    expect(s.startOfTranscript).toBe(SOT);
    expect(s.endOfText).toBe(EOT);
    expect(s.noTimestamps).toBe(NO_TIMESTAMPS);
    expect(s.languages.en).toBe(50259);
    expect(Object.keys(s.languages)).toEqual(WHISPER_LANGUAGES);
    expect(s.tasks).toEqual({ transcribe: TRANSCRIBE, translate: 50358 });
    expect(s.alignmentHeads).toEqual([
      [1, 0],
      [1, 1],
    ]);
    expect(s.beginSuppressTokens).toEqual([220, EOT]);
  });

  it('prompts as transformers.js does, suppresses what the config says, and times every word', async () => {
    const audio = speech(16000 * 7, 5);
    const g = await model.generate(
      { audio },
      { language: 'de', task: 'translate', wordTimestamps: true, maxNewTokens: 40 },
    );
    // transformers.js's WhisperTokenizer.get_decoder_prompt_ids for German translation without timestamps, and
    // for English transcription with timestamps (the next test's prompt).
    const [german, english] = xenovaPrompts(tokenizer, [
      { language: 'de', task: 'translate', noTimestamps: true },
      { language: 'en', task: 'transcribe', noTimestamps: false },
    ]);
    expect(german).toEqual([
      [1, 50261],
      [2, 50358],
      [3, NO_TIMESTAMPS],
    ]);
    expect(english).toEqual([
      [1, 50259],
      [2, TRANSCRIBE],
    ]);
    expect(Array.from(g.targetIds.slice(0, 4))).toEqual([SOT, ...german!.map(([, id]) => id)]);
    expect(g.language).toBe('de');
    const w = g.windows[0]!;
    expect(g.windows.length).toBe(1);
    expect(w.seconds).toBe(7);
    expect(g.audioTokens.length).toBe(350); // 7 s of 20 ms positions
    expect(g.maps.cross!.shape).toEqual([2, 2, g.targetIds.length, 350]);
    expect(g.maps.encoder).toBeUndefined();
    // Nothing suppressed and no timestamp was generated, and neither a space nor the end came first.
    const generated = Array.from(g.targetIds.slice(4));
    const suppressed = new Set(model.info.speech!.suppressTokens);
    expect(generated.some((id) => suppressed.has(id) || id > NO_TIMESTAMPS)).toBe(false);
    expect([220, EOT]).not.toContain(generated[0]);
    // Greedy: each token is the most likely one the processors allowed, on a teacher-forced run of the target.
    const run = model.run({ audio, target: g.targetIds }, { returnLogits: true });
    const vocabSize = model.info.vocabSize;
    for (let k = 3; k + 1 < g.targetIds.length; k++) {
      const logits = run.logits!.data.subarray(k * vocabSize, (k + 1) * vocabSize);
      let best = -1;
      for (let id = 0; id < vocabSize; id++)
        if (
          !suppressed.has(id) &&
          id <= NO_TIMESTAMPS &&
          !(k === 3 && (id === 220 || id === EOT)) &&
          (best < 0 || logits[id]! > logits[best]!)
        )
          best = id;
      expect(g.targetIds[k + 1]).toBe(best);
    }
    expectTheirWords(g);
    // Sampled: any token, so words of every shape.
    const sampled = await model.generate(
      { audio },
      { language: 'en', wordTimestamps: true, temperature: 1, seed: 3, maxNewTokens: 50 },
    );
    expect(new Set(sampled.targetIds.slice(4)).size).toBeGreaterThan(20);
    expectTheirWords(sampled);
    expect(g.text).toBe(model.decode(g.targetIds, { skipSpecialTokens: true }));
  });

  /** transformers.js's token times on the generation's cross maps, then its tokenizer's words: ours, exactly. */
  function expectTheirWords(g: SpeechGenerateResult) {
    const w = g.windows[0]!;
    const n = g.targetIds.length;
    const cross = g.maps.cross!;
    const frames = cross.shape[3];
    const [times] = xenovaTokenTimes([
      { cross: cross.attentions, shape: cross.shape, heads: g.alignmentHeads, frames },
    ]);
    for (let k = 0; k < n; k++) expect(w.tokenTimes![k]).toBeCloseTo(times![k]!, 5);
    const [theirs] = xenovaWords(tokenizer, [
      { tokens: Array.from(g.targetIds), times: times!.map((t) => Math.round(t * 100) / 100) },
    ]);
    expect(g.words!.map((x) => x.word)).toEqual(theirs!.chunks.map((c) => c.text));
    g.words!.forEach((x, i) => {
      expect(x.start).toBeCloseTo(theirs!.chunks[i]!.timestamp[0], 5);
      // A window cut at maxNewTokens has no token after its last: that word ends where the window's sound ends.
      if (x.tokens[1] === n && w.stopReason === 'maxNewTokens') expect(x.end).toBeCloseTo(frames * 0.02, 5);
      else expect(x.end).toBeCloseTo(theirs!.chunks[i]!.timestamp[1], 5);
      expect(x.probability).toBeGreaterThan(0);
      expect(x.probability).toBeLessThanOrEqual(1);
      expect(x.tokens[1]).toBeGreaterThan(x.tokens[0]);
    });
  }

  it('detects the language when none is given: the most likely language token after the start', async () => {
    const audio = speech(16000 * 3, 9);
    const g = await model.generate({ audio }, { maxNewTokens: 3 });
    const run = model.run({ audio, target: Int32Array.of(SOT) }, { returnLogits: true });
    const langs = Object.entries(model.info.speech!.languages);
    const [code] = langs.reduce((a, b) => (run.logits!.data[b[1]]! > run.logits!.data[a[1]]! ? b : a));
    expect(g.language).toBe(code);
    expect(g.targetIds[1]).toBe(model.info.speech!.languages[code]);
    expect(g.targetIds[2]).toBe(TRANSCRIBE);
    expect(g.windows[0]!.languageProbability).toBeGreaterThan(1 / langs.length);
  });

  it('decodes audio longer than 30 s window by window, each with its own maps and times', async () => {
    const audio = speech(16000 * 45, 3);
    const g: SpeechGenerateResult = await model.generate(
      { audio },
      { language: 'en', wordTimestamps: true, maxNewTokens: 8, encoderMapLayers: [0] },
    );
    expect(g.windows.map((w) => [w.start, w.seconds])).toEqual([
      [0, 30],
      [30, 15],
    ]);
    const [first, second] = g.windows;
    const one = await model.generate({ audio: audio.subarray(0, 480000) }, { language: 'en', maxNewTokens: 8 });
    const two = await model.generate(
      { audio: audio.subarray(480000) },
      { language: 'en', wordTimestamps: true, maxNewTokens: 8, encoderMapLayers: [0] },
    );
    expect(Array.from(first!.targetIds)).toEqual(Array.from(one.targetIds));
    expect(Array.from(second!.targetIds)).toEqual(Array.from(two.targetIds));
    expect(g.text).toBe(one.text + two.text);
    // A window decoded on its own is that window exactly (the page shows a window past the maps budget so): its
    // maps and times; sampled too, as each window starts from the seed.
    for (const set of ['encoder', 'decoder', 'cross'] as const)
      expect(Array.from(two.windows[0]!.maps[set]!.attentions)).toEqual(Array.from(second!.maps[set]!.attentions));
    expect(Array.from(two.windows[0]!.tokenTimes!)).toEqual(Array.from(second!.tokenTimes!));
    const sampled = { language: 'en', maxNewTokens: 8, temperature: 0.8, seed: 5 };
    const hot = await model.generate({ audio }, sampled);
    const hotAlone = await model.generate({ audio: audio.subarray(480000) }, sampled);
    expect(Array.from(hot.windows[1]!.targetIds)).toEqual(Array.from(hotAlone.targetIds));
    expect(second!.maps.cross!.shape[3]).toBe(750);
    expect(second!.maps.encoder!.shape).toEqual([1, 2, 750, 750]);
    expect(second!.maps.encoder!.mapLayers).toEqual([0]);
    for (const word of second!.words!) {
      expect(word.window).toBe(1);
      expect(word.start).toBeGreaterThanOrEqual(30);
      expect(word.end).toBeLessThanOrEqual(45);
    }
    expect(g.words!.length).toBe(first!.words!.length + second!.words!.length);
  });

  it('decodes an hour in 120 windows, keeping maps only within mapBytes, and every window’s words', async () => {
    const hour = speech(16000 * 3600, 11);
    const bytesOf = (w: SpeechGenerateResult['windows'][number]) =>
      Object.values(w.maps).reduce((sum, m) => sum + (m?.attentions.byteLength ?? 0), 0);
    const options = { language: 'en', wordTimestamps: true, maxNewTokens: 4 };
    const whole = await model.generate({ audio: hour }, options);
    expect(whole.windows.length).toBe(120);
    expect(whole.notices).toEqual([]); // the default budget holds every window of this small model
    const perWindow = bytesOf(whole.windows[0]!);
    const kept = await model.generate({ audio: hour }, { ...options, mapBytes: 2.5 * perWindow });
    expect(kept.windows.map((w) => bytesOf(w) > 0)).toEqual(whole.windows.map((_, i) => i < 2));
    expect(kept.notices).toEqual([
      'maps kept for the first 2 of 120 windows: the rest would pass mapBytes (0 MiB); their text, words and times are all there',
    ]);
    // What the budget leaves out is the maps alone.
    expect(kept.text).toBe(whole.text);
    expect(kept.words!.map((w) => [w.word, w.start, w.end])).toEqual(whole.words!.map((w) => [w.word, w.start, w.end]));
    expect(kept.windows[119]!.start).toBe(3570);
    await expect(model.generate({ audio: hour.subarray(0, 16000) }, { mapBytes: -1 })).rejects.toThrow(
      'generate: mapBytes must be a number of bytes ≥ 0, got -1',
    );
  }, 120_000);

  it('refuses what it cannot do in words that say why, and keeps working', async () => {
    const audio = speech(16000, 1);
    await expect(model.generate({ audio }, { language: 'xx' })).rejects.toThrow("knows no language 'xx'");
    await expect(model.generate({ audio }, { task: 'summarize' as 'translate' })).rejects.toThrow(
      "task must be 'transcribe' or 'translate'",
    );
    await expect(model.generate({ audio }, { alignmentHeads: [[2, 0]] })).rejects.toThrow(
      "alignmentHeads must be [layer, head] pairs within the decoder's 2 layers × 2 heads",
    );
    await expect(model.generate({ audio }, { encoderMapLayers: [1] })).rejects.toThrow(
      "encoderMapLayers[0] = 1 is outside the encoder's 1 layers",
    );
    await expect(model.generate('hello' as never)).rejects.toThrow('is a speech model: generate({ audio })');
    await expect(model.generate({ audio: new Float32Array(0) })).rejects.toThrow('the audio is empty');
    await expect(model.generate({ audio }, { maxNewTokens: 500 })).rejects.toThrow(
      'maxNewTokens must be a whole number',
    );
    const g = await model.generate({ audio }, { language: 'en', maxNewTokens: 2, attentions: false });
    expect(g.maps).toEqual({});
    expect(g.targetIds.length).toBeGreaterThan(4);
  });

  it('an English-only model prompts without language or task', async () => {
    const files = speechModelFiles();
    const config = JSON.parse(new TextDecoder().decode(files['generation_config.json']));
    delete config.lang_to_id;
    delete config.task_to_id;
    config.is_multilingual = false;
    const en = await engine.loadModel({
      files: { ...files, 'generation_config.json': new TextEncoder().encode(JSON.stringify(config)) },
    });
    try {
      const g = await en.generate({ audio: speech(8000, 2) }, { maxNewTokens: 2 });
      expect(Array.from(g.targetIds.slice(0, 2))).toEqual([SOT, NO_TIMESTAMPS]);
      expect(g.language).toBe('en');
      await expect(en.generate({ audio: speech(8000, 2) }, { language: 'de' })).rejects.toThrow('English-only');
    } finally {
      en.dispose();
    }
  });

  it('decodes with timestamps: pairs, never back in time, the first within 1 s; segments as transformers.js cuts them', async () => {
    const audio = speech(16000 * 12, 21);
    const begin = NO_TIMESTAMPS + 1;
    for (const [temperature, seed] of [
      [0, 0],
      [1, 4],
      [1, 9],
    ] as const) {
      const g = await model.generate(
        { audio },
        { language: 'en', timestamps: true, temperature, seed, maxNewTokens: 50, wordTimestamps: true },
      );
      const w = g.windows[0]!;
      expect(Array.from(g.targetIds.slice(0, 3))).toEqual([SOT, 50259, TRANSCRIBE]);
      const generated = Array.from(g.targetIds.slice(3)).filter((id) => id !== EOT);
      const stamp = generated.map((id) => id >= begin);
      expect(stamp[0]).toBe(true);
      expect(generated[0]! - begin).toBeLessThanOrEqual(model.info.speech!.maxInitialTimestamp!);
      expect(generated).not.toContain(NO_TIMESTAMPS);
      let latest = -1;
      for (let i = 0; i < generated.length; i++) {
        if (i >= 2) expect(stamp[i - 2] && stamp[i - 1] && stamp[i]).toBe(false); // never three in a row
        // Text, then one timestamp: no text next (another timestamp, or a token the rules leave alone: the end, or
        // a special token, as openai's rules leave them).
        if (i >= 2 && generated[i - 2]! < EOT && stamp[i - 1]) expect(generated[i]).toBeGreaterThanOrEqual(EOT);
        if (stamp[i]) {
          expect(generated[i]!).toBeGreaterThanOrEqual(latest); // never back in time
          latest = generated[i]!;
        }
      }
      // Whole segments, as transformers.js's _decode_asr cuts them from the same tokens.
      const [theirs] = xenovaSegments(tokenizer, [Array.from(g.targetIds)]);
      const whole = theirs!.chunks.filter((c) => c.timestamp[1] !== null);
      expect(g.segments!.map((x) => [x.text, x.start, x.end])).toEqual(
        whole.slice(0, g.segments!.length).map((c) => [c.text, c.timestamp[0], c.timestamp[1]]),
      );
      for (const x of g.segments!)
        expect(g.targetIds[x.tokens[0]]! >= begin && g.targetIds[x.tokens[1] - 1]! >= begin).toBe(true);
      // The words are the kept tokens' and lie within the window's sound.
      for (const word of g.words!)
        (expect(word.tokens[0]).toBeGreaterThanOrEqual(3), expect(word.end).toBeLessThanOrEqual(12));
      expect(w.text).toBe(g.segments!.map((x) => x.text).join(''));
    }
  });

  it('goes on from the last timestamp of each window’s last whole segment', async () => {
    const audio = speech(16000 * 50, 6);
    const g = await model.generate(
      { audio },
      { language: 'en', timestamps: true, temperature: 1, seed: 5, maxNewTokens: 24 },
    );
    expect(g.windows.length).toBeGreaterThanOrEqual(2);
    let start = 0;
    for (const w of g.windows) {
      expect(w.start).toBeCloseTo(start, 6);
      const segments = w.segments!;
      const generated = Array.from(w.targetIds.slice(3)).filter((id) => id !== EOT);
      const n = generated.length;
      const stamp = (i: number) => generated[i]! > NO_TIMESTAMPS;
      const pairs = generated.some((_, i) => i > 0 && stamp(i - 1) && stamp(i));
      const single = n >= 2 && !stamp(n - 2) && stamp(n - 1);
      // openai's transcribe: after a whole window, or at the last timestamp of its last whole segment (when past
      // the window's start: a window always moves on).
      const end = pairs && !single ? segments[segments.length - 1]!.end - w.start : 0;
      start += end > 0 ? end : Math.min(30, 50 - w.start);
    }
    expect(start).toBeGreaterThanOrEqual(50 - 1e-6);
  });

  it('searches beams: one beam is greedy, and no beam starts with what begin_suppress_tokens names', async () => {
    const audio = speech(16000 * 5, 12);
    const greedy = await model.generate({ audio }, { language: 'en', maxNewTokens: 12 });
    const one = await model.generate({ audio }, { language: 'en', maxNewTokens: 12, beams: 1 });
    expect(Array.from(one.targetIds)).toEqual(Array.from(greedy.targetIds));
    // A checkpoint whose begin_suppress_tokens names the token greedy decoding starts with.
    const first = greedy.targetIds[4]!;
    const files = speechModelFiles();
    const config = JSON.parse(new TextDecoder().decode(files['generation_config.json']));
    config.begin_suppress_tokens = [first];
    const other = await engine.loadModel({
      files: { ...files, 'generation_config.json': new TextEncoder().encode(JSON.stringify(config)) },
    });
    try {
      for (const beams of [1, 3]) {
        const g = await other.generate({ audio }, { language: 'en', maxNewTokens: 12, beams, wordTimestamps: true });
        expect(g.targetIds[4]).not.toBe(first);
        const suppressed = new Set(other.info.speech!.suppressTokens);
        expect(Array.from(g.targetIds.slice(4)).some((id) => suppressed.has(id) || id > NO_TIMESTAMPS)).toBe(false);
        // The winner read again: its maps, probabilities and words are there as for greedy decoding.
        const w = g.windows[0]!;
        expect(g.maps.cross!.shape[2]).toBe(g.targetIds.length);
        expect(w.tokenProbabilities.length).toBe(g.targetIds.length);
        for (let k = 4; k < g.targetIds.length; k++)
          if (g.targetIds[k]! < EOT) expect(w.tokenProbabilities[k]).toBeGreaterThan(0);
        expect(g.words!.length).toBeGreaterThan(0);
      }
    } finally {
      other.dispose();
    }
    await expect(model.generate({ audio }, { beams: 9 })).rejects.toThrow('beams must be a whole number from 1 to 8');
  });

  it('searches beams with timestamps: each beam under the rules of its own tokens, as a search written here', async () => {
    const audio = speech(16000 * 8, 21);
    const options = { language: 'en', timestamps: true, maxNewTokens: 10 } as const;
    const greedy = await model.generate({ audio }, options);
    const one = await model.generate({ audio }, { ...options, beams: 1 });
    expect(Array.from(one.targetIds)).toEqual(Array.from(greedy.targetIds));
    const speechInfo = model.info.speech!;
    const filters = {
      endOfText: EOT,
      noTimestamps: NO_TIMESTAMPS,
      vocabSize: model.info.vocabSize,
      suppress: speechInfo.suppressTokens,
      beginSuppress: speechInfo.beginSuppressTokens,
      timestamps: true,
      maxInitialTimestamp: speechInfo.maxInitialTimestamp,
    };
    const prompt = [SOT, 50259, TRANSCRIBE];
    for (const beams of [2, 3]) {
      const g = await model.generate({ audio }, { ...options, beams });
      const want = referenceBeams(prompt, beams, prompt.length + options.maxNewTokens, (ids) => {
        const run = model.run({ audio, target: Int32Array.from(ids) }, { returnLogits: true });
        const V = model.info.vocabSize;
        const logits = run.logits!.data.slice((ids.length - 1) * V, ids.length * V);
        return { logits, banned: filtered(logits, ids.slice(prompt.length), filters) };
      });
      expect(Array.from(g.targetIds)).toEqual(want);
      // Timestamps as greedy decoding writes them: the first one a timestamp, never three in a row.
      const generated = want.slice(3).filter((id) => id !== EOT);
      expect(generated[0]!).toBeGreaterThan(NO_TIMESTAMPS);
      expect(g.segments!.length).toBeGreaterThan(0);
    }
  });

  it('falls back to a higher temperature when a window repeats itself, as openai’s transcribe does', async () => {
    const audio = speech(16000 * 6, 12);
    // Greedy, this random model says one word over and over: the text compresses far beyond 2.4.
    const greedy = await model.generate({ audio }, { language: 'en', maxNewTokens: 40 });
    const g0 = greedy.windows[0]!;
    const text = g0.text;
    const zlibRatio = Buffer.byteLength(text) / deflateSync(Buffer.from(text)).length; // Python's zlib.compress
    expect(g0.compressionRatio).toBeCloseTo(zlibRatio, 12);
    expect(g0.compressionRatio).toBeGreaterThan(2.4);
    expect(g0.temperature).toBe(0);
    // Its mean log-probability: each token's among those the filters left, from a teacher-forced run.
    const run = model.run({ audio, target: greedy.targetIds }, { returnLogits: true });
    const V = model.info.vocabSize;
    const suppressed = new Set(model.info.speech!.suppressTokens);
    let sum = 0;
    for (let k = 3; k + 1 < greedy.targetIds.length; k++) {
      const logits = run.logits!.data.subarray(k * V, (k + 1) * V);
      const allowed = (id: number) =>
        !suppressed.has(id) && id <= NO_TIMESTAMPS && !(k === 3 && (id === 220 || id === EOT));
      let max = -Infinity;
      for (let id = 0; id < V; id++) if (allowed(id)) max = Math.max(max, logits[id]!);
      let z = 0;
      for (let id = 0; id < V; id++) if (allowed(id)) z += Math.exp(logits[id]! - max);
      sum += logits[greedy.targetIds[k + 1]!]! - max - Math.log(z);
    }
    const counted = greedy.targetIds.length - 4 - (greedy.stopReason === 'eos' ? 1 : 0) + 1;
    expect(g0.avgLogprob).toBeCloseTo(sum / counted, 4);
    // With openai's temperatures: decoded again, hotter, until the text no longer repeats (or the last).
    const temperatures = [0, 0.2, 0.4, 0.6, 0.8, 1];
    const g = await model.generate({ audio }, { language: 'en', maxNewTokens: 40, temperature: temperatures, seed: 2 });
    const w = g.windows[0]!;
    expect(w.temperature).toBeGreaterThan(0);
    expect(w.compressionRatio <= 2.4 && w.avgLogprob >= -1 ? true : w.temperature === 1).toBe(true);
    // Each temperature tried before it failed a threshold: decoding at it alone gives a window that falls back.
    for (const t of temperatures.slice(0, temperatures.indexOf(w.temperature))) {
      const at = (await model.generate({ audio }, { language: 'en', maxNewTokens: 40, temperature: t, seed: 2 }))
        .windows[0]!;
      expect(at.compressionRatio > 2.4 || at.avgLogprob < -1).toBe(true);
    }
    // Thresholds that nothing fails: the first temperature stands.
    const kept = await model.generate(
      { audio },
      {
        language: 'en',
        maxNewTokens: 40,
        temperature: temperatures,
        compressionRatioThreshold: 1e9,
        logProbThreshold: -1e9,
      },
    );
    expect(kept.windows[0]!.temperature).toBe(0);
    expect(Array.from(kept.targetIds)).toEqual(Array.from(greedy.targetIds));
    await expect(model.generate({ audio }, { temperature: [] })).rejects.toThrow('temperature must be a finite number');
    await expect(model.generate({ audio }, { temperature: [0, -1] })).rejects.toThrow('or a list of them');
  });

  it('ranks the heads that time the words first', async () => {
    // Planted: 12 tokens over 300 frames (6 s), token k from startFrame[k] to startFrame[k + 1]. Head (1, 1) looks at
    // the span of the token each row predicts (row k, token k + 1's); (1, 0) at the span 1 s later; (0, 0) at the
    // first frame always; the rest everywhere at random.
    const [layers, heads, tokens, frames] = [2, 3, 12, 300];
    const startFrame = Array.from({ length: tokens + 1 }, (_, k) => Math.min(frames, Math.round(k * 22 + (k % 3) * 4)));
    const next = uniform(17);
    const cross = new Float32Array(layers * heads * tokens * frames);
    const inSpan = (f: number, r: number, shift: number) =>
      r + 1 < tokens ? f >= startFrame[r + 1]! + shift && f < startFrame[r + 2]! + shift : f >= frames - 4;
    for (let l = 0; l < layers; l++)
      for (let h = 0; h < heads; h++)
        for (let r = 0; r < tokens; r++) {
          const row = cross.subarray(
            ((l * heads + h) * tokens + r) * frames,
            ((l * heads + h) * tokens + r + 1) * frames,
          );
          for (let f = 0; f < frames; f++) {
            if (l === 1 && h === 1) row[f] = (inSpan(f, r, 0) ? 1 : 0) + 1e-3 * next();
            else if (l === 1 && h === 0) row[f] = (inSpan(f, r, 50) ? 1 : 0) + 1e-3 * next();
            else if (l === 0 && h === 0) row[f] = f === 0 ? 1 : 1e-3 * next();
            else row[f] = next();
          }
          const sum = row.reduce((a, b) => a + b, 0);
          for (let f = 0; f < frames; f++) row[f] /= sum;
        }
    const reference = startFrame.slice(1, tokens).map((f, i) => ({
      word: ` w${i}`,
      start: f * 0.02,
      end: f * 0.02 + 0.2,
      probability: 1,
      tokens: [i + 1, i + 2] as [number, number],
      window: 0,
    }));
    const result = {
      windows: [{ start: 0, maps: { cross: { attentions: cross, shape: [layers, heads, tokens, frames] } } }],
      words: reference,
    } as unknown as SpeechGenerateResult;
    const ranked = model.scoreAlignmentHeads(result);
    expect(ranked.length).toBe(layers * heads);
    expect([ranked[0]!.layer, ranked[0]!.head]).toEqual([1, 1]);
    expect(ranked[0]!.score).toBeGreaterThanOrEqual(0.9);
    expect(ranked[0]!.meanError).toBeLessThan(0.1);
    const late = ranked.find((s) => s.layer === 1 && s.head === 0)!;
    const sink = ranked.find((s) => s.layer === 0 && s.head === 0)!;
    expect(late.meanError).toBeGreaterThan(0.5);
    expect(sink.score).toBeLessThan(0.3);
    // A wider tolerance forgives the late head; the order stays best first.
    const loose = model.scoreAlignmentHeads(result, { tolerance: 1.5 });
    expect(loose.find((s) => s.layer === 1 && s.head === 0)!.score).toBeGreaterThan(late.score);
    for (let i = 1; i < loose.length; i++) expect(loose[i - 1]!.score).toBeGreaterThanOrEqual(loose[i]!.score);
    // On a generation: every head, against its own words.
    const g = await model.generate(
      { audio: speech(16000 * 4, 8) },
      { language: 'en', wordTimestamps: true, maxNewTokens: 12 },
    );
    const scored = model.scoreAlignmentHeads(g);
    expect(scored.map((s) => `${s.layer},${s.head}`).sort()).toEqual(['0,0', '0,1', '1,0', '1,1']);
    for (const s of scored) (expect(s.score).toBeGreaterThanOrEqual(0), expect(s.score).toBeLessThanOrEqual(1));
    expect(() => model.scoreAlignmentHeads({ ...g, words: undefined })).toThrow('generate with wordTimestamps: true');
    expect(() => model.scoreAlignmentHeads(g, { tolerance: -1 })).toThrow('tolerance must be a number of seconds');
  });

  it('groups tokens into words as transformers.js’s tokenizer does', () => {
    // Words with and without a space, continuations, an opening quote, closing punctuation, and "é" split over
    // its two bytes (each alone decodes to U+FFFD).
    const t = (s: string) => vocab[s]!;
    const sequences = [
      [t('Ġthe'), t('Ġdog'), t('s'), t('Ġsat'), t('.'), t('Ġ"'), t('we'), t('Ġgo'), t(',')],
      [t('Ġcaf'), t('Ã'), t('©'), t('Ġto'), t('Ġthe'), t('Ġmoon'), t('!')],
    ].map((ids) => [SOT, 50259, TRANSCRIBE, NO_TIMESTAMPS, ...ids, EOT]);
    const theirs = xenovaWords(
      tokenizer,
      sequences.map((tokens) => ({ tokens, times: tokens.map((_, i) => i * 0.1) })),
    );
    sequences.forEach((ids, i) => {
      const text = ids.slice(4, -1);
      const words = theirs[i]!.chunks.map((c) => c.text);
      expect(words.length).toBeGreaterThan(2);
      expect(groupWordsOf(text)).toEqual(words);
    });
    function groupWordsOf(ids: number[]): string[] {
      return groupWords(ids, (x) => model.decode(x)).map((w) => w.word);
    }
  });
});
