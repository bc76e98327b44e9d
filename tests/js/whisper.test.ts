// Speech through the package: Whisper's log-mel features held to transformers.js's own feature extractor (a library
// nobody here wrote) on tones, noise, silence and real speech; WAV files in every sample format; and Whisper
// checkpoints in the Hub's layout held to PyTorch's layers (tests/golden/make_whisper_goldens.py).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, MapSet, Model } from '../../dist/node.js';
import { resample } from '../../dist/wav.js';
import { WHISPER_GOLDENS, jfkWav, whisperFiles, windowWhisper, xenovaFeatures } from '../whisper.mjs';
import { BUILDS, engineFor } from './engines.js';

function worstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

/** A seeded uniform generator in [-1, 1) (xorshift32). */
function noise(n: number, seed: number, amplitude: number): Float32Array {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 2 ** 31 - 1) * amplitude;
  }
  return out;
}

const tone = (n: number, hz: number, amplitude = 0.5) =>
  Float32Array.from({ length: n }, (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / 16000));

/** A WAV file of interleaved samples (each channel's values in [-1, 1]) in the given integer PCM or float format. */
function wavFile(channels: Float32Array[], rate: number, bits: 8 | 16 | 24 | 32, float = false): Uint8Array {
  const frames = channels[0]!.length,
    width = bits / 8,
    block = width * channels.length;
  const out = new Uint8Array(44 + frames * block);
  const view = new DataView(out.buffer);
  const tag = (at: number, s: string) => [...s].forEach((c, i) => (out[at + i] = c.charCodeAt(0)));
  tag(0, 'RIFF');
  view.setUint32(4, 36 + frames * block, true);
  tag(8, 'WAVE');
  tag(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, float ? 3 : 1, true);
  view.setUint16(22, channels.length, true);
  view.setUint32(24, rate, true);
  view.setUint32(28, rate * block, true);
  view.setUint16(32, block, true);
  view.setUint16(34, bits, true);
  tag(36, 'data');
  view.setUint32(40, frames * block, true);
  for (let i = 0; i < frames; i++)
    channels.forEach((c, ch) => {
      const at = 44 + i * block + ch * width,
        x = c[i]!;
      if (float) view.setFloat32(at, x, true);
      else if (bits === 8) out[at] = Math.round(x * 127) + 128;
      else if (bits === 16) view.setInt16(at, Math.round(x * 32767), true);
      else if (bits === 24) {
        const v = Math.round(x * 8388607);
        out[at] = v & 255;
        out[at + 1] = (v >> 8) & 255;
        out[at + 2] = (v >> 16) & 255;
      } else view.setInt32(at, Math.round(x * 2147483647), true);
    });
  return out;
}

// The features are float64 arithmetic on both sides, rounded to float32: the bound is their agreement's.
const FEATURE_TOLERANCE = 1e-4;

describe('resample', () => {
  const sine = (n: number, hz: number, rate: number) =>
    Float32Array.from({ length: n }, (_, i) => 0.8 * Math.sin((2 * Math.PI * hz * i) / rate));
  it.each([44100, 48000, 22050, 8000, 44056])('a sine at %i Hz is the same sine at 16 kHz', (from) => {
    const y = resample(sine(from, 440, from), from, 16000);
    expect(y.length).toBe(16000);
    const want = sine(16000, 440, 16000);
    let worst = 0;
    for (let k = 200; k < 15800; k++) worst = Math.max(worst, Math.abs(y[k]! - want[k]!)); // away from the edges
    // 44,056 Hz's ratio in lowest terms has more phases than are tabulated: each output's phase is rounded.
    expect(worst).toBeLessThan(from === 44056 ? 1e-3 : 2e-4);
  });
  it('a tone above the new Nyquist is filtered out, not folded down', () => {
    const y = resample(sine(48000, 10000, 48000), 48000, 16000);
    let loudest = 0;
    for (let k = 200; k < 15800; k++) loudest = Math.max(loudest, Math.abs(y[k]!));
    expect(loudest).toBeLessThan(1e-3);
  });
});

describe('Whisper features and audio files (one engine)', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor('relaxed-simd', 1);
  });
  afterAll(() => engine.dispose());

  it("log-mel features agree with transformers.js's WhisperFeatureExtractor within 1e-4: tones, noise, silence, speech", async () => {
    const jfk = await engine.decodeAudio(jfkWav());
    expect(jfk.sampleRate).toBe(16000);
    expect(jfk.source).toEqual({ format: 'WAV, 16-bit PCM', sampleRate: 16000, channels: 1 });
    expect(jfk.seconds).toBeCloseTo(11.0, 1);
    expect(jfk.notices).toEqual([]);
    const chord = tone(16000 * 5, 440).map((x, i) => x + 0.3 * Math.sin((2 * Math.PI * 3517 * i) / 16000));
    const signals = [
      { name: '440 Hz, 1 s', samples: tone(16000, 440), melBins: 80 },
      { name: 'a chord and noise, 5 s', samples: chord.map((x, i) => x + noise(1, i + 1, 0.05)[0]!), melBins: 80 },
      { name: 'white noise, 30 s', samples: noise(16000 * 30, 7, 0.8), melBins: 80 },
      { name: 'silence, 3 s', samples: new Float32Array(48000), melBins: 80 },
      { name: 'a tone past 30 s (cut to the window)', samples: tone(16000 * 35, 1234, 0.2), melBins: 80 },
      { name: 'jfk.wav (real speech)', samples: jfk.samples, melBins: 80 },
      { name: 'jfk.wav, 128 mel bins (large-v3)', samples: jfk.samples, melBins: 128 },
    ];
    const want = xenovaFeatures(signals);
    // The features a run reads, from models that hear whole 30 s windows (1,500 positions), at 80 and 128 mel bins.
    const models = new Map<number, Model>();
    for (const melBins of [80, 128]) models.set(melBins, await engine.loadModel({ files: windowWhisper(melBins) }));
    signals.forEach(({ name, samples, melBins }, i) => {
      const r = models.get(melBins)!.run({ audio: samples, target: [0] });
      expect(r.features.shape, name).toEqual([melBins, 3000]);
      expect(r.truncated, name).toBe(samples.length > 480000);
      expect(worstDifference(r.features.data, want[i]!), name).toBeLessThanOrEqual(FEATURE_TOLERANCE);
    });
    for (const model of models.values()) model.dispose();
  });

  it('reads WAV in every sample format and rate to mono 16 kHz, saying what it did', async () => {
    const at44 = Float32Array.from({ length: 44100 }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / 44100));
    const silent = new Float32Array(44100);
    // Stereo at 44.1 kHz, one channel silent: the mean of the two, resampled.
    const stereo = await engine.decodeAudio(wavFile([at44, silent], 44100, 16));
    expect(stereo.notices).toEqual(['mixed down from 2 channels to one', 'resampled from 44100 Hz to 16000 Hz']);
    expect(stereo.source).toEqual({ format: 'WAV, 16-bit PCM', sampleRate: 44100, channels: 2 });
    expect(stereo.samples.length).toBe(16000);
    let worst = 0;
    for (let k = 300; k < 15700; k++)
      worst = Math.max(worst, Math.abs(stereo.samples[k]! - 0.25 * Math.sin((2 * Math.PI * 440 * k) / 16000)));
    expect(worst).toBeLessThan(1e-3);
    // 8-, 24-, 32-bit integer and float at 16 kHz: the samples as written, to each format's precision.
    const x = tone(1600, 300, 0.7);
    for (const [bits, float, precision] of [
      [8, false, 1 / 100],
      [24, false, 1e-6],
      [32, false, 1e-6],
      [32, true, 1e-7],
    ] as const) {
      const d = await engine.decodeAudio(wavFile([x], 16000, bits, float));
      expect(d.notices).toEqual([]);
      expect(worstDifference(d.samples, x)).toBeLessThan(precision);
    }
    // 8 kHz is upsampled; full-scale samples are counted; silence is named.
    const narrow = await engine.decodeAudio(
      wavFile([Float32Array.from({ length: 8000 }, (_, i) => (i % 2 ? 1 : -1))], 8000, 16),
    );
    expect(narrow.notices).toEqual([
      'resampled from 8000 Hz to 16000 Hz',
      expect.stringMatching(/^clipped: \d+ samples/),
    ]);
    expect((await engine.decodeAudio(wavFile([new Float32Array(1600)], 16000, 16))).notices).toEqual([
      'silent: no sample is louder than 1e-4 of full scale',
    ]);
  });

  it('WAV: 64-bit float, WAVE_FORMAT_EXTENSIBLE and odd-length chunks before the data', async () => {
    const x = tone(800, 440, 0.6);
    const f64 = new Uint8Array(8 * x.length);
    x.forEach((v, i) => new DataView(f64.buffer).setFloat64(8 * i, v, true));
    const extensible = (format: number, bits: number, data: Uint8Array) => {
      const out = new Uint8Array(12 + 12 + 48 + 8 + data.length);
      const view = new DataView(out.buffer);
      const put = (at: number, s: string) => [...s].forEach((c, i) => (out[at + i] = c.charCodeAt(0)));
      put(0, 'RIFF');
      view.setUint32(4, out.length - 8, true);
      put(8, 'WAVE');
      put(12, 'LIST'); // a chunk to skip, of odd length (padded to 4)
      view.setUint32(16, 3, true);
      put(24, 'fmt ');
      view.setUint32(28, 40, true);
      view.setUint16(32, 0xfffe, true);
      view.setUint16(34, 1, true);
      view.setUint32(36, 16000, true);
      view.setUint32(40, (16000 * bits) / 8, true);
      view.setUint16(44, bits / 8, true);
      view.setUint16(46, bits, true);
      view.setUint16(48, 22, true);
      view.setUint16(56, format, true); // the subformat GUID's first two bytes
      put(72, 'data');
      view.setUint32(76, data.length, true);
      out.set(data, 80);
      return out;
    };
    const d = await engine.decodeAudio(extensible(3, 64, f64));
    expect(d.source).toEqual({ format: 'WAV, 64-bit float', sampleRate: 16000, channels: 1 });
    expect(worstDifference(d.samples, x)).toBeLessThan(1e-7);
  });

  it('bad audio is an error naming what is wrong, and the engine goes on', async () => {
    const good = wavFile([tone(1600, 300)], 16000, 16);
    const cut = good.slice(0, 30);
    const lying = good.slice();
    new DataView(lying.buffer).setUint32(40, 1 << 30, true); // a data chunk far longer than the file
    await expect(engine.decodeAudio(new Uint8Array())).rejects.toThrow('decodeAudio: the file is empty');
    await expect(engine.decodeAudio(new TextEncoder().encode('ID3 not a wav file'))).rejects.toThrow(
      'decodeAudio: this is not a WAV file; in Node, convert it to WAV first',
    );
    await expect(engine.decodeAudio(cut)).rejects.toThrow('readWav: the fmt chunk is shorter than 16 bytes');
    const read = await engine.decodeAudio(lying);
    expect(read.notices).toEqual(['the file ends before its header says: read the samples it holds']);
    expect(read.samples.length).toBe(1600);
    await expect(engine.decodeAudio(good, { sampleRate: 12.5 })).rejects.toThrow('sampleRate must be a whole number');
    const header = (patch: (view: DataView) => void) => {
      const f = good.slice();
      patch(new DataView(f.buffer));
      return engine.decodeAudio(f);
    };
    await expect(header((v) => v.setUint16(20, 2, true))).rejects.toThrow('readWav: format 2 is not read');
    await expect(header((v) => v.setUint16(34, 12, true))).rejects.toThrow('readWav: 12-bit integer samples');
    await expect(header((v) => v.setUint16(22, 0, true))).rejects.toThrow('readWav: the file says it has 0 channels');
    await expect(header((v) => v.setUint32(24, 500, true))).rejects.toThrow('readWav: the sampling rate 500 Hz');
    await expect(header((v) => v.setUint32(40, 1, true))).rejects.toThrow('readWav: the data chunk holds no whole');
    await expect(header((v) => v.setUint32(0, 0x34364652, true))).rejects.toThrow('readWav: RF64');
    await expect(engine.decodeAudio(good.slice(0, 36))).rejects.toThrow('readWav: the file has no data chunk');
    const nan = wavFile([Float32Array.of(0.5, Number.NaN)], 16000, 32, true);
    await expect(engine.decodeAudio(nan)).rejects.toThrow('readWav: sample 1 is not a finite number');
  });

  it('WAV, fuzzed: 20,000 mutations of valid files each read or refused with an Error, in bounded time', async () => {
    const seeds = [
      wavFile([tone(400, 300)], 16000, 16),
      wavFile([tone(300, 500), tone(300, 700)], 44100, 24),
      wavFile([tone(200, 200)], 8000, 32, true),
      wavFile([tone(100, 100)], 22050, 8),
    ];
    let s = 12345;
    const random = (n: number) => {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      return (s >>> 0) % n;
    };
    let read = 0,
      refused = 0;
    for (let k = 0; k < 20_000; k++) {
      const f = seeds[random(seeds.length)]!.slice();
      // Overwrite a few bytes, mostly in the 44-byte header, where sizes and formats are; sometimes cut the file.
      for (let m = 1 + random(4); m > 0; m--) f[random(10) < 8 ? random(44) : random(f.length)] = random(256);
      const bytes = random(8) === 0 ? f.slice(0, random(f.length)) : f;
      try {
        const d = await engine.decodeAudio(bytes);
        expect(d.samples.every(Number.isFinite)).toBe(true);
        read++;
      } catch (e) {
        expect(e).toBeInstanceOf(Error);
        expect((e as Error).message).toMatch(/^(decodeAudio|readWav): /);
        refused++;
      }
    }
    expect(read).toBeGreaterThan(1000);
    expect(refused).toBeGreaterThan(1000);
  });
});

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it.each(WHISPER_GOLDENS.map((g) => [g.name, g] as const))(
    '%s: every encoder, decoder and cross-attention map and the logits match PyTorch within 1e-4',
    async (_, g) => {
      const model = await engine.loadModel({ files: whisperFiles(g) });
      expect(model.info).toMatchObject({
        architecture: 'WhisperForConditionalGeneration',
        input: 'audio',
        encoderDecoder: true,
        languageModel: true,
        layers: g.config.decoder_layers,
        audio: {
          samplingRate: 16000,
          melBins: g.config.num_mel_bins,
          nFft: 400,
          hopLength: 160,
          windowSamples: 16000,
          frames: 100,
          positions: 50,
        },
      });
      const features = { data: Float32Array.from(g.features.data), shape: g.features.shape };
      const r = model.run({ features, target: g.target }, { returnLogits: true });
      const { encoder, decoder, cross } = r.maps;
      for (const [set, want] of [
        [encoder, g.encoder],
        [decoder, g.decoder],
        [cross, g.cross],
      ] as Array<[MapSet, typeof g.encoder]>) {
        expect(set.shape).toEqual(want.shape);
        expect(worstDifference(set.attentions, want.data)).toBeLessThanOrEqual(1e-4);
      }
      expect(worstDifference(r.logits!.data, g.logits.data)).toBeLessThanOrEqual(1e-4);
      expect([cross.querySequence, cross.keySequence]).toEqual(['target', 'audio']);
      expect(cross.keyTokens.slice(0, 3)).toEqual(['0.00 s', '0.02 s', '0.04 s']);
      expect(r.audioTokens).toHaveLength(50);
      // A score of the cross map taken apart: the audio's sources (the convolutions and the positions) on the keys.
      const e = model.explainScore(r, { set: 'cross', layer: 0, head: 1, query: 3, key: 20 });
      expect(e.keySources.some((s) => s.kind === 'audio' && s.label === 'sound at "0.40 s"')).toBe(true);
      const sum = e.terms.reduce((a, b) => a + b, 0) + e.positionBias;
      expect(Math.abs(sum - e.score)).toBeLessThan(1e-4 * Math.max(1, Math.abs(e.score)));
      // Audio: its window's features, and bad samples refused, the model still running after.
      const samples = tone(8000, 523);
      const heard = model.run({ audio: samples, target: g.target.slice(0, 3) });
      expect(heard.seconds).toBe(0.5);
      expect(heard.features.shape).toEqual([g.config.num_mel_bins, 100]);
      expect(() => model.run({ audio: [0.1, Number.NaN], target: [60] })).toThrow(
        'run: the audio holds nan at sample 1',
      );
      expect(() => model.run({ audio: new Float32Array(0), target: [60] })).toThrow('run: the audio is empty');
      expect(() => model.run({ audio: 'hello' as unknown as Float32Array, target: [60] })).toThrow(
        'run: audio must be a Float32Array',
      );
      expect(model.run({ audio: samples, target: g.target.slice(0, 3) }).features.data).toEqual(heard.features.data);
      expect(() => model.run('some text')).toThrow('is a speech model: run it on audio');
      model.dispose();
    },
  );
});
