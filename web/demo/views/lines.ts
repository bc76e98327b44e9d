// The head view: the selected layer's heads as lines from each token to the tokens it attends
// to, one colour per head. Hover a token for its lines only; click a head's button to hide it,
// double-click to show it alone. The token in focus (chips, map cursor) is drawn alone too, and scrolled to.
// The canvas is the height of its scroll box; a frame draws the rows in view (draw/lines.ts), at most one per
// animation frame. While a generation grows the maps, the view follows the newest token if it was at the end.
import { drawHeadView, HEAD_COLOURS, MARGIN, queryAt, rowHeight, sideRow, viewHeight } from '../draw/lines.js';
import { headRows } from '../map-rows.js';
import type { State } from '../state.js';
import { $, changes, setText, type Page, type View } from './view.js';

/** Rows the view lays out: the taller of its two sides (queries, and keys in cross-attention). */
const rowsOf = (r: NonNullable<State['result']>) => Math.max(r.tokens.length, r.keyTokens?.length ?? 0);

/** An encoder-decoder's cross-attention: source (keys) on the left, target (queries) on the right. */
const flipped = (s: Readonly<State>) => s.mode === 'model' && s.result?.set === 'cross';

const NOTE =
  'Lines run from each token (left) to the tokens it attends to (right). Hover a token to see only its lines; click ' +
  'a head to hide it, double-click to show it alone.';
const CROSS_NOTE =
  'Lines run from each target token (right) to the source tokens it attends to (left): where the decoder looked ' +
  'while writing it. Hover a target token to see only its lines; click a head to hide it, double-click to show it ' +
  'alone.';

export function linesView(page: Page): View {
  const canvas = $<HTMLCanvasElement>('lines');
  const scroll = $('lines-scroll');
  const track = $('lines-track');
  const toggles = $('head-toggles');
  const dirty = changes();
  const sided = changes();
  let hovered: number | null = null;
  let shown: Readonly<State> | null = null;
  let pending = 0;

  function draw(s: Readonly<State>, target = canvas): void {
    const r = s.result!;
    const heads = r.shape[1];
    const maps = Array.from({ length: heads }, (_, h) => (s.activeHeads[h] ? headRows(r, s.layer, h) : null));
    const flip = flipped(s);
    const lines = drawHeadView(target, {
      maps,
      tokens: r.tokens,
      keyTokens: r.keyTokens,
      flip,
      sides: flip ? ['Source', 'Target'] : undefined,
      focus: hovered ?? s.token,
      scroll: top,
      fg: page.colours().fg,
    });
    if (target === canvas) {
      canvas.dataset.lines = String(lines);
      canvas.dataset.focus = String(hovered ?? s.token ?? ''); // the query drawn alone, for the tests
      // For the tests: which tokens stand on each side (written when they change, not at every frame).
      const [left, right] = flip ? [r.keyTokens ?? r.tokens, r.tokens] : [r.tokens, r.keyTokens ?? r.tokens];
      if (sided(left, right))
        Object.assign(canvas.dataset, { left: JSON.stringify(left), right: JSON.stringify(right) });
      // Each side's row height (both sides span the track).
      const n = rowsOf(r);
      const rows = JSON.stringify([sideRow(n, left.length), sideRow(n, right.length)]);
      if (canvas.dataset.rows !== rows) canvas.dataset.rows = rows;
    }
  }
  /** What the next frame does first: follow the newest row (if the view was at the end), or bring one into view. */
  let follow = false;
  let revealing: number | null = null;
  // Everything that reads the page's layout happens here, once a frame, not in render (which runs at every change).
  const redraw = () =>
    (pending ||= requestAnimationFrame(() => {
      pending = 0;
      if (!shown?.result) return;
      const n = rowsOf(shown.result);
      const atEnd = top + box.height >= tall - 2 * rowHeight(n) - 1;
      fit(n);
      if (revealing !== null) reveal(revealing, n);
      else if (follow && atEnd) scroll.scrollTop = top = Math.max(0, tall - box.height);
      [follow, revealing] = [false, null];
      draw(shown);
    }));

  // The scroll box's size and position, kept as they change: a frame then reads nothing of the page's layout.
  let box = { width: 320, height: 80 };
  let top = 0;
  /** The track's height, as last set. */
  let tall = 0;
  new ResizeObserver(([entry]) => {
    box = { width: entry.contentRect.width, height: entry.contentRect.height };
    redraw();
  }).observe(scroll);
  scroll.addEventListener('scroll', () => {
    const at = scroll.scrollTop;
    // A frame that scrolled the box (following a generation) drew at that place already: no second frame for it.
    const drawn = Math.abs(at - top) < 1;
    top = at;
    if (!drawn) redraw();
  });

  /** The track as tall as every row; the canvas as tall as the box that scrolls it. */
  function fit(n: number): void {
    if (tall !== viewHeight(n)) track.style.height = `${(tall = viewHeight(n))}px`;
    const [width, height] = [Math.max(320, Math.round(box.width)), Math.max(80, Math.round(box.height))];
    if (canvas.width !== width || canvas.height !== height) {
      Object.assign(canvas, { width, height });
      canvas.style.height = `${height}px`;
    }
  }

  canvas.addEventListener('pointermove', (e) => {
    if (!shown?.result) return;
    // The box's scroll as it is now: the scroll event that updates `top` may not have come yet.
    const i = queryAt(canvas, e, shown.result.tokens.length, scroll.scrollTop, rowsOf(shown.result), flipped(shown));
    if (i === hovered) return;
    hovered = i;
    redraw();
  });
  canvas.addEventListener('pointerleave', () => {
    hovered = null;
    redraw();
  });
  const toggle = (h: number, solo: boolean) => {
    const active = page.store.get().activeHeads;
    page.store.select({ activeHeads: active.map((on, k) => (solo ? k === h : k === h ? !on : on)) });
  };

  /** Brings query row i into view. */
  function reveal(i: number, n: number): void {
    const row = sideRow(n, shown?.result?.tokens.length ?? n);
    const y = MARGIN + i * row;
    if (y < top || y + row > top + box.height) scroll.scrollTop = top = Math.max(0, y - box.height / 2);
  }

  return {
    id: 'lines',
    pane: 'lines',
    render(s) {
      const r = s.result;
      if (!r) return;
      const before = shown?.result;
      shown = s;
      setText($('lines-layer'), String(s.layer + 1));
      setText($('lines-note'), flipped(s) ? CROSS_NOTE : NOTE);
      const heads = r.shape[1];
      if (toggles.children.length !== heads)
        toggles.replaceChildren(
          ...Array.from({ length: heads }, (_, h) => {
            const b = document.createElement('button');
            b.type = 'button';
            b.textContent = `H${h + 1}`;
            b.style.setProperty('--head', HEAD_COLOURS[h % HEAD_COLOURS.length]);
            b.addEventListener('click', () => toggle(h, false));
            b.addEventListener('dblclick', () => toggle(h, true));
            return b;
          }),
        );
      [...toggles.children].forEach((b, h) => {
        if (b.getAttribute('aria-pressed') !== String(s.activeHeads[h]))
          b.setAttribute('aria-pressed', String(s.activeHeads[h]));
      });
      if (!dirty(r, s.layer, s.activeHeads, s.token, page.colours().fg, flipped(s))) return;
      // A generation's new rows: followed if the view was at the end; the token in focus: brought into view.
      if (s.token !== null) revealing = s.token;
      else if (before && r.tokens.length > before.tokens.length) follow = true;
      redraw();
    },
    export: { canvas: () => canvas, draw: (c) => shown?.result && draw(shown, c) },
  };
}
