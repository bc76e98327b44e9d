// The head view: the selected layer's heads as lines from each token to the tokens it attends
// to, one colour per head. Hover a token for its lines only; click a head's button to hide it,
// double-click to show it alone. The token in focus (chips, map cursor) is drawn alone too.
import { drawHeadView, HEAD_COLOURS, queryAt } from '../draw/lines.js';
import type { State } from '../state.js';
import { $, changes, type Page, type View } from './view.js';

export function linesView(page: Page): View {
  const canvas = $<HTMLCanvasElement>('lines');
  const toggles = $('head-toggles');
  const dirty = changes();
  let hovered: number | null = null;
  let shown: Readonly<State> | null = null;

  function draw(s: Readonly<State>, target = canvas): void {
    const r = s.result!;
    if (target === canvas) canvas.width = Math.max(320, canvas.parentElement!.clientWidth - 26);
    drawHeadView(target, r, s.layer, r.tokens, s.activeHeads, hovered ?? s.token, page.colours().fg);
  }

  canvas.addEventListener('pointermove', (e) => {
    if (!shown?.result) return;
    const i = queryAt(canvas, e, shown.result.tokens.length);
    if (i === hovered) return;
    hovered = i;
    draw(shown);
  });
  canvas.addEventListener('pointerleave', () => {
    hovered = null;
    if (shown?.result) draw(shown);
  });
  const toggle = (h: number, solo: boolean) => {
    const active = page.store.get().activeHeads;
    page.store.select({ activeHeads: active.map((on, k) => (solo ? k === h : k === h ? !on : on)) });
  };
  new ResizeObserver(() => shown?.result && draw(shown)).observe(canvas.parentElement!);

  return {
    id: 'lines',
    pane: 'lines',
    render(s) {
      const r = s.result;
      if (!r) return;
      shown = s;
      $('lines-layer').textContent = String(s.layer + 1);
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
      [...toggles.children].forEach((b, h) => b.setAttribute('aria-pressed', String(s.activeHeads[h])));
      if (dirty(r, s.layer, s.activeHeads, s.token, page.colours().fg)) draw(s);
    },
    export: { canvas: () => canvas, draw: (c) => shown?.result && draw(shown, c) },
  };
}
