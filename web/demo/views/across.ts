// Rollout and flow through all layers (Abnar & Zuidema, 2020): the map shows every output token's
// row; this pane, the chosen token's, as bars over the input tokens. The worker computes them
// with the run (or on request, see requests.ts); this view only draws what arrived.
import { drawBars } from '../draw/charts.js';
import type { State } from '../state.js';
import { $, changes, fillTokenOptions, fitWidth, roomIn, type Page, type View } from './view.js';

/** The rollout or flow reply that answers what the page shows now, if it has arrived. */
export function currentAcross(s: Readonly<State>): State['across'] {
  const a = s.across;
  const r = s.result;
  return a && r && a.run === r.run && a.view === s.view && a.residual === s.residual && a.token === s.barToken
    ? a
    : null;
}

export function acrossView(page: Page): View {
  const bars = $<HTMLCanvasElement>('bars');
  const select = $<HTMLSelectElement>('bar-token');
  const residual = $<HTMLInputElement>('residual');
  const note = $('across-note');
  const dirty = changes();
  select.addEventListener('change', () => page.store.select({ barToken: Number(select.value) }));
  residual.addEventListener('change', () => page.store.select({ residual: residual.checked }));
  for (const b of document.querySelectorAll<HTMLButtonElement>('#across-empty button[data-view]'))
    b.addEventListener('click', () => page.store.select({ view: b.dataset.view as 'rollout' }));

  let drawn: { tokens: string[]; bar: Float32Array } | null = null;
  const draw = (canvas: HTMLCanvasElement) => drawn && drawBars(canvas, drawn.tokens, drawn.bar, page.colours());

  return {
    id: 'bars',
    pane: 'across',
    render(s) {
      const r = s.result;
      $('across-empty').hidden = s.view !== 'head';
      residual.checked = s.residual;
      if (!r) return;
      if (fillTokenOptions(select, r.tokens)) select.value = String(s.barToken);
      select.value = String(s.barToken);
      const a = currentAcross(s);
      bars.hidden = s.view === 'head' || !a;
      note.dataset.state = s.errors.across ? 'error' : 'ok';
      note.textContent = s.view === 'head' ? '' : (s.errors.across ?? a?.note ?? `Computing ${s.view}…`);
      if (!a) return;
      const resized = fitWidth(bars, roomIn(bars, 40, 160, 320));
      if (!dirty(a, page.colours().fg) && !resized) return;
      drawn = { tokens: r.tokens, bar: a.bar };
      draw(bars);
      bars.dataset.values = JSON.stringify(Array.from(a.bar));
      bars.dataset.view = a.view;
    },
    export: { canvas: () => bars, draw },
  };
}
