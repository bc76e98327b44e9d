// The page's one state: what the person chose (`select`) and what the worker answered (`put`).
// Every change notifies the listeners with the names of the fields that changed; views read the
// state and never keep copies of it. Tests read it too (window.__attnscope), and never write it.
import type { EngineInfo, HubPlan, ModelInfo } from 'attnscope';

import type {
  AcrossResult,
  BesideRun,
  ExplainAsk,
  Mode,
  PageLimit,
  Reply,
  RunResult,
  Sampling,
  PairSet,
} from './protocol.js';

export type View = 'head' | 'rollout' | 'flow';
/**
 * What the cross-attention map of an encoder-decoder shows of the layer: the chosen head, the mean over its heads,
 * or its head of lowest mean row entropy (alignment.ts).
 */
export type Aggregate = 'head' | 'mean' | 'entropy';
/** A dock's panes: the main area's and the analysis tools'. New panes add their id here. */
export type MainPane = 'image' | 'speech' | 'lines' | 'math' | 'why';
/**
 * What the image pane lays over the picture: the selected head's [CLS] attention, every head of the layer at once
 * (one colour per head), rollout's [CLS] row, or each token's norm.
 */
export type Overlay = 'head' | 'heads' | 'rollout' | 'norms';

/** An image the page decoded, to run a vision model on; its bitmap stays here to draw, a copy goes to the worker. */
export interface PageImage {
  /** A new id for every image, so that a run says which image it was of. */
  id: number;
  bitmap: ImageBitmap;
  /** A second bitmap of the same pixels, made off the page's thread, for the worker: moved there once, then null. */
  forWorker: ImageBitmap | null;
  /** The file's name, or the sample's. */
  name: string;
  /** A sample the page draws (a link can carry it), else null (the image came from the person's computer). */
  sample: string | null;
  /** Its size as decoded (EXIF orientation applied), before any scaling down. */
  original: { width: number; height: number };
  /** What the page did to it before the model's own preprocessing (scaled down), or ''. */
  notice: string;
}
/** A sound to run a speech model on, as the engine read it in the worker (mono, 16 kHz). */
export interface PageAudio {
  /** A new id for every sound, so that a run says which sound it was of. */
  id: number;
  /** The file's name, or what the recording was. */
  name: string;
  /** The samples the model hears, for the waveform and for playing it back. */
  samples: Float32Array;
  seconds: number;
  /** What was done to it on the way (decoded by the browser, mixed down, resampled, clipped, silent). */
  notices: string[];
  format: string;
}
export type ToolPane = 'next' | 'lens' | 'heads' | 'induction' | 'across' | 'compare' | 'intervene' | 'ablate' | 'cost';

export interface Choice {
  text: string;
  /** Cross-attention's second text: its tokens are the keys (mode 'cross'); an encoder-decoder's target. */
  context: string;
  /** The target's ids when the model generated it; null once the box is edited (its text is tokenized then). */
  contextIds: number[] | null;
  /** The token ids the text stands for when they came from generation or a chosen candidate; null: the tokenizer's. */
  ids: number[] | null;
  mode: Mode;
  /** Encoder-decoders: which maps the page shows (the text is the source, `context` the target). */
  pairSet: PairSet;
  /** Encoder-decoders' cross-attention map: one head, or the layer's heads taken together. */
  aggregate: Aggregate;
  /** From 0; the page shows them from 1. */
  layer: number;
  head: number;
  /** The token in focus (chips, head view, map cursor row), or null. */
  token: number | null;
  view: View;
  residual: boolean;
  /** For the rollout/flow bars: which output token's row. */
  barToken: number;
  /** Which heads the head view draws. */
  activeHeads: boolean[];
  /**
   * What the Why pane takes apart: the score of the map's cell (query row, key column) for the layer and head shown,
   * or the logit of a next-token candidate after a position. Null until a cell or a candidate is clicked.
   */
  explain: { what: 'score'; query: number; key: number } | { what: 'logit'; position: number; token: number } | null;
  /** The math view's switches. */
  scale: boolean;
  causal: boolean;
  main: MainPane;
  tools: ToolPane;
  /** 'default', a Hub id, or 'files' (cannot be shared). */
  modelId: string;
  /** How the next-token pane re-ranks and generation draws; the seed makes a generation repeatable. */
  sampling: Sampling;
  seed: number;
  maxNewTokens: number;
  /** Encoder-decoders: how many beams "Generate the target" keeps, 1 to 8 (1: greedy, streamed a token at a time). */
  beams: number;
  /** Vision models: the image the model runs on. */
  image: PageImage | null;
  /** Vision models: what the image pane lays over the picture, and how opaque (0 to 1). */
  overlay: Overlay;
  opacity: number;
  /** The token norms' layer: 0 is the stack's input, L the last layer's output; null: the last. */
  normLayer: number | null;
  /** Hovering a patch shows what it attends to ('from') or what attends to it ('to'). */
  hoverShows: 'from' | 'to';
  /** Speech models: the sound the model transcribes. */
  audio: PageAudio | null;
  /** Speech models: the language spoken ('' lets the model detect it), and whether to transcribe or translate. */
  speechLanguage: string;
  speechTask: 'transcribe' | 'translate';
  /** The speech pane's alignment: the alignment heads' mean (what timed the words), or the head chosen. */
  speechAlignment: 'heads' | 'head';
  /** Speech models: the heads the person chose to time the words with; null: the model's own (alignment_heads). */
  speechHeads: Array<[number, number]> | null;
  /** Speech models: the 30 s window of a longer sound whose maps the panes show. */
  speechWindow: number;
}

/** A generation in progress: the request whose tokens count, the text it continues and what it added so far. */
export interface Generating {
  request: number;
  /** The layer shown when it started: with one layer's maps, the one it grows. */
  layer: number;
  prompt: string;
  text: string;
  tokens: number;
}

/**
 * An encoder-decoder's target being generated from the source: the request whose tokens count, the source it was
 * asked for, and the target so far (its text and ids, the decoder's start token first).
 */
export interface Translating {
  request: number;
  source: string;
  text: string;
  ids: number[];
  /** More than 1: a beam search, whose target arrives whole with the reply (nothing streams). */
  beams: number;
  /** A beam search was stopped: its reply, the leading beam so far, is still to come. */
  stopping: boolean;
}

/** The last finished generation, for the status line and the JSON export (until the text is edited). */
export interface Generated {
  ids: number[];
  promptTokens: number;
  seed: number;
  sampling: Sampling;
  stopReason: string;
}

export interface Loading {
  /** 'waiting': a link names a model loaded from files, which it cannot carry; the page waits for them. */
  state: 'loading' | 'ok' | 'error' | 'waiting';
  message: string;
  /** 0…1 while a download says how far it is. */
  progress?: number;
}

export interface Data {
  /** `heapInUse`: what the engine's heap held once the model loaded (the picker says what else fits). */
  engine: (EngineInfo & { isolated: boolean; heapInUse: number }) | null;
  model: (ModelInfo & { causal: boolean }) | null;
  /** The most tokens the page runs the model on (and holds every layer's maps of). */
  limit: PageLimit | null;
  loading: Loading;
  result: RunResult | null;
  /** The model, as loaded, that made `result`: after another model loads, the result is not the model's in view. */
  resultOf: Data['model'];
  /** The model asked for (a Hub id, 'files', 'default'): the link's `modelId` once it has loaded. */
  loadingModel: string | null;
  /** The last run's error, cleared by the next result. */
  runError: string | null;
  across: AcrossResult | null;
  math: Reply<'math'> | null;
  compare: Reply<'compare'> | null;
  intervene: Reply<'intervene'> | null;
  ablate: Reply<'ablate'> | null;
  explained: Reply<'explain'> | null;
  cost: Reply<'cost'> | null;
  next: Reply<'next'> | null;
  induction: Reply<'induction'> | null;
  generation: Generating | null;
  generated: Generated | null;
  translation: Translating | null;
  /** Vision models: the image's notice (scaled down, refused, unreadable), and the second model beside the first. */
  imageNotice: { state: 'ok' | 'error' | 'busy'; message: string } | null;
  beside: BesideRun | null;
  besideLoading: Loading | null;
  /** The sample image a link names, drawn once a vision model is loaded. */
  pendingSample: string | null;
  /** The picker's models sized by the Hub's file list (engine.hubPlan), or why the Hub could not say, by id. */
  plans: Record<string, HubPlan | { error: string }>;
  /** Speech models: the sound's notice (reading, recording, unreadable), and the transcript while a run decodes. */
  audioNotice: { state: 'ok' | 'error' | 'busy'; message: string } | null;
  transcript: { run: number; text: string } | null;
  /** A panel's last error, by the request kind that failed. */
  errors: Partial<
    Record<
      | 'across'
      | 'math'
      | 'compare'
      | 'intervene'
      | 'ablate'
      | 'explain'
      | 'cost'
      | 'next'
      | 'generate'
      | 'induction'
      | 'translate'
      | 'beside',
      string
    >
  >;
}

export type State = Choice & Data;
export type Key = keyof State;
type Listener = (state: Readonly<State>, changed: ReadonlySet<Key>) => void;

export function initialState(): State {
  return {
    text: 'The cat sat on the mat because it was warm.',
    context: 'It was warm, so the cat slept on the mat.',
    contextIds: null,
    ids: null,
    mode: 'model',
    pairSet: 'cross',
    aggregate: 'head',
    layer: 0,
    head: 0,
    token: null,
    view: 'head',
    residual: true,
    barToken: 0,
    activeHeads: [],
    explain: null,
    scale: true,
    causal: false,
    main: 'lines',
    tools: 'heads',
    modelId: 'default',
    sampling: { temperature: 1, topK: 0, topP: 1 },
    seed: 1,
    maxNewTokens: 32,
    beams: 1,
    image: null,
    overlay: 'head',
    opacity: 0.6,
    normLayer: null,
    hoverShows: 'from',
    audio: null,
    speechLanguage: '',
    speechTask: 'transcribe',
    speechAlignment: 'heads',
    speechHeads: null,
    speechWindow: 0,
    engine: null,
    model: null,
    limit: null,
    loading: { state: 'loading', message: 'Loading the engine and the model…' },
    result: null,
    resultOf: null,
    loadingModel: null,
    runError: null,
    across: null,
    math: null,
    compare: null,
    intervene: null,
    ablate: null,
    explained: null,
    cost: null,
    next: null,
    induction: null,
    generation: null,
    generated: null,
    translation: null,
    imageNotice: null,
    beside: null,
    besideLoading: null,
    pendingSample: null,
    audioNotice: null,
    transcript: null,
    plans: {},
    errors: {},
  };
}

export class Store {
  private state: State = initialState();
  private version = 0;
  private readonly listeners: Listener[] = [];

  get(): Readonly<State> {
    return this.state;
  }

  subscribe(listener: Listener): void {
    this.listeners.push(listener);
  }

  /**
   * A choice: layer and head (and tokens) are kept inside what the shown run has. `data`: what changes with it in
   * the same step (a generation's end and the text it leaves), so that no listener sees one without the other.
   */
  select(choice: Partial<Choice>, data: Partial<Data> = {}): void {
    this.apply({ ...data, ...choice });
  }

  /** What the worker answered. */
  put(data: Partial<Data>): void {
    this.apply(data);
  }

  private apply(patch: Partial<State>): void {
    const next = { ...this.state, ...patch };
    // A listener that changes the state again has told every listener already; the rest of this round is stale.
    const version = ++this.version;
    const shape = next.result?.shape;
    if (shape) {
      const [, heads, n] = shape;
      next.layer = clamp(next.layer, next.result!.layers - 1);
      next.head = clamp(next.head, heads - 1);
      next.barToken = clamp(next.barToken, n - 1);
      if (next.token !== null) next.token = clamp(next.token, n - 1);
      if (next.activeHeads.length !== heads) next.activeHeads = Array<boolean>(heads).fill(true);
      if (next.normLayer !== null) next.normLayer = clamp(next.normLayer, next.result!.layers);
    }
    const changed = new Set((Object.keys(next) as Key[]).filter((k) => next[k] !== this.state[k]));
    if (!changed.size) return;
    this.state = next;
    for (const listener of this.listeners) if (version === this.version) listener(next, changed);
  }
}

const clamp = (x: number, max: number) => Math.max(0, Math.min(x, max));

/** The most beams a search keeps (the library's limit). */
export const MAX_BEAMS = 8;
/** A beam count the page lets through: a whole number from 1 to MAX_BEAMS, else null (the number box's text too). */
export function beamCount(v: string | number | undefined): number | null {
  const n = typeof v === 'string' ? (v.trim() ? Number(v) : NaN) : (v ?? NaN);
  return Number.isInteger(n) && n >= 1 && n <= MAX_BEAMS ? n : null;
}

/**
 * The Why pane's question about the run shown: the clicked cell of the layer and head shown, in the set shown, or
 * the clicked candidate's logit. Null when there is none, or the run is not a model's own (a generation's grown
 * maps, the parameter-free form, two texts).
 */
export function explainAsk(s: Readonly<State>): ExplainAsk | null {
  const r = s.result,
    e = s.explain;
  if (!e || !r || r.run < 0 || r.mode !== 'model') return null;
  if (e.what === 'logit') return { what: 'logit', run: r.run, position: e.position, token: e.token };
  return { what: 'score', run: r.run, set: r.set, layer: s.layer, head: s.head, query: e.query, key: e.key };
}
