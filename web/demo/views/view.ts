// What every view is: `render(state)` draws it from the page state, and `export` (if it has a
// picture) gives the canvas for PNG and the drawing code for SVG. A view lives in a pane; a pane
// that is not shown is not drawn, and draws itself when it is shown.
import type { Colours } from '../draw/charts.js';
import type { Ask, Kind } from '../protocol.js';
import type { State, Store } from '../state.js';

export interface Export {
  /** The canvas as shown, for PNG. */
  canvas(): HTMLCanvasElement;
  /** Draws the same picture on any canvas the size of `canvas()` (or `size()`): the SVG recorder's. */
  draw(canvas: HTMLCanvasElement): void;
  /** The picture's size in CSS pixels, where the canvas holds more device pixels than that. */
  size?(): { width: number; height: number };
}

export interface View {
  /** Names its exports (`data-export`) and their files. */
  id: string;
  /** The dock pane it lives in; views without one are always on screen. */
  pane?: string;
  render(state: Readonly<State>): void;
  export?: Export;
}

/** What a view may use of the page. */
export interface Page {
  store: Store;
  /** Sends a request to the worker (see channel.ts); its reply lands in the state. */
  ask<K extends Kind>(ask: Ask<K>, transfer?: Transferable[]): number;
  /** Whether a run has been asked for and not answered yet (what the page shows is not of the text in the box). */
  pending(): boolean;
  colours(): Colours & { bg: string };
  /** Runs the text (or the ids it stands for) again, e.g. to leave the induction test's sequence. */
  run(): void;
  /** Ends the generation in progress where the page shows it: tokens the worker sends later never count. */
  stopGeneration(): void;
  /**
   * Asks for a target generated from the source (encoder-decoders) with the state's beams: with 1, its tokens stream
   * into the state; with more, the search's winner arrives whole.
   */
  translate(): void;
  /**
   * Ends the target's generation, keeping the tokens shown so far as the target, which then runs teacher-forced; a
   * beam search, which shows none, ends with its leading beam as the target (its reply still counts).
   */
  stopTranslation(): void;
  /** Vision models: moves a copy of a decoded image to the worker (transferred), where runs name it by its id. */
  sendImage(id: number, bitmap: ImageBitmap): void;
  /**
   * Speech models: sends a sound file's bytes (moved) to the worker, whose engine reads them as the model hears them;
   * the sound lands in the state (or the reason it could not be read in its notice). `name` says what it was.
   */
  sendAudio(name: string, bytes: ArrayBuffer): void;
  /** Asks the Hub (in the worker) what a model would download and need; the answer lands in `plans`. */
  askPlan(hub: string): void;
  /** Vision models: loads a second model (replacing the last) and runs the image on it beside the first. */
  loadBeside(source: import('../protocol.js').Source, transfer?: Transferable[]): void;
}

export const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;

/**
 * Sets an element's text, or a property (an input's value, `hidden`, `disabled`), only when it changes: a render
 * runs on every change of the state (a generation's every frame), and a write of the same value still makes the
 * browser lay the page out again.
 */
export function setText(el: HTMLElement, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}
export function setProp<T extends HTMLElement, K extends keyof T>(el: T, key: K, value: T[K]): void {
  if (el[key] !== value) el[key] = value;
}

/** A memo: true when any dependency differs (by identity) from the last call's. */
export function changes(): (...deps: unknown[]) => boolean {
  let last: unknown[] | null = null;
  return (...deps) => {
    const changed = !last || deps.length !== last.length || deps.some((d, i) => d !== last![i]);
    last = deps;
    return changed;
  };
}

/**
 * A height for a chart that fills what its pane leaves under the pane's other content (`reserve`
 * CSS pixels), between `min` and `max`; on a phone, where panes grow with their content, `max`.
 */
export function roomIn(canvas: HTMLCanvasElement, reserve: number, min: number, max: number): number {
  const body = canvas.closest<HTMLElement>('.pane-body');
  if (!body || matchMedia('(max-width: 760px)').matches) return max;
  return Math.round(Math.max(min, Math.min(max, body.clientHeight - reserve)));
}

/** Sizes a canvas's drawing buffer to its width on the page (CSS pixels); true when it changed. */
export function fitWidth(canvas: HTMLCanvasElement, height: number, min = 240): boolean {
  const body = canvas.closest<HTMLElement>('.pane-body');
  const inner = body ? body.clientWidth - 2 * parseFloat(getComputedStyle(body).paddingLeft) : canvas.width;
  const width = Math.max(min, Math.round(inner) - 2);
  if (canvas.width === width && canvas.height === height) return false;
  canvas.width = width;
  canvas.height = height;
  return true;
}

/**
 * Gives a select one "i: token" option per token, unless it has exactly those already;
 * true when it replaced them (the selection then restarts at the first token).
 */
export function fillTokenOptions(select: HTMLSelectElement, tokens: string[]): boolean {
  const labels = tokens.map((t, i) => `${i + 1}: ${t}`);
  if ([...select.options].map((o) => o.text).join('\n') === labels.join('\n')) return false;
  select.replaceChildren(...labels.map((label, i) => new Option(label, String(i))));
  return true;
}

/** A tool pane's parts: what it says before it has run, its note, its chart and the room that chart takes. */
export interface ToolParts {
  empty: HTMLElement;
  note: HTMLElement;
  chart: HTMLCanvasElement;
  /** The chart's height: what the pane leaves after `reserve` px, within [min, max]; none: it sizes itself. */
  room?: [reserve: number, min: number, max: number];
  /** The page's colours: a change redraws the chart. */
  page: Page;
  dirty: ReturnType<typeof changes>;
}

/**
 * Shows a tool pane's result, or its empty state until it has one, or its error; sizes the chart
 * to the pane. True when the chart is to be drawn (a new result, new colours or a new size).
 */
export function toolPane(result: object | null, error: string | undefined, p: ToolParts): boolean {
  p.empty.hidden = !!result || !!error;
  p.chart.hidden = !result || !!error;
  if (error) {
    p.note.textContent = error;
    p.note.dataset.state = 'error';
  }
  if (!result || error) return false;
  p.note.dataset.state = 'ok';
  const resized = !!p.room && fitWidth(p.chart, roomIn(p.chart, ...p.room));
  return p.dirty(result, p.page.colours().fg) || resized;
}

/**
 * Keeps the keyboard's focus on a pair of buttons that take turns (Generate and Stop): when the focused one is
 * disabled, the other takes the focus as soon as it is enabled (a render may enable it later), unless the person
 * has moved the focus elsewhere meanwhile.
 */
export function focusKeeper() {
  let owed = false;
  return {
    /** After a render: `focused` is what had the focus before it; `pair`, the two buttons. */
    follow(focused: Element | null, pair: ReadonlyArray<HTMLElement & { disabled: boolean }>) {
      const inPair = (e: Element | null) => pair.find((b) => b === e);
      if (inPair(focused)?.disabled) owed = true;
      if (!owed) return;
      const now = document.activeElement;
      if (now && now !== document.body && !inPair(now)) {
        owed = false; // the person went on elsewhere
        return;
      }
      const next = pair.find((b) => !b.disabled);
      if (next) {
        next.focus();
        owed = false;
      }
    },
  };
}

/**
 * A file input and drops on the page as one model kind's input: the file chosen (chosen again, a new choice), or the
 * first of the files dropped while `mine()` and every one of them is of the kind (`accept`), before the picker's drop
 * handler takes files as a model's; anything else is left to it.
 */
export function takeFiles(
  input: HTMLInputElement,
  mine: () => boolean,
  accept: (f: File) => boolean,
  use: (f: File) => void,
): void {
  input.addEventListener('change', () => {
    const file = input.files?.[0];
    input.value = '';
    if (file) use(file);
  });
  document.addEventListener(
    'drop',
    (e) => {
      const files = [...(e.dataTransfer?.files ?? [])];
      if (!mine() || !files.length || !files.every(accept)) return;
      e.preventDefault();
      e.stopPropagation();
      use(files[0]);
    },
    { capture: true },
  );
}
