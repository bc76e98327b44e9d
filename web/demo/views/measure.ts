// Two panes that measure: head ablation (the selected head zeroed, and how far the last hidden
// state moves, as 1 − cosine per token) and what attention costs (time against length, with the
// quadratic through it).
import { drawBars, drawCost, quadraticFit } from '../draw/charts.js';
import { $, changes, toolPane, type Page, type View } from './view.js';

export function ablateView(page: Page): View {
  const bars = $<HTMLCanvasElement>('ablate-bars');
  const note = $('ablate-note');
  const button = $<HTMLButtonElement>('ablate-run');
  const parts = { empty: $('ablate-empty'), note, chart: bars, page, dirty: changes() };
  button.addEventListener('click', () => {
    const s = page.store.get();
    if (s.result) page.ask({ kind: 'ablate', run: s.result.run, layer: s.layer, head: s.head });
  });
  const draw = (canvas: HTMLCanvasElement) => {
    const a = page.store.get().ablate;
    if (a)
      drawBars(
        canvas,
        a.tokens,
        a.cosines.map((x) => 1 - x),
        page.colours(),
      );
  };
  return {
    id: 'ablate',
    pane: 'ablate',
    render(s) {
      button.textContent = `Zero layer ${s.layer + 1}, head ${s.head + 1}`;
      const a = s.ablate;
      if (!toolPane(a, s.errors.ablate, { ...parts, room: [60, 160, 300] }) || !a) return;
      note.dataset.mean = String(a.mean);
      note.textContent =
        `Without layer ${a.layer + 1}, head ${a.head + 1}, the last hidden state keeps a cosine similarity of ` +
        `${a.mean.toFixed(4)} to the original, on average over the tokens (1 = unchanged; the bars show 1 − cos per token).`;
      draw(bars);
    },
    export: { canvas: () => bars, draw },
  };
}

export function costView(page: Page): View {
  const canvas = $<HTMLCanvasElement>('cost');
  const note = $('cost-note');
  const parts = { empty: $('cost-empty'), note, chart: canvas, page, dirty: changes() };
  $('measure').addEventListener('click', () => {
    page.ask({ kind: 'cost' });
    note.textContent = 'Measuring… (a few seconds)';
  });
  const draw = (c: HTMLCanvasElement) => {
    const r = page.store.get().cost;
    if (r) drawCost(c, r.points, page.colours());
  };
  return {
    id: 'cost',
    pane: 'cost',
    render(s) {
      const r = s.cost;
      if (!toolPane(r, s.errors.cost, { ...parts, room: [60, 180, 320] }) || !r) return;
      draw(canvas);
      canvas.dataset.points = JSON.stringify(r.points);
      const { a, b } = quadraticFit(r.points);
      const last = r.points.at(-1)!,
        half = r.points.at(-2)!;
      note.textContent =
        `${r.heads} heads × d_k ${r.dk}, every head's weights returned: doubling n from ${half.n} to ${last.n} took ` +
        `${(last.ms / half.ms).toFixed(1)}× as long (quadratic growth is 4×). ` +
        `Line: ${a.toExponential(2)}·n² ${b < 0 ? '−' : '+'} ${Math.abs(b).toExponential(2)}·n ms.`;
    },
    export: { canvas: () => canvas, draw },
  };
}
