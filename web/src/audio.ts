// Sound in: WAV files (and, in browsers, any format the page can decode), mixed to mono, at the rate a speech model
// hears. The model computes its features from these samples (model.run({ audio, target })).
import type { DecodeAudioOptions, DecodedAudio } from './types.js';
import { checkOptions, typeName } from './checks.js';
import type { Platform } from './raw.js';
import { readWav, resample } from './wav.js';

/** Samples as the engine takes them: a Float32Array as it is, other arrays of numbers copied into one. */
export function samplesOf(op: string, audio: unknown): Float32Array {
  if (audio instanceof Float32Array) return audio;
  if (ArrayBuffer.isView(audio) || Array.isArray(audio)) {
    const values = audio as ArrayLike<number>;
    for (let i = 0; i < values.length; i++)
      if (typeof values[i] !== 'number')
        throw new Error(`${op}: audio[${i}] is not a number, got ${typeName(values[i])}`);
    return Float32Array.from(values);
  }
  throw new Error(`${op}: audio must be a Float32Array of samples (decodeAudio gives one), got ${typeName(audio)}`);
}

const isWav = (b: Uint8Array) =>
  b.length >= 12 &&
  ((b[0] === 0x52 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x46) || // RIFF
    (b[0] === 0x52 && b[1] === 0x46 && b[2] === 0x36 && b[3] === 0x34)); // RF64

export class Audio {
  constructor(private readonly platform: Platform) {}

  async decodeAudio(bytes: Uint8Array | ArrayBuffer | Blob, options?: DecodeAudioOptions): Promise<DecodedAudio> {
    const op = 'decodeAudio';
    const o = checkOptions(op, options, { sampleRate: 'number' }) as DecodeAudioOptions;
    const rate = o.sampleRate ?? 16000;
    if (!Number.isInteger(rate) || rate < 1000 || rate > 384000)
      throw new Error(`${op}: sampleRate must be a whole number of Hz from 1000 to 384000, got ${String(rate)}`);
    const data =
      bytes instanceof Uint8Array
        ? bytes
        : bytes instanceof ArrayBuffer
          ? new Uint8Array(bytes)
          : typeof Blob !== 'undefined' && bytes instanceof Blob
            ? new Uint8Array(await bytes.arrayBuffer())
            : undefined;
    if (!data) throw new Error(`${op}: bytes must be a Uint8Array, an ArrayBuffer or a Blob, got ${typeName(bytes)}`);
    if (data.length === 0) throw new Error(`${op}: the file is empty`);
    const notices: string[] = [];
    let samples: Float32Array, from: number, channels: number, format: string;
    if (isWav(data)) {
      const wav = readWav(data);
      ({ sampleRate: from, channels } = wav);
      samples = from === rate ? wav.samples : resample(wav.samples, from, rate);
      format = `WAV, ${wav.bits}-bit ${wav.floating ? 'float' : 'PCM'}`;
      if (wav.truncated) notices.push('the file ends before its header says: read the samples it holds');
    } else {
      if (!this.platform.decodeAudio)
        throw new Error(`${op}: this is not a WAV file; in Node, convert it to WAV first (ffmpeg -i in.mp3 out.wav)`);
      const decoded = await this.platform.decodeAudio(op, data, rate);
      from = decoded.sampleRate;
      channels = decoded.channels.length;
      samples = new Float32Array(decoded.channels[0]!.length);
      for (const c of decoded.channels) for (let i = 0; i < c.length; i++) samples[i]! += c[i]! / channels;
      format = `decoded and resampled to ${rate} Hz by the browser`;
    }
    if (channels > 1) notices.push(`mixed down from ${channels} channels to one`);
    if (from !== rate) notices.push(`resampled from ${from} Hz to ${rate} Hz`);
    let peak = 0,
      clipped = 0;
    for (const x of samples) {
      const a = Math.abs(x);
      if (a > peak) peak = a;
      if (a >= 0.999) clipped++;
    }
    if (peak < 1e-4) notices.push('silent: no sample is louder than 1e-4 of full scale');
    if (clipped) notices.push(`clipped: ${clipped} samples at full scale`);
    return {
      samples,
      sampleRate: rate,
      seconds: samples.length / rate,
      source: { format, sampleRate: from, channels },
      notices,
    };
  }
}
