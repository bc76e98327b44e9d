// Whisper against whisper.cpp, an implementation nobody here wrote (npm smart-whisper builds it from its vendored
// source): a random checkpoint in the Hub's layout (which AttnScope loads) and its legacy ggml twin (which whisper.cpp
// loads, written here from the same float32 weights), both hearing whisper.cpp's own jfk.wav. whisper.cpp decodes
// greedily with its temperature fallback off; its token filters (what it never generates, and a space or the end
// first) are this checkpoint's generation_config.json, so the two decode under the same rules. Its tokens are held
// to AttnScope's greedy generation wherever the choice is clear, and each token's probability to AttnScope's
// teacher-forced run on whisper.cpp's own tokens, under the same filters.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Model } from '../../dist/node.js';
import { safetensors } from '../safetensors.mjs';
import {
  ggmlWhisper,
  halfBits,
  halfValue,
  jfkWav,
  randomWhisper,
  roundToGgmlHalves,
  whisperTokenizer,
  xenovaFilters,
  uniform,
} from '../whisper.mjs';
import { engineFor } from './engines.js';

const reference = fileURLToPath(new URL('../reference/whisper-cpp/node_modules/smart-whisper/', import.meta.url));
const WORDS = ['and', 'so', 'my', 'fellow', 'americans', 'ask', 'not', 'what', 'your', 'country', 'can', 'do'];
const SOT = 50258,
  EOT = 50257,
  EN = 50259,
  TRANSCRIBE = 50359,
  NO_TIMESTAMPS = 50363;
/**
 * What whisper.cpp never generates (whisper_process_logits): the start of transcript, every language, translate,
 * transcribe, the previous-text and LM markers, no-captions and no-timestamps; with no_timestamps, the timestamps.
 */
const NEVER = [
  SOT,
  ...Array.from({ length: 99 }, (_, i) => EN + i),
  50358,
  TRANSCRIBE,
  50360,
  50361,
  50362,
  NO_TIMESTAMPS,
];

const SPREAD = 20;
const dir = mkdtempSync(join(tmpdir(), 'attnscope-whisper-cpp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface CppToken {
  id: number;
  p: number;
  text: string;
}

describe('Whisper against whisper.cpp (smart-whisper)', () => {
  let engine: Engine;
  let model: Model;
  let cpp: CppToken[];
  /** AttnScope's teacher-forced run on whisper.cpp's tokens (teacherForced), for every test. */
  let mine: Array<{ p: number; best: number; margin: number }>;
  let samples: Float32Array;
  const { tokenizer, generationConfig, vocab } = whisperTokenizer(WORDS);
  beforeAll(async () => {
    engine = await engineFor('relaxed-simd', 1);
    const whisper = randomWhisper(80, {
      vocab: 51865,
      targets: 448,
      encoderLayers: 2,
      decoderLayers: 2,
      d: 64,
      ffn: 256,
      heads: 2,
    });
    // Every weight drawn afresh from xorshift32 (randomWhisper's generator repeats within a 51,865-row embedding),
    // uniform in ±0.2; logits spread as a trained model's are (units apart, not hundredths): the tied embedding
    // scaled up.
    const next = uniform(2024);
    for (const [name, { data }] of Object.entries(whisper.state)) {
      const scale = name === 'model.decoder.embed_tokens.weight' ? SPREAD : 1;
      for (let i = 0; i < data.length; i++) data[i] = (next() - 0.5) * 0.4 * scale;
    }
    // whisper.cpp keeps its matrices in float16: the checkpoint's are the same halves, in float32.
    roundToGgmlHalves(whisper.state);
    Object.assign(whisper.config, {
      decoder_start_token_id: SOT,
      eos_token_id: EOT,
      bos_token_id: EOT,
      pad_token_id: EOT,
    });
    // whisper.cpp's filters as this checkpoint's: it suppresses its special tokens and, first, a space (" ", which
    // is id 32 in this vocabulary, not GPT-2's 220) and the end of text.
    const generation = JSON.parse(new TextDecoder().decode(generationConfig));
    Object.assign(generation, { suppress_tokens: NEVER, begin_suppress_tokens: [vocab['Ġ'], EOT] });
    const json = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
    model = await engine.loadModel({
      files: {
        'config.json': json(whisper.config),
        'preprocessor_config.json': json(whisper.preprocessor),
        'model.safetensors': safetensors(whisper.state),
        'tokenizer.json': tokenizer,
        'generation_config.json': json(generation),
      },
    });
    const file = join(dir, 'ggml-random.bin');
    writeFileSync(file, ggmlWhisper(whisper, vocab, xenovaFilters(80)));
    samples = (await engine.decodeAudio(jfkWav())).samples;
    const { Whisper } = await import(join(reference, 'dist/index.js'));
    const w = new Whisper(file, { gpu: false });
    try {
      const task = await w.transcribe(samples, {
        strategy: 0, // greedy
        best_of: 1,
        n_threads: 1,
        language: 'en',
        translate: false,
        no_timestamps: true,
        single_segment: true,
        no_context: true,
        suppress_blank: true,
        suppress_non_speech_tokens: false,
        temperature: 0,
        temperature_inc: 0, // no fallback
        format: 'detail',
      });
      const segments = await task.result;
      cpp = segments.flatMap((s: { tokens: CppToken[] }) => s.tokens).filter((t: CppToken) => t.id < EOT);
    } finally {
      await w.free();
    }
    mine = teacherForced();
  }, 120_000);
  afterAll(() => {
    model?.dispose();
    engine?.dispose();
  });

  /**
   * AttnScope's teacher-forced run on whisper.cpp's tokens, under whisper.cpp's filters: at each of them, the
   * probability of whisper.cpp's token, AttnScope's most likely token and its lead over the next (in logits).
   */
  function teacherForced(): Array<{ p: number; best: number; margin: number }> {
    const target = Int32Array.from([SOT, EN, TRANSCRIBE, NO_TIMESTAMPS, ...cpp.map((t) => t.id)]);
    const logits = model.run({ audio: samples, target }, { returnLogits: true }).logits!;
    const size = logits.shape[1];
    const never = new Set(NEVER);
    return cpp.map((t, k) => {
      const row = logits.data.subarray((3 + k) * size, (4 + k) * size);
      // Timestamps (from 50364) are never generated without them; a space or the end of text not first.
      const keep = (i: number) => !never.has(i) && i < 50364 && !(k === 0 && (i === EOT || i === vocab['Ġ']));
      let top = -Infinity,
        best = -1,
        second = -Infinity;
      for (let i = 0; i < size; i++) {
        if (!keep(i)) continue;
        if (row[i] > top) [second, top, best] = [top, row[i], i];
        else if (row[i] > second) second = row[i];
      }
      let sum = 0;
      for (let i = 0; i < size; i++) if (keep(i)) sum += Math.exp(row[i] - top);
      return { p: Math.exp(row[t.id] - top) / sum, best, margin: top - second };
    });
  }

  it('reads the same file: whisper.cpp writes text, as confident as a trained model', () => {
    expect(cpp.length).toBeGreaterThan(32);
    const meanP = cpp.reduce((a, t) => a + t.p, 0) / cpp.length;
    expect(meanP).toBeGreaterThan(0.1);
  });

  it("each token's probability under the same filters is AttnScope's, on whisper.cpp's own tokens", () => {
    let worst = 0;
    cpp.forEach((t, k) => (worst = Math.max(worst, Math.abs(Math.log(mine[k].p) - Math.log(t.p)))));
    const least = Math.min(...mine.map((m) => m.margin));
    console.log(
      `whisper.cpp: ${cpp.length} tokens, log-probabilities within ${worst.toExponential(2)} of AttnScope's; ` +
        `the least lead of the most likely token ${least.toFixed(3)}`,
    );
    // whisper.cpp rounds every matrix product's activations to float16 (2^-11 relative) against float16 weights
    // that AttnScope holds exactly: through two layers and the output projection a log-probability moves by a few
    // times that. Eight times is the bound.
    expect(worst).toBeLessThan(8 * 2 ** -11);
    // Where AttnScope's choice leads by more than that error could move it, it is whisper.cpp's.
    cpp.forEach((t, k) => {
      if (mine[k].margin > 0.1) expect(mine[k].best, `token ${k}`).toBe(t.id);
    });
  });

  it("AttnScope's greedy generation writes whisper.cpp's tokens up to the first close call", async () => {
    const clear = mine.findIndex((m) => m.margin <= 0.1);
    const upTo = clear < 0 ? cpp.length : clear;
    const g = await model.generate({ audio: samples }, { language: 'en', attentions: false });
    const generated = Array.from(g.targetIds.subarray(4)).filter((id) => id < EOT);
    console.log(`greedy: ${upTo} of whisper.cpp's ${cpp.length} tokens before any close call`);
    expect(upTo).toBeGreaterThan(cpp.length / 2);
    expect(generated.slice(0, upTo)).toEqual(cpp.slice(0, upTo).map((t) => t.id));
  });
});
