// WAV files as mono float32 samples, and a change of sampling rate, in TypeScript: a speech model's input for Node
// (browsers also decode other formats). Every size in the file is checked against the bytes there are.
//
// WAV (RIFF/WAVE): integer PCM of 8 (unsigned), 16, 24 or 32 bits, IEEE float of 32 or 64 bits, plain or
// WAVE_FORMAT_EXTENSIBLE; chunks other than "fmt " and "data" are skipped. A truncated or lying header is an Error,
// except a data chunk longer than the file (as streaming recorders leave it): the whole frames that are there are read,
// with `truncated` set.

/** A WAV file's samples, mixed to mono, and what the file held. */
export interface Wav {
  /** Mono: the mean of the channels, each scaled to [-1, 1]. */
  samples: Float32Array;
  sampleRate: number;
  channels: number;
  bits: number;
  /** IEEE float samples (else integer PCM). */
  floating: boolean;
  /** The data chunk claimed more bytes than the file holds. */
  truncated: boolean;
}

const fail = (what: string): never => {
  throw new Error(`readWav: ${what}`);
};
const tag = (b: Uint8Array, at: number) => String.fromCharCode(b[at]!, b[at + 1]!, b[at + 2]!, b[at + 3]!);

export function readWav(bytes: Uint8Array): Wav {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = bytes.length;
  if (size >= 4 && tag(bytes, 0) === 'RF64') fail('RF64 (WAV over 4 GB) is not read; cut the recording shorter');
  if (size < 12 || tag(bytes, 0) !== 'RIFF' || tag(bytes, 8) !== 'WAVE')
    fail('this is not a WAV file (no RIFF/WAVE header)');
  let format: Omit<Wav, 'samples' | 'truncated'> | undefined;
  let block = 0;
  for (let at = 12; at + 8 <= size;) {
    const id = tag(bytes, at),
      length = view.getUint32(at + 4, true),
      body = at + 8,
      left = size - body;
    if (id === 'fmt ') {
      if (length < 16 || left < 16) fail('the fmt chunk is shorter than 16 bytes');
      let kind = view.getUint16(body, true);
      const channels = view.getUint16(body + 2, true),
        sampleRate = view.getUint32(body + 4, true),
        bits = view.getUint16(body + 14, true);
      block = view.getUint16(body + 12, true);
      if (kind === 0xfffe) {
        // WAVE_FORMAT_EXTENSIBLE: the format is the first two bytes of the subformat GUID
        if (length < 40 || left < 40) fail('the extensible fmt chunk is shorter than 40 bytes');
        kind = view.getUint16(body + 24, true);
      }
      if (kind !== 1 && kind !== 3)
        fail(
          `format ${kind} is not read (integer PCM, 1, or IEEE float, 3): compressed WAV (µ-law, ADPCM, MP3 in WAV) ` +
            'needs decoding first',
        );
      const floating = kind === 3;
      if (!(floating ? [32, 64] : [8, 16, 24, 32]).includes(bits))
        fail(
          `${bits}-bit ${floating ? 'float' : 'integer'} samples are not read (integer: 8, 16, 24, 32 bits; float: 32, 64)`,
        );
      if (channels < 1 || channels > 64) fail(`the file says it has ${channels} channels`);
      if (sampleRate < 1000 || sampleRate > 384000)
        fail(`the sampling rate ${sampleRate} Hz is outside 1 kHz to 384 kHz`);
      if (block !== channels * (bits / 8))
        fail(`the block size ${block} is not ${channels} channels × ${bits / 8} bytes`);
      format = { sampleRate, channels, bits, floating };
    } else if (id === 'data') {
      if (!format) return fail('the data chunk comes before the fmt chunk');
      const truncated = length > left; // a recorder that never wrote the final size, or a file cut short
      const frames = Math.floor(Math.min(length, left) / block);
      if (frames === 0) fail('the data chunk holds no whole sample');
      const { channels, bits, floating } = format;
      const width = bits / 8;
      const read = floating
        ? bits === 32
          ? (p: number) => view.getFloat32(p, true)
          : (p: number) => view.getFloat64(p, true)
        : bits === 8
          ? (p: number) => (bytes[p]! - 128) / 128 // 8-bit WAV is unsigned
          : bits === 16
            ? (p: number) => view.getInt16(p, true) / 32768
            : bits === 24
              ? (p: number) => ((bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16)) << 8) / 2147483648
              : (p: number) => view.getInt32(p, true) / 2147483648;
      const samples = new Float32Array(frames);
      for (let i = 0; i < frames; i++) {
        let sum = 0;
        for (let c = 0; c < channels; c++) sum += read(body + i * block + c * width);
        const mono = sum / channels;
        if (!Number.isFinite(mono)) fail(`sample ${i} is not a finite number`);
        samples[i] = mono;
      }
      return { samples, ...format, truncated };
    }
    at = body + length + (length & 1); // chunks are padded to an even length
  }
  return fail(format ? 'the file has no data chunk' : 'the file has no fmt chunk');
}

/** The zeroth-order modified Bessel function of the first kind, by its series (Kaiser's window). */
function besselI0(x: number): number {
  let sum = 1,
    term = 1;
  for (let k = 1; k < 64 && term > 1e-17 * sum; k++) {
    term *= (x / (2 * k)) ** 2;
    sum += term;
  }
  return sum;
}

const gcd = (a: number, b: number): number => (b ? gcd(b, a % b) : a);

/** The most filter phases tabulated: rates whose ratio in lowest terms needs more round each output's phase to one. */
const MAX_PHASES = 4096;

/**
 * `x` at `from` Hz resampled to `to` Hz with a Kaiser-windowed sinc (β 8, 16 zero crossings at the lower of the two
 * rates' Nyquist): out[k] = Σ_j x[j] h(k·from/to − j), polyphase over the rates' ratio in lowest terms (up to 4,096
 * phases; past that, each output's phase is rounded to 1/4,096 of an input sample).
 */
export function resample(x: Float32Array, from: number, to: number): Float32Array {
  if (from === to) return x.slice();
  const g = gcd(from, to),
    up = to / g,
    down = from / g,
    phases = Math.min(up, MAX_PHASES);
  const cutoff = Math.min(1, to / from),
    half = 16 / cutoff,
    beta = 8,
    norm = besselI0(beta);
  const reach = Math.ceil(half),
    taps = 2 * reach + 1;
  // Phase q sits q/phases of an input sample past its input sample i; its taps are h(q/phases + j) for j from −reach
  // to reach, applied to x[i − j]. Each is computed when an output first needs it (a short file at an odd rate needs few).
  const rows: Array<Float64Array | undefined> = new Array(phases);
  const row = (q: number) => {
    let filter = rows[q];
    if (filter) return filter;
    filter = rows[q] = new Float64Array(taps);
    for (let j = -reach; j <= reach; j++) {
      const tau = q / phases + j;
      if (Math.abs(tau) >= half) continue;
      const arg = Math.PI * cutoff * tau,
        r = tau / half;
      filter[j + reach] =
        (cutoff * (tau === 0 ? 1 : Math.sin(arg) / arg) * besselI0(beta * Math.sqrt(1 - r * r))) / norm;
    }
    return filter;
  };
  const n = x.length,
    out = new Float32Array(Math.ceil((n * up) / down));
  for (let k = 0; k < out.length; k++) {
    let i = Math.floor((k * down) / up),
      q = (k * down) % up;
    if (phases < up) {
      q = Math.round((q / up) * phases);
      if (q === phases) ((i += 1), (q = 0));
    }
    const h = row(q);
    let sum = 0;
    for (let j = Math.max(-reach, i - (n - 1)), end = Math.min(reach, i); j <= end; j++)
      sum += h[j + reach]! * x[i - j]!;
    out[k] = sum;
  }
  return out;
}
