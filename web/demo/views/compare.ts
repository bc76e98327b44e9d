// Compare: a second sentence, or the same one in the embedded default model, beside the shown run
// for the selected head: A, B and A − B where their tokens align, and every head's change.
// Intervene: the same comparison against the run with one token hidden or replaced.
import { drawContrast, drawHeadGrid } from '../draw/charts.js';
import type { Reply } from '../protocol.js';
import type { State } from '../state.js';
import { $, changes, fillTokenOptions, toolPane, type Page, type View } from './view.js';

/** The page's run and head, for a request about them (with the maps it reads), or null before a run. */
export function aboutRun(s: Readonly<State>) {
  const r = s.result;
  return r && { run: r.run, attentions: r.attentions.slice(), layer: s.layer, head: s.head };
}

function drawChange(canvas: HTMLCanvasElement, c: Reply<'compare' | 'intervene'>, page: Page): void {
  if (!c.change) return;
  drawHeadGrid(canvas, c.change.data, c.change.shape[0], c.change.shape[1], page.colours(), c);
}

export function compareView(page: Page): View {
  const map = $<HTMLCanvasElement>('compare-map');
  const grid = $<HTMLCanvasElement>('compare-change');
  const note = $('compare-note');
  const parts = { empty: $('compare-empty'), note, chart: map, page, dirty: changes() };
  $('compare-run').addEventListener('click', () => {
    const about = aboutRun(page.store.get());
    if (!about) return;
    const text = $<HTMLTextAreaElement>('compare-text').value;
    const model = $<HTMLSelectElement>('compare-model').value as 'same' | 'default';
    page.ask({ kind: 'compare', ...about, text, model }, [about.attentions.buffer]);
  });
  const draw = (canvas: HTMLCanvasElement) => {
    const c = page.store.get().compare;
    if (c) drawContrast(canvas, c, page.colours());
  };
  return {
    id: 'compare',
    pane: 'compare',
    render(s) {
      const c = s.compare;
      grid.hidden = !c?.change || !!s.errors.compare;
      if (!toolPane(c, s.errors.compare, { ...parts, room: [44, 200, 360] }) || !c) return;
      map.height = Math.min(map.height, Math.round(map.width / 3 + 60)); // three squares across: no taller
      draw(map);
      const only = (tokens: string[], positions: number[]) =>
        positions.length ? positions.map((i) => `“${tokens[i]}”`).join(' ') : 'none';
      note.textContent =
        `Layer ${c.layer + 1}, head ${c.head + 1}; B on ${c.modelB}. ${c.pairs.length} tokens align; ` +
        `only in A: ${only(c.tokensA, c.unaligned.a)}; only in B: ${only(c.tokensB, c.unaligned.b)}.` +
        (c.message ? ` ${c.message}` : '');
      const worst = c.difference ? c.difference.data.reduce((m, x) => Math.max(m, Math.abs(x)), 0) : NaN;
      Object.assign(map.dataset, { pairs: String(c.pairs.length), maxDifference: String(worst) });
      drawChange(grid, c, page);
    },
    export: { canvas: () => map, draw },
  };
}

export function interveneView(page: Page): View {
  const grid = $<HTMLCanvasElement>('intervene-change');
  const note = $('intervene-note');
  const select = $<HTMLSelectElement>('intervene-token');
  // The grid sizes itself to the model's layers and heads (drawHeadGrid).
  const parts = { empty: $('intervene-empty'), note, chart: grid, page, dirty: changes() };
  $('intervene-run').addEventListener('click', () => {
    const about = aboutRun(page.store.get());
    if (!about) return;
    const action = document.querySelector<HTMLInputElement>('input[name=intervene-action]:checked')?.value;
    const replacement = $<HTMLInputElement>('replace-with').value;
    const ask = { ...about, token: Number(select.value), action: action as 'mask' | 'replace', replacement };
    page.ask({ kind: 'intervene', ...ask }, [about.attentions.buffer]);
  });
  return {
    id: 'intervene',
    pane: 'intervene',
    render(s) {
      const r = s.result;
      if (r) {
        const keep = Math.min(Number(select.value) || 0, r.tokens.length - 1);
        if (fillTokenOptions(select, r.tokens)) select.value = String(Math.max(keep, 0)); // the same position
      }
      const c = s.intervene;
      if (!toolPane(c, s.errors.intervene, parts) || !c) return;
      if (!c.change) {
        grid.hidden = true;
        note.textContent = `${c.description}. ${c.message ?? ''}`;
        return;
      }
      const [, heads] = c.change.shape;
      drawChange(grid, c, page);
      const data = c.change.data;
      let top = 0;
      data.forEach((x, k) => (top = x > data[top] ? k : top));
      note.textContent =
        `${c.description}: each head's attention moved by a total variation of ` +
        `${Math.min(...data).toFixed(3)} to ${data[top].toFixed(3)} ` +
        `(most: layer ${Math.floor(top / heads) + 1}, head ${(top % heads) + 1}).`;
      grid.dataset.change = JSON.stringify(Array.from(data));
    },
    export: {
      canvas: () => grid,
      draw: (canvas) => {
        const c = page.store.get().intervene;
        if (c) drawChange(canvas, c, page);
      },
    },
  };
}
