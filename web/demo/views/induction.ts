// "Find induction heads": the standard test (Olsson et al., 2022), run in the worker on a sequence of random
// tokens repeated twice. An induction head, in the second copy, looks at the token that followed the current
// token's first occurrence, to predict it again. Every head's score as a layers × heads grid, the best ones
// listed; the best opens in the maps, on the repeated sequence. A model with none (the embedded encoder) is told so.
import { drawHeadGrid } from '../draw/charts.js';
import { $, changes, toolPane, type Page, type View } from './view.js';

/** A head counts as an induction head from this score on: most of its weight where induction puts it. */
export const INDUCTION_HEAD = 0.4;
const LENGTH = 50;

export function inductionView(page: Page): View {
  const chart = $<HTMLCanvasElement>('induction-grid');
  const note = $('induction-note');
  const list = $<HTMLOListElement>('induction-best');
  const parts = { empty: $('induction-empty'), note, chart, page, dirty: changes() };
  const selected = changes();
  let running = false;
  $('induction-run').addEventListener('click', () => {
    running = true;
    note.dataset.state = 'ok';
    note.textContent = 'Running the test…';
    page.ask({ kind: 'induction', length: LENGTH, seed: page.store.get().seed });
  });
  $('induction-back').addEventListener('click', () => page.run());
  list.addEventListener('click', (e) => {
    const b = (e.target as Element).closest<HTMLButtonElement>('button[data-layer]');
    if (b) page.store.select({ layer: Number(b.dataset.layer), head: Number(b.dataset.head), view: 'head' });
  });
  const draw = (canvas: HTMLCanvasElement) => {
    const x = page.store.get().induction;
    if (!x) return;
    const [layers, heads] = x.run.shape;
    const values = new Float32Array(layers * heads);
    for (const { layer, head, score } of x.ranking) values[layer * heads + head] = score;
    const s = page.store.get();
    drawHeadGrid(canvas, values, layers, heads, page.colours(), { layer: s.layer, head: s.head });
  };

  return {
    id: 'induction',
    pane: 'induction',
    render(s) {
      const x = s.induction;
      $('induction-back').hidden = s.result?.origin !== 'induction';
      const fresh = toolPane(x, s.errors.induction, parts);
      if (x || s.errors.induction) running = false;
      else if (!running) {
        // No result (a new model cleared it): nothing of the last model's test stays on show.
        note.textContent = '';
        delete note.dataset.found;
        list.replaceChildren();
        return;
      }
      if (!selected(s.layer, s.head) && !fresh) return;
      if (!x || s.errors.induction) return;
      const found = x.ranking.filter((h) => h.score >= INDUCTION_HEAD);
      const top = x.ranking[0];
      const name = s.model?.name ?? 'This model';
      note.dataset.found = String(found.length);
      note.textContent = found.length
        ? `${found.length} induction head${found.length > 1 ? 's' : ''} on ${x.length} random tokens repeated: the best, layer ${top.layer + 1} head ${top.head + 1}, puts ${(top.score * 100).toFixed(1)}% of its weight on the token after the earlier copy (uniform attention would put ${(x.baseline * 100).toFixed(1)}%). It is open in the maps, on the repeated sequence.`
        : `${name} has no induction heads: on ${x.length} random tokens repeated, no head puts ${INDUCTION_HEAD * 100}% of its weight on the token after the earlier copy. The best, layer ${top.layer + 1} head ${top.head + 1}, puts ${(top.score * 100).toFixed(1)}% there (uniform attention: ${(x.baseline * 100).toFixed(1)}%).`;
      draw(chart);
      list.replaceChildren(
        ...x.ranking.slice(0, 8).map(({ layer, head, score }) => {
          const li = document.createElement('li');
          const b = document.createElement('button');
          b.type = 'button';
          Object.assign(b.dataset, { layer: String(layer), head: String(head), score: String(score) });
          b.textContent = `L${layer + 1} H${head + 1}: ${score.toFixed(3)}`;
          if (layer === s.layer && head === s.head) b.setAttribute('aria-current', 'true');
          li.append(b);
          return li;
        }),
      );
    },
    export: { canvas: () => chart, draw },
  };
}
