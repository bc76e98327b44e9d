// The page's state in its URL (after '#', so it never reaches a server): the text, the model, the
// layer and head, what the map shows, which panes are open, and how the next token is drawn (the
// temperature, top-k, top-p and the seed, so a generation repeats), and for a vision model the image pane's view
// (its overlay, opacity, norms' layer, which way hovering reads) and the sample image, when the image is one of
// the page's (an image from the person's computer stays there: the link asks for it). A link restores all of them; the
// page keeps its own URL up to date as the state changes (history.replaceState, no new entries).
import type { ModelInfo } from 'attnscope';

import type { Sampling } from './protocol.js';
import type { MainPane, Overlay, State, ToolPane, View } from './state.js';
import { kindIn } from './kinds/page.js';

export interface Shared {
  text?: string;
  /** 'default', a Hub model id, or 'files': a model from local files, which the link cannot carry (it asks for them). */
  model?: string;
  /** From 0, as the page counts internally; the URL counts from 1 like the page's labels. */
  layer?: number;
  head?: number;
  view?: View;
  main?: MainPane;
  tools?: ToolPane;
  sampling?: Sampling;
  seed?: number;
  overlay?: Overlay;
  opacity?: number;
  /** The norms' layer (0: the input); absent: the last. */
  normLayer?: number;
  hoverShows?: 'from' | 'to';
  /** A sample image's name. */
  image?: string;
}

const VIEWS: readonly View[] = ['head', 'rollout', 'flow'];
const MAIN: readonly MainPane[] = ['image', 'lines', 'math', 'why'];
const OVERLAYS: readonly Overlay[] = ['head', 'heads', 'rollout', 'norms'];
const SAMPLE = /^[a-z]{1,20}$/;
const TOOLS: readonly ToolPane[] = [
  'next',
  'lens',
  'heads',
  'induction',
  'across',
  'compare',
  'intervene',
  'ablate',
  'cost',
];

/** What a URL's hash holds; anything malformed is ignored, never trusted. */
export function readShared(hash: string): Shared {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  const index = (name: string) => {
    const v = Number(p.get(name));
    return Number.isInteger(v) && v >= 1 && v <= 4096 ? v - 1 : undefined;
  };
  const one = <T extends string>(name: string, allowed: readonly T[]) => {
    const v = p.get(name) as T | null;
    return v && allowed.includes(v) ? v : undefined;
  };
  const text = p.get('text');
  const number = (name: string, lo: number, hi: number) => {
    const v = p.get(name) === null ? NaN : Number(p.get(name));
    return v >= lo && v <= hi ? v : undefined;
  };
  const seed = number('seed', 0, Number.MAX_SAFE_INTEGER);
  const [temperature, topK, topP] = [number('t', 0, 2), number('k', 0, 1e6), number('p', 0.01, 1)];
  const normLayer = number('nl', 0, 4096);
  const image = p.get('img');
  return {
    overlay: one('ov', OVERLAYS),
    opacity: number('op', 0, 1),
    normLayer: normLayer !== undefined && Number.isInteger(normLayer) ? normLayer : undefined,
    hoverShows: one('hs', ['from', 'to'] as const),
    image: image && SAMPLE.test(image) ? image : undefined,
    text: text !== null ? text.slice(0, 20_000) : undefined,
    model: p.get('model') ?? undefined,
    layer: index('layer'),
    head: index('head'),
    view: one('view', VIEWS),
    main: one('main', MAIN),
    tools: one('tools', TOOLS),
    seed: seed !== undefined && Number.isInteger(seed) ? seed : undefined,
    sampling:
      temperature !== undefined && topK !== undefined && Number.isInteger(topK) && topP !== undefined
        ? { temperature, topK, topP }
        : undefined,
  };
}

export function writeShared(
  s: Pick<
    State,
    | 'text'
    | 'layer'
    | 'head'
    | 'view'
    | 'main'
    | 'tools'
    | 'sampling'
    | 'seed'
    | 'overlay'
    | 'opacity'
    | 'normLayer'
    | 'hoverShows'
    | 'image'
  > & { model: Pick<ModelInfo, 'input' | 'stacks'> | null },
  model: string,
): string {
  const p = new URLSearchParams({
    text: s.text,
    model,
    layer: String(s.layer + 1),
    head: String(s.head + 1),
    view: s.view,
    main: s.main,
    tools: s.tools,
    t: String(s.sampling.temperature),
    k: String(s.sampling.topK),
    p: String(s.sampling.topP),
    seed: String(s.seed),
  });
  if (kindIn(s) === 'image') {
    p.set('ov', s.overlay);
    p.set('op', String(s.opacity));
    if (s.normLayer !== null) p.set('nl', String(s.normLayer));
    p.set('hs', s.hoverShows);
    if (s.image?.sample) p.set('img', s.image.sample);
  }
  return `#${p.toString()}`;
}

/** The Hub model a link names, if it names one (not the default, not local files). */
export const hubOf = (s: Shared) => (s.model && s.model !== 'default' && s.model !== 'files' ? s.model : null);
