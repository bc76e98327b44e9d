// Sound for a speech model, on the page's side: a WAV goes to the worker as it is (the engine reads it there, as in
// Node); any other format the browser decodes (MP3, Ogg, WebM, a recording) at 16 kHz and writes as a 32-bit float
// WAV, which the engine then reads the same way. Recording is the microphone through MediaRecorder.

const RATE = 16000;
const AUDIO_FILE = /\.(wav|wave|mp3|ogg|oga|opus|webm|flac|m4a|aac|mp4)$/i;
export const isAudio = (f: File) => f.type.startsWith('audio/') || AUDIO_FILE.test(f.name);

const isWav = (b: Uint8Array) =>
  b.length >= 12 &&
  String.fromCharCode(...b.subarray(0, 4)) === 'RIFF' &&
  String.fromCharCode(...b.subarray(8, 12)) === 'WAVE';

/** What an error about a new sound adds: the sound before it, if there was one, is still the one the model heard. */
export const lastSoundStays = (s: { audio: unknown }) => (s.audio ? ' The last sound stays.' : '');

/** Channels of samples as a 32-bit float WAV (format 3), interleaved. */
export function floatWav(channels: Float32Array[], rate: number): ArrayBuffer {
  const n = channels[0]?.length ?? 0;
  const k = channels.length;
  const bytes = new ArrayBuffer(44 + n * k * 4);
  const v = new DataView(bytes);
  const text = (at: number, s: string) => [...s].forEach((c, i) => v.setUint8(at + i, c.charCodeAt(0)));
  text(0, 'RIFF');
  v.setUint32(4, 36 + n * k * 4, true);
  text(8, 'WAVE');
  text(12, 'fmt ');
  v.setUint32(16, 16, true);
  v.setUint16(20, 3, true);
  v.setUint16(22, k, true);
  v.setUint32(24, rate, true);
  v.setUint32(28, rate * k * 4, true);
  v.setUint16(32, k * 4, true);
  v.setUint16(34, 32, true);
  text(36, 'data');
  v.setUint32(40, n * k * 4, true);
  const out = new Float32Array(bytes, 44);
  for (let i = 0; i < n; i++) for (let c = 0; c < k; c++) out[i * k + c] = channels[c]![i]!;
  return bytes;
}

/** A sound file's bytes as the worker takes them: a WAV as it is, anything else decoded here at 16 kHz. */
export async function wavBytes(bytes: ArrayBuffer): Promise<ArrayBuffer> {
  if (isWav(new Uint8Array(bytes))) return bytes;
  const context = new OfflineAudioContext(1, 1, RATE);
  let buffer: AudioBuffer;
  try {
    buffer = await context.decodeAudioData(bytes);
  } catch {
    throw new Error('this browser could not decode the file as sound: choose a WAV, MP3, Ogg, WebM or FLAC file');
  }
  const channels = Array.from({ length: buffer.numberOfChannels }, (_, c) => buffer.getChannelData(c));
  return floatWav(channels, buffer.sampleRate);
}

/** A recording in progress: `stop()` ends it and gives its bytes (the browser's format, WebM or Ogg). */
export interface Recording {
  stop(): Promise<ArrayBuffer>;
  started: number;
}

/** Starts recording from the microphone (the browser asks the person first). */
export async function record(): Promise<Recording> {
  if (!navigator.mediaDevices?.getUserMedia || typeof MediaRecorder === 'undefined')
    throw new Error('this browser cannot record here (recording needs a secure page: https or localhost)');
  let stream: MediaStream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1 } });
  } catch (err) {
    const name = (err as DOMException).name;
    throw new Error(
      name === 'NotAllowedError'
        ? 'the microphone was not allowed: allow it for this page to record'
        : name === 'NotFoundError'
          ? 'no microphone was found'
          : `the microphone could not start (${(err as Error).message})`,
    );
  }
  const recorder = new MediaRecorder(stream);
  const chunks: Blob[] = [];
  recorder.ondataavailable = (e) => e.data.size && chunks.push(e.data);
  recorder.start();
  return {
    started: performance.now(),
    stop: () =>
      new Promise((resolve, reject) => {
        recorder.onstop = () => {
          stream.getTracks().forEach((t) => t.stop());
          new Blob(chunks, { type: recorder.mimeType }).arrayBuffer().then(resolve, reject);
        };
        recorder.stop();
      }),
  };
}

/** Plays samples at 16 kHz from `start` for `duration` seconds; the returned function stops it. */
export function play(
  samples: Float32Array,
  start: number,
  duration: number | undefined,
  onEnd: () => void,
): { stop(): void; context: AudioContext; began: number; from: number } {
  const context = new AudioContext();
  const buffer = context.createBuffer(1, samples.length, RATE);
  buffer.copyToChannel(samples as Float32Array<ArrayBuffer>, 0);
  const source = context.createBufferSource();
  source.buffer = buffer;
  source.connect(context.destination);
  source.onended = () => {
    void context.close();
    onEnd();
  };
  const began = context.currentTime;
  source.start(0, start, duration);
  return { stop: () => source.stop(), context, began, from: start };
}
