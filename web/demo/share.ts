// The page's state in its URL (after '#', so it never reaches a server): the text,
// the model, the layer and head, and the view. A link restores all of them.

export type View = 'head' | 'rollout' | 'flow';

export interface Shared {
  text?: string;
  /** 'default' or a Hub model id. Models from local files cannot be shared. */
  model?: string;
  /** From 0, as the page counts internally; the URL counts from 1 like the page's labels. */
  layer?: number;
  head?: number;
  view?: View;
}

const VIEWS: readonly View[] = ['head', 'rollout', 'flow'];

/** What a URL's hash holds; anything malformed is ignored, never trusted. */
export function readShared(hash: string): Shared {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  const index = (name: string) => {
    const v = Number(p.get(name));
    return Number.isInteger(v) && v >= 1 && v <= 4096 ? v - 1 : undefined;
  };
  const view = p.get('view') as View | null;
  const text = p.get('text');
  return {
    text: text !== null ? text.slice(0, 20_000) : undefined,
    model: p.get('model') ?? undefined,
    layer: index('layer'),
    head: index('head'),
    view: view && VIEWS.includes(view) ? view : undefined,
  };
}

export function writeShared(s: Required<Shared>): string {
  const p = new URLSearchParams({
    text: s.text,
    model: s.model,
    layer: String(s.layer + 1),
    head: String(s.head + 1),
    view: s.view,
  });
  return `#${p.toString()}`;
}
