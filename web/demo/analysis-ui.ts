// The page's analysis panels: the head summaries table, Compare, and Intervene
// (token masking or replacement, and head ablation). They ask the worker through
// `send`, read the page's current run and head through `page`, and draw with panels.ts.
import type { HeadSummary } from 'attnscope';

import { drawBars, drawContrast, drawHeadGrid, fillSummaries, fillTokenOptions, MEASURES } from './panels.js';
import type { Reply, Request } from './worker.js';

type Result = Extract<Reply, { kind: 'result' }>;
type Ask = Request extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

export interface Page {
  shown(): Result | null;
  layer(): number;
  head(): number;
  select(layer: number, head: number): void;
  foreground(): string;
  accent(): string;
  /** Posts a request; the reply is routed back to `onReply` if it is still the newest of its kind. */
  send(request: Ask): void;
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export class AnalysisPanels {
  private sort: { key: keyof HeadSummary; descending: boolean } = { key: 'entropy', descending: false };
  private compared: Extract<Reply, { kind: 'compare' }> | null = null;
  private intervened: Extract<Reply, { kind: 'intervene' }> | null = null;
  private ablated: Extract<Reply, { kind: 'ablate' }> | null = null;

  constructor(private readonly page: Page) {
    this.buildSummaryHeader();
    $('compare-run').addEventListener('click', () =>
      page.send({
        kind: 'compare',
        text: $<HTMLTextAreaElement>('compare-text').value,
        model: $<HTMLSelectElement>('compare-model').value as 'same' | 'default',
        layer: page.layer(),
        head: page.head(),
      }),
    );
    $('intervene-run').addEventListener('click', () =>
      page.send({
        kind: 'intervene',
        token: Number($<HTMLSelectElement>('intervene-token').value),
        action: (document.querySelector<HTMLInputElement>('input[name=intervene-action]:checked')?.value ?? 'mask') as
          'mask' | 'replace',
        replacement: $<HTMLInputElement>('replace-with').value,
        layer: page.layer(),
        head: page.head(),
      }),
    );
    $('ablate-run').addEventListener('click', () =>
      page.send({ kind: 'ablate', layer: page.layer(), head: page.head() }),
    );
  }

  /** Redraws what depends on the shown run and the selected head. */
  render(): void {
    const r = this.page.shown();
    if (!r) return;
    fillSummaries(
      $<HTMLTableElement>('summaries').tBodies[0],
      r.summaries,
      this.sort,
      { layer: this.page.layer(), head: this.page.head() },
      (l, h) => this.page.select(l, h),
    );
    const select = $<HTMLSelectElement>('intervene-token');
    const keep = Math.min(Number(select.value) || 0, r.tokens.length - 1);
    if (fillTokenOptions(select, r.tokens)) select.value = String(Math.max(keep, 0)); // the same position, if it exists
  }

  /** Handles the panels' replies; false for replies that are not theirs. */
  onReply(reply: Reply): boolean {
    if (reply.kind === 'compare') {
      this.compared = reply;
      this.drawCompare();
      return true;
    }
    if (reply.kind === 'intervene') {
      this.intervened = reply;
      this.drawIntervene();
      return true;
    }
    if (reply.kind === 'ablate') {
      this.ablated = reply;
      this.drawAblate();
      return true;
    }
    return false;
  }

  /** Shows an error from one of the panels' requests where that panel shows its results. */
  onError(during: Request['kind'], message: string): boolean {
    const note = { compare: 'compare-note', intervene: 'intervene-note', ablate: 'ablate-note' }[during as string];
    if (!note) return false;
    $(note).textContent = message;
    $(note).dataset.state = 'error';
    return true;
  }

  /** Draws a panel's view on any canvas (the page's, or the SVG recorder's). */
  draw(view: 'compare' | 'intervene' | 'ablate', canvas: HTMLCanvasElement): void {
    const fg = this.page.foreground();
    const a = this.ablated;
    if (view === 'ablate' && a)
      drawBars(
        canvas,
        a.tokens,
        a.cosines.map((x) => 1 - x),
        fg,
        this.page.accent(),
      );
    if (view === 'compare' && this.compared) drawContrast(canvas, this.compared, fg);
    const c = this.intervened;
    if (view === 'intervene' && c?.change)
      drawHeadGrid(canvas, c.change.data, c.change.shape[0], c.change.shape[1], fg, c);
  }

  private buildSummaryHeader(): void {
    const row = $<HTMLTableElement>('summaries').tHead!.rows[0];
    for (const m of MEASURES) {
      const th = document.createElement('th');
      th.scope = 'col';
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = m.title;
      button.title = m.explain;
      button.dataset.sort = m.key;
      button.addEventListener('click', () => {
        this.sort = { key: m.key, descending: this.sort.key === m.key ? !this.sort.descending : true };
        for (const cell of row.cells) cell.removeAttribute('aria-sort');
        th.setAttribute('aria-sort', this.sort.descending ? 'descending' : 'ascending');
        this.render();
      });
      th.append(button);
      row.append(th);
    }
    $('measures').replaceChildren(
      ...MEASURES.flatMap((m) => {
        const dt = document.createElement('dt');
        dt.textContent = m.title;
        const dd = document.createElement('dd');
        dd.textContent = m.explain;
        return [dt, dd];
      }),
    );
  }

  private drawCompare(): void {
    const c = this.compared!;
    const canvas = $<HTMLCanvasElement>('compare-map');
    drawContrast(canvas, c, this.page.foreground());
    const only = (tokens: string[], positions: number[]) =>
      positions.length ? positions.map((i) => `“${tokens[i]}”`).join(' ') : 'none';
    const note = $('compare-note');
    note.dataset.state = 'ok';
    note.textContent =
      `Layer ${c.layer + 1}, head ${c.head + 1}; B on ${c.modelB}. ${c.pairs.length} tokens align; ` +
      `only in A: ${only(c.tokensA, c.unaligned.a)}; only in B: ${only(c.tokensB, c.unaligned.b)}.` +
      (c.message ? ` ${c.message}` : '');
    const worst = c.difference ? c.difference.data.reduce((m, x) => Math.max(m, Math.abs(x)), 0) : NaN;
    Object.assign(canvas.dataset, { pairs: String(c.pairs.length), maxDifference: String(worst) });
    const grid = $<HTMLCanvasElement>('compare-change');
    grid.hidden = !c.change;
    if (c.change) drawHeadGrid(grid, c.change.data, c.change.shape[0], c.change.shape[1], this.page.foreground(), c);
  }

  private drawIntervene(): void {
    const c = this.intervened!;
    const grid = $<HTMLCanvasElement>('intervene-change');
    const note = $('intervene-note');
    note.dataset.state = 'ok';
    if (!c.change) {
      note.textContent = `${c.description}. ${c.message ?? ''}`;
      return;
    }
    const [layers, heads] = c.change.shape;
    drawHeadGrid(grid, c.change.data, layers, heads, this.page.foreground(), c);
    let top = 0;
    c.change.data.forEach((x, k) => (top = x > c.change!.data[top] ? k : top));
    note.textContent =
      `${c.description}: each head's attention moved by a total variation of ` +
      `${Math.min(...c.change.data).toFixed(3)} to ${c.change.data[top].toFixed(3)} ` +
      `(most: layer ${Math.floor(top / heads) + 1}, head ${(top % heads) + 1}).`;
    grid.dataset.change = JSON.stringify(Array.from(c.change.data));
  }

  private drawAblate(): void {
    const a = this.ablated!;
    const note = $('ablate-note');
    note.dataset.state = 'ok';
    note.dataset.mean = String(a.mean);
    note.textContent =
      `Without layer ${a.layer + 1}, head ${a.head + 1}, the last hidden state keeps a cosine similarity of ` +
      `${a.mean.toFixed(4)} to the original, on average over the tokens (1 = unchanged; the bars show 1 − cos per token).`;
    const bars = $<HTMLCanvasElement>('ablate-bars');
    bars.hidden = false;
    drawBars(
      bars,
      a.tokens,
      a.cosines.map((x) => 1 - x),
      this.page.foreground(),
      this.page.accent(),
    );
  }
}
