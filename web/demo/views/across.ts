// Rollout and flow through all layers (Abnar & Zuidema, 2020): the map shows every output token's
// row; this pane, the chosen token's, as bars over the input tokens. The engine computes them with
// the run (the run a change of view asks for, requests.ts); this view only draws what arrived.
import { drawBars } from '../draw/charts.js';
import type { State } from '../state.js';
import { $, changes, fillTokenOptions, fitWidth, roomIn, type Page, type View } from './view.js';

/**
 * The rollout or flow that answers what the page shows now, if it has come (with the run that shows it): its chosen
 * token's bar, from every token's rows where they came, else the one token's.
 */
export function currentAcross(s: Readonly<State>): State['across'] {
  const a = s.across;
  const r = s.result;
  if (!a || !r || a.run !== r.run || a.view !== s.view || a.residual !== s.residual) return null;
  const n = r.tokens.length;
  if (!a.matrix) return a.token === s.barToken ? a : null;
  const token = Math.min(s.barToken, n - 1);
  return a.token === token ? a : { ...a, token, bar: a.matrix.subarray(token * n, (token + 1) * n) };
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
