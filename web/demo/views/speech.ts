// The speech pane: what a speech model heard and where it listened, on one time axis (draw/speech.ts). Its
// alignment shows the alignment heads' cross-attention (their mean: what the words were timed with) or the head
// chosen in the grid, with the timing path (dynamic time warping over the alignment heads) through it. The words
// above are buttons: each plays the stretch of sound it was heard in; clicking the picture plays from there, and a
// playhead follows the sound.
import { play } from '../audio.js';
import { paintSpeech, POSITION_SECONDS, speechLayout, type SpeechLayout, type SpeechPicture } from '../draw/speech.js';
import type { RunResult, SpeechRun } from '../protocol.js';
import type { State } from '../state.js';
import { $, changes, fitWidth, setProp, setText, type Page, type View } from './view.js';

const SAMPLE_RATE = 16000;
/** Seconds as m:ss. */
const clock = (seconds: number) => `${Math.floor(seconds / 60)}:${String(Math.floor(seconds % 60)).padStart(2, '0')}`;

/** The shown window's cross-attention set and speech of a speech run, whichever set the page shows. */
function speechOf(s: Readonly<State>): { cross: RunResult; speech: SpeechRun } | null {
  const r = s.result;
  const cross = r?.set === 'cross' ? r : r?.sets?.cross;
  if (!r?.speech || !cross || s.audio?.id !== r.speech.audio) return null;
  return { cross, speech: r.speech };
}

/** The generated tokens' rows of the alignment shown: the alignment heads' mean, or one head's. */
export function alignmentRows(
  cross: RunResult,
  speech: SpeechRun,
  which: 'heads' | 'head',
  layer: number,
  head: number,
): { rows: string[]; alignment: Float32Array; times: number[] } {
  const [, heads, n, positions] = cross.shape;
  const first = speech.promptTokens;
  const rows = cross.tokens.slice(first, n);
  const pairs = which === 'heads' ? speech.alignmentHeads : [[layer, head] as [number, number]];
  const alignment = new Float32Array(rows.length * positions);
  for (const [l, h] of pairs) {
    const slot = cross.mapLayers.indexOf(l);
    if (slot < 0) continue;
    const base = (slot * heads + h) * n * positions;
    for (let r = 0; r < rows.length; r++)
      for (let k = 0; k < positions; k++)
        alignment[r * positions + k] += cross.attentions[base + (first + r) * positions + k]! / pairs.length;
  }
  return { rows, alignment, times: Array.from(speech.tokenTimes.subarray(first, n)) };
}

export function speechView(page: Page): View {
  const canvas = $<HTMLCanvasElement>('speech-canvas');
  const wordsBox = $('speech-words');
  const playButton = $<HTMLButtonElement>('speech-play');
  const readout = $('speech-readout');
  const windowRow = $('speech-window-row');
  const windowSelect = $<HTMLSelectElement>('speech-window');
  /** What is drawn, its layout, and the picture without the playhead (redrawn under it each frame). */
  let picture: SpeechPicture | null = null;
  let layout: SpeechLayout | null = null;
  let still: OffscreenCanvas | null = null;
  let playing: ReturnType<typeof play> | null = null;
  let frame = 0;
  const dirty = changes();
  const wordsDirty = changes();

  for (const radio of document.querySelectorAll<HTMLInputElement>('input[name="speech-alignment"]'))
    radio.addEventListener('change', () => page.store.select({ speechAlignment: radio.value as 'heads' | 'head' }));

  function stop(): void {
    playing?.stop();
    playing = null;
  }
  function playFrom(start: number, duration?: number): void {
    const samples = page.store.get().audio?.samples;
    if (!samples) return;
    stop();
    const now = play(samples, start, duration, () => {
      if (playing === now) playing = null;
      setText(playButton, 'Play');
      blit();
    });
    playing = now;
    setText(playButton, 'Stop');
    const tick = () => {
      blit();
      if (playing === now) frame = requestAnimationFrame(tick);
    };
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(tick);
  }
  playButton.addEventListener('click', () => (playing ? stop() : playFrom(picture?.offset ?? 0)));
  windowSelect.addEventListener('change', () => page.store.select({ speechWindow: Number(windowSelect.value) }));
  // A word plays its span; a word of another window shows that window's maps too.
  wordsBox.addEventListener('click', (e) => {
    const b = (e.target as Element).closest<HTMLButtonElement>('button[data-start]');
    if (!b) return;
    const window = Number(b.dataset.window);
    if (window !== page.store.get().speechWindow) page.store.select({ speechWindow: window });
    playFrom(Number(b.dataset.start), Number(b.dataset.end) - Number(b.dataset.start));
  });

  /** The picture, then the playhead where the sound is. */
  function blit(): void {
    if (!still || !layout) return;
    const ctx = canvas.getContext('2d')!;
    ctx.drawImage(still, 0, 0);
    if (!playing) return;
    const t = playing.from + playing.context.currentTime - playing.began - (picture?.offset ?? 0);
    const x = layout.left + t * layout.perSecond;
    ctx.fillStyle = page.colours().fg;
    ctx.fillRect(x, 0, 1.5, layout.height);
  }

  /** What is under the pointer, in words. */
  function describe(x: number, y: number): string {
    if (!picture || !layout) return '';
    const t = (x - layout.left) / layout.perSecond;
    if (t < 0 || t > picture.seconds) return '';
    const at = `${(picture.offset + t).toFixed(2)} s`;
    const a = layout.alignment;
    if (y >= a.y && y < a.y + a.h) {
      const r = Math.floor((y - a.y) / layout.rowHeight);
      const k = Math.min(picture.positions - 1, Math.floor(t / POSITION_SECONDS));
      const which = page.store.get().speechAlignment === 'heads' ? 'the alignment heads (mean)' : 'this head';
      const w = picture.alignment[r * picture.positions + k];
      if (w !== undefined)
        return `${at}: token "${picture.rows[r]}" attends ${w.toFixed(3)} here (${which}); timed at ${(picture.offset + picture.times[r]!).toFixed(2)} s`;
    }
    const word = picture.words.find((w) => t >= w.start && t < w.end);
    if (y >= layout.words.y && word)
      return `${at}: "${word.word.trim()}", ${(picture.offset + word.start).toFixed(2)}–${(picture.offset + word.end).toFixed(2)} s, probability ${word.probability.toFixed(2)}`;
    return at;
  }
  canvas.addEventListener('pointermove', (e) =>
    setText(readout, describe(e.offsetX, e.offsetY) || readout.textContent!),
  );
  canvas.addEventListener('click', (e) => {
    if (!layout || !picture) return;
    const t = (e.offsetX - layout.left) / layout.perSecond;
    const word = e.offsetY >= layout.words.y ? picture.words.find((w) => t >= w.start && t < w.end) : undefined;
    if (word) playFrom(picture.offset + word.start, word.end - word.start);
    else if (t >= 0 && t <= picture.seconds) playFrom(picture.offset + t);
  });

  // Which heads time the words: ticking one adds it, unticking removes it (one at least stays); the words are timed
  // again with them (a run: the worker keeps no generation to re-time).
  const headsTable = $('speech-heads-table');
  headsTable.addEventListener('change', (e) => {
    const box = e.target as HTMLInputElement;
    const [l, h] = box.value.split(',').map(Number);
    const s = page.store.get();
    const now = s.result?.speech?.alignmentHeads ?? [];
    const next = box.checked
      ? [...now, [l, h] as [number, number]].sort((a, b) => a[0] - b[0] || a[1] - b[1])
      : now.filter(([a, b]) => a !== l || b !== h);
    if (!next.length) return void (box.checked = true);
    page.store.select({ speechHeads: next, speechAlignment: 'heads' });
  });
  $('speech-heads-reset').addEventListener('click', () => page.store.select({ speechHeads: null }));
  $('speech-heads-copy').addEventListener('click', () => {
    const text = $('speech-heads-json').textContent ?? '';
    navigator.clipboard?.writeText(text).catch(() => undefined);
  });
  const headsDirty = changes();

  /** The ranking of every head, and the heads that timed the words ticked. */
  function renderHeads(speech: SpeechRun): void {
    setProp($('speech-heads'), 'hidden', false);
    const used = new Set(speech.alignmentHeads.map(([l, h]) => `${l},${h}`));
    setText($('speech-heads-json'), `"alignment_heads": ${JSON.stringify(speech.alignmentHeads)}`);
    setText(
      $('speech-heads-note'),
      speech.headScores.length
        ? 'Each head times the words on its own, as the ticked heads do together (normalized, median-filtered, ' +
            'time-warped), and is scored by the share of the words as they are timed now whose start it puts within ' +
            '0.1 s, and its mean error. Tick the heads to time the words with; a checkpoint whose config names none ' +
            "starts from its decoder's second half."
        : 'No words were heard: there is nothing to score the heads against.',
    );
    if (!headsDirty(speech)) return;
    const tbody = headsTable.querySelector('tbody')!;
    tbody.replaceChildren(
      ...speech.headScores.map(({ layer, head, score, meanError }) => {
        const row = document.createElement('tr');
        const key = `${layer},${head}`;
        row.dataset.used = String(used.has(key));
        const cells = [
          `L${layer + 1} H${head + 1}`,
          `${Math.round(score * 100)}%`,
          `${Math.round(meanError * 1000)} ms`,
        ];
        for (const text of cells) {
          const td = document.createElement('td');
          td.textContent = text;
          row.append(td);
        }
        const td = document.createElement('td');
        const box = document.createElement('input');
        box.type = 'checkbox';
        box.value = key;
        box.checked = used.has(key);
        box.setAttribute('aria-label', `Time the words with layer ${layer + 1}, head ${head + 1}`);
        td.append(box);
        row.append(td);
        return row;
      }),
    );
  }

  const windowsDirty = changes();
  /** The window picker, for a sound longer than one window: each window's span and the start of its text. */
  function renderWindows(speech: SpeechRun): void {
    const { windows } = speech;
    setProp(windowRow, 'hidden', windows.length < 2);
    if (windowsDirty(windows)) {
      windowSelect.replaceChildren(
        ...windows.map((w, i) => {
          const option = document.createElement('option');
          option.value = String(i);
          const text = w.text.trim();
          option.textContent = `${i + 1}: ${clock(w.start)}–${clock(w.start + w.seconds)}${text ? ` “${text.length > 24 ? `${text.slice(0, 24)}…` : text}”` : ''}`;
          option.title = text;
          return option;
        }),
      );
    }
    windowSelect.value = String(speech.window);
  }

  return {
    id: 'speech',
    pane: 'speech',
    render(s) {
      for (const radio of document.querySelectorAll<HTMLInputElement>('input[name="speech-alignment"]'))
        setProp(radio, 'checked', radio.value === s.speechAlignment);
      const got = speechOf(s);
      const empty = $('speech-empty');
      setProp(empty, 'hidden', !!got);
      setProp(canvas, 'hidden', !got);
      setProp(playButton, 'disabled', !s.audio);
      setText(
        empty,
        s.runError
          ? `Could not transcribe the sound: ${s.runError}`
          : s.audio
            ? 'Transcribing…'
            : 'Choose, drop or record a sound (the side panel): the model transcribes it, and this pane shows where it listened for each word.',
      );
      if (!got) {
        if (wordsDirty(null)) wordsBox.replaceChildren();
        setProp($('speech-heads'), 'hidden', true);
        picture = null;
        return;
      }
      const { cross, speech } = got;
      renderHeads(speech);
      setProp($<HTMLButtonElement>('speech-heads-reset'), 'disabled', !s.speechHeads);
      renderWindows(speech);
      // The shown window's words, in its own seconds as the picture's times are.
      const words = speech.words
        .filter((w) => w.window === speech.window)
        .map((w) => ({ ...w, start: w.start - speech.start, end: w.end - speech.start }));
      if (wordsDirty(speech)) {
        wordsBox.replaceChildren(
          ...speech.words.map((w) => {
            const b = document.createElement('button');
            b.type = 'button';
            b.textContent = w.word.trim();
            b.dataset.start = String(w.start);
            b.dataset.end = String(w.end);
            b.dataset.window = String(w.window);
            if (w.window === speech.window) b.dataset.shown = '';
            b.style.setProperty('--p', w.probability.toFixed(2));
            b.title = `${w.start.toFixed(2)}–${w.end.toFixed(2)} s, probability ${w.probability.toFixed(2)}: click to hear it`;
            return b;
          }),
        );
      }
      const note = $('speech-note');
      const heads = speech.alignmentHeads.map(([l, h]) => `L${l + 1} H${h + 1}`).join(', ');
      const windows = speech.windows.length;
      setText(
        note,
        `Rows: the tokens written; columns: the ${cross.shape[3]} audio positions heard (20 ms each). ` +
          `The words were timed on the alignment heads (${heads}): each head's rows normalized, median-filtered, ` +
          'averaged, and a dynamic-time-warping path (orange) drawn through them; a token starts where the path enters its row. ' +
          `Each row is coloured from 0 to its largest weight.` +
          (windows > 1
            ? ` The sound is ${windows} windows of 30 s: the maps are window ${speech.window + 1}'s ` +
              `(${clock(speech.start)}–${clock(speech.start + speech.seconds)}); choose another above, or click one of its words.`
            : ''),
      );
      const which = s.speechAlignment;
      const resized = fitWidth(canvas, canvas.height || 300, 320);
      if (
        !dirty(
          cross,
          speech,
          which,
          which === 'head' ? s.layer : -1,
          which === 'head' ? s.head : -1,
          page.colours().fg,
        ) &&
        !resized
      )
        return;
      const rows = alignmentRows(cross, speech, which, s.layer, s.head);
      const from = Math.round(speech.start * SAMPLE_RATE);
      picture = {
        samples: s.audio!.samples.subarray(from, from + Math.round(cross.shape[3] * POSITION_SECONDS * SAMPLE_RATE)),
        offset: speech.start,
        seconds: cross.shape[3] * POSITION_SECONDS,
        features: speech.features,
        melBins: speech.melBins,
        frames: speech.frames,
        positions: cross.shape[3],
        words,
        ...rows,
      };
      layout = speechLayout(canvas.width, picture);
      // The path's rows and times, as drawn, for the tests.
      canvas.dataset.times = JSON.stringify(picture.times);
      if (canvas.height !== layout.height) canvas.height = layout.height;
      still = new OffscreenCanvas(layout.width, layout.height);
      paintSpeech(still.getContext('2d') as unknown as CanvasRenderingContext2D, picture, layout, page.colours());
      blit();
    },
    export: {
      canvas: () => canvas,
      draw: (c) => {
        if (picture && layout) paintSpeech(c.getContext('2d')!, picture, layout, page.colours());
      },
    },
  };
}
