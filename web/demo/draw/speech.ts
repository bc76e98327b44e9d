// The speech pane's picture, on one time axis (the seconds the model heard in one 30 s window): the waveform,
// the log-mel spectrogram the encoder read (low frequencies at the bottom), each generated token's cross-attention
// over the audio positions (20 ms each) with the path that timed the words drawn through it, and the words as spans.
// Canvas drawing only: the view (views/speech.ts) says what to draw and reads the layout back for the pointer.
import { cellImage, viridis, type Box } from './heatmap.js';

export interface SpeechPicture {
  /** The window's sound as the model heard it, 16 kHz. */
  samples: Float32Array;
  /** Where the window starts in the whole sound (s): the axis's labels. The picture's times are the window's. */
  offset: number;
  /** Seconds the axis spans: the audio positions the maps hold, 20 ms each. */
  seconds: number;
  /** [melBins, frames], frames = 2 per audio position. */
  features: Float32Array;
  melBins: number;
  frames: number;
  /** The alignment's rows (the generated tokens) and their weights over the positions, [rows, positions]. */
  rows: string[];
  alignment: Float32Array;
  positions: number;
  /** Each row's time (s): where the timing path enters it. */
  times: number[];
  words: Array<{ word: string; start: number; end: number; probability: number }>;
}

export interface SpeechLayout {
  width: number;
  height: number;
  /** Where time runs: x of 0 s and the pixels per second. */
  left: number;
  perSecond: number;
  wave: Box;
  spectrogram: Box;
  alignment: Box;
  words: Box;
  rowHeight: number;
}

const LEFT = 72;
const RATE = 16000;
/** The seconds one encoder position hears: 2 frames of 10 ms. */
export const POSITION_SECONDS = 0.02;

export function speechLayout(width: number, p: Pick<SpeechPicture, 'rows' | 'seconds'>): SpeechLayout {
  const plot = Math.max(60, width - LEFT - 8);
  const rowHeight = Math.max(6, Math.min(16, Math.floor(320 / Math.max(1, p.rows.length))));
  const wave = { x: LEFT, y: 4, w: plot, h: 44 };
  const spectrogram = { x: LEFT, y: wave.y + wave.h + 6, w: plot, h: 80 };
  const alignment = {
    x: LEFT,
    y: spectrogram.y + spectrogram.h + 6,
    w: plot,
    h: rowHeight * Math.max(1, p.rows.length),
  };
  const words = { x: LEFT, y: alignment.y + alignment.h + 6, w: plot, h: 22 };
  return {
    width,
    height: words.y + words.h + 20,
    left: LEFT,
    perSecond: plot / Math.max(1e-3, p.seconds),
    wave,
    spectrogram,
    alignment,
    words,
    rowHeight,
  };
}

/** A tick step of 0.1, 0.2, 0.5, 1, 2, 5 … seconds that leaves at least 48 px between ticks. */
function tickStep(perSecond: number): number {
  for (const step of [0.1, 0.2, 0.5, 1, 2, 5, 10, 30]) if (step * perSecond >= 48) return step;
  return 60;
}

const fit = (ctx: CanvasRenderingContext2D, text: string, room: number) => {
  if (ctx.measureText(text).width <= room) return text;
  let t = text;
  while (t.length > 1 && ctx.measureText(`${t}…`).width > room) t = t.slice(0, -1);
  return `${t}…`;
};

export function paintSpeech(
  ctx: CanvasRenderingContext2D,
  p: SpeechPicture,
  l: SpeechLayout,
  c: { fg: string; muted: string; accent: string; bg: string },
): void {
  ctx.fillStyle = c.bg;
  ctx.fillRect(0, 0, l.width, l.height);
  ctx.font = '10px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  const label = (text: string, box: Box) => {
    ctx.fillStyle = c.muted;
    ctx.fillText(text, box.x - 6, box.y + box.h / 2);
  };

  // The waveform: each pixel column's lowest and highest sample.
  const { wave } = l;
  label('sound', wave);
  ctx.fillStyle = c.accent;
  const perPixel = RATE / l.perSecond;
  const mid = wave.y + wave.h / 2;
  for (let x = 0; x < wave.w; x++) {
    const from = Math.floor(x * perPixel);
    const to = Math.min(p.samples.length, Math.floor((x + 1) * perPixel));
    if (from >= to) continue;
    let lo = 0,
      hi = 0;
    for (let i = from; i < to; i++) {
      const v = p.samples[i]!;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    ctx.fillRect(wave.x + x, mid - hi * (wave.h / 2), 1, Math.max(1, (hi - lo) * (wave.h / 2)));
  }

  // The spectrogram, scaled to its own range, the lowest mel bin at the bottom.
  const { spectrogram: spec } = l;
  label('log-mel', spec);
  let min = Infinity,
    max = -Infinity;
  for (const v of p.features) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const flipped = new Float32Array(p.melBins * p.frames);
  const range = max - min || 1;
  for (let m = 0; m < p.melBins; m++)
    for (let f = 0; f < p.frames; f++)
      flipped[(p.melBins - 1 - m) * p.frames + f] = (p.features[m * p.frames + f]! - min) / range;
  ctx.imageSmoothingEnabled = true;
  ctx.drawImage(cellImage(flipped, p.frames, [0, p.melBins], [0, p.frames]), spec.x, spec.y, spec.w, spec.h);

  // The alignment: each row scaled to its largest weight, so that every token's listening shows.
  const { alignment: a } = l;
  const scaled = new Float32Array(p.alignment.length);
  for (let r = 0; r < p.rows.length; r++) {
    let top = 0;
    for (let k = 0; k < p.positions; k++) top = Math.max(top, p.alignment[r * p.positions + k]!);
    for (let k = 0; k < p.positions; k++)
      scaled[r * p.positions + k] = top > 0 ? p.alignment[r * p.positions + k]! / top : 0;
  }
  if (p.rows.length) {
    ctx.imageSmoothingEnabled = a.w < p.positions;
    ctx.drawImage(cellImage(scaled, p.positions, [0, p.rows.length], [0, p.positions], viridis), a.x, a.y, a.w, a.h);
  }
  ctx.fillStyle = c.fg;
  ctx.textAlign = 'right';
  if (l.rowHeight >= 9)
    p.rows.forEach((t, r) => ctx.fillText(fit(ctx, t, LEFT - 10), a.x - 6, a.y + (r + 0.5) * l.rowHeight));
  else label('tokens', a);
  // The timing path: a row from its time to the next row's, then down.
  const x = (t: number) => l.left + t * l.perSecond;
  ctx.strokeStyle = '#ff6b35';
  ctx.lineWidth = 2;
  ctx.beginPath();
  p.rows.forEach((_, r) => {
    const y = a.y + (r + 0.5) * l.rowHeight;
    const t0 = p.times[r]!;
    const t1 = r + 1 < p.rows.length ? p.times[r + 1]! : p.seconds;
    if (r === 0) ctx.moveTo(x(t0), y);
    else ctx.lineTo(x(t0), y);
    ctx.lineTo(x(t1), y);
  });
  ctx.stroke();

  // The words as spans, shaded by their probability.
  const { words: wb } = l;
  label('words', wb);
  ctx.textAlign = 'center';
  for (const w of p.words) {
    const x0 = x(w.start),
      x1 = Math.max(x0 + 1, x(w.end));
    ctx.globalAlpha = 0.15 + 0.6 * w.probability;
    ctx.fillStyle = c.accent;
    ctx.fillRect(x0, wb.y, x1 - x0 - 1, wb.h);
    ctx.globalAlpha = 1;
    ctx.fillStyle = c.fg;
    if (x1 - x0 > 14) ctx.fillText(fit(ctx, w.word.trim(), x1 - x0 - 4), (x0 + x1) / 2, wb.y + wb.h / 2);
  }

  // The time axis.
  const step = tickStep(l.perSecond);
  const axis = wb.y + wb.h + 4;
  ctx.fillStyle = c.muted;
  ctx.textBaseline = 'top';
  for (let t = 0; t <= p.seconds + 1e-9; t += step) {
    const xt = x(t);
    ctx.fillRect(xt, axis, 1, 3);
    ctx.textAlign = t === 0 ? 'left' : 'center';
    ctx.fillText(`${Number((p.offset + t).toFixed(1))} s`, xt, axis + 4);
  }
}
