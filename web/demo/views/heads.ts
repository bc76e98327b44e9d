// What each head does: the engine's summaries of every head on this text, and the measures people use
// on language models (measures.ts), in a table sortable by each measure (descending first, again to
// reverse; a measure the text cannot give, "—", sorts last); a row opens its head. A model of many heads has
// the rows around the view in the table, the rest a scroll away. New measures add a row to MEASURES.
import { download } from '../export.js';
import type { MeasureFamily, Summary } from '../protocol.js';
import { $, changes, setProp, type Page, type View } from './view.js';

interface Measure {
  key: string;
  title: string;
  explain: string;
}

/** The columns of each family of measures (protocol.ts: MeasureFamily): a text's, an image's, cross-attention's. */
export const MEASURES: Record<MeasureFamily, Measure[]> = {
  text: [
    {
      key: 'entropy',
      title: 'Entropy',
      explain: 'How spread out the attention is, in nats: 0 looks at one token, ln n at all alike.',
    },
    {
      key: 'distance',
      title: 'Distance',
      explain: 'How many tokens away a head looks, on average: small for local heads.',
    },
    { key: 'previous', title: 'Previous', explain: 'Weight on the token just before: high for previous-token heads.' },
    { key: 'self', title: 'Self', explain: 'Weight on the token itself.' },
    {
      key: 'special',
      title: 'Special',
      explain: 'Weight on [CLS], [SEP] and the first token: often a "no-op" place to park attention.',
    },
    {
      key: 'punctuation',
      title: 'Punctuation',
      explain: 'Weight on tokens that are only punctuation, such as "." and ",".',
    },
    {
      key: 'sink',
      title: 'Sink',
      explain:
        'Weight on the first token (BOS where the model adds one): an attention sink, where heads with nothing to do park their attention.',
    },
    {
      key: 'induction',
      title: 'Induction',
      explain:
        'Weight on the token right after an earlier copy of the current token: how induction heads continue a repeated pattern ("—": no token repeats).',
    },
    {
      key: 'duplicate',
      title: 'Duplicate',
      explain: 'Weight on earlier copies of the current token: duplicate-token heads ("—": no token repeats).',
    },
  ],
  image: [
    {
      key: 'spread',
      title: 'Spread',
      explain: "How spread over the image a patch's attention is: the entropy of its weights on the patches, in nats.",
    },
    {
      key: 'distance',
      title: 'Distance',
      explain: 'How far across the image a patch looks, in patches (straight-line, over its weights on the patches).',
    },
    { key: 'self', title: 'Self', explain: 'Weight on the patch itself.' },
    {
      key: 'neighbourhood',
      title: '3 × 3',
      explain: 'Weight on the 3 × 3 patches around a patch, itself included: high for local heads.',
    },
    {
      key: 'cls',
      title: '[CLS]',
      explain: "Weight on [CLS] (and DeiT's distillation token), over every token.",
    },
    {
      key: 'registers',
      title: 'Registers',
      explain: 'Weight on the register tokens, over every token ("—": the model has none).',
    },
  ],
  cross: [
    {
      key: 'entropy',
      title: 'Entropy',
      explain: "How spread out a query's attention over the other sequence is, in nats: 0 looks at one token.",
    },
    {
      key: 'monotonicity',
      title: 'Monotonic',
      explain:
        'The share of consecutive queries whose most-weighted token does not go back: 1 for an alignment in order.',
    },
    {
      key: 'diagonal',
      title: 'Off diagonal',
      explain: "How far a query's weights lie from the diagonal, as a share of the sequence: 0 on it.",
    },
    {
      key: 'coverage',
      title: 'Coverage',
      explain: "The share of the other sequence's tokens that are some query's most-weighted one.",
    },
  ],
};

/** Every head's measures as CSV: a header row, then one row per head (layers and heads from 1; empty for "—"). */
export function headsCsv(summaries: Summary[], family: MeasureFamily = 'text'): string {
  const measures = MEASURES[family];
  const header = ['layer', 'head', ...measures.map((m) => m.key)].join(',');
  const rows = summaries.map((h) =>
    [h.layer + 1, h.head + 1, ...measures.map((m) => (Number.isNaN(h[m.key]) ? '' : String(h[m.key])))].join(','),
  );
  return `${[header, ...rows].join('\n')}\n`;
}

/** Descending or ascending by a measure; NaN ("—") always last. */
function order(key: string, descending: boolean) {
  return (a: Summary, b: Summary) => {
    const [x, y] = [a[key], b[key]];
    if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : 1) : -1;
    return descending ? y - x : x - y;
  };
}

/** Rows the heads table always holds when a model has them (every head of a small model), and rows beyond the view. */
const ROWS = 64;
const OVERSCAN = 16;

export function headsView(page: Page): View {
  const table = $<HTMLTableElement>('summaries');
  const body = table.tBodies[0];
  const header = table.tHead!.rows[0];
  const fixed = header.cells.length; // Layer and Head
  const dirty = changes();
  let family: MeasureFamily | null = null;
  let sort = { key: 'entropy', descending: false };

  /** The columns and the legend of a family of measures, when the run's family changes. */
  function columns(next: MeasureFamily) {
    if (family === next) return;
    family = next;
    while (header.cells.length > fixed) header.deleteCell(fixed);
    const measures = MEASURES[next];
    if (!measures.some((m) => m.key === sort.key)) sort = { key: measures[0].key, descending: false };
    for (const m of measures) {
      const th = document.createElement('th');
      th.scope = 'col';
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = m.title;
      button.title = m.explain;
      button.dataset.sort = m.key;
      button.addEventListener('click', () => {
        sort = { key: m.key, descending: sort.key === m.key ? !sort.descending : true };
        for (const cell of header.cells) cell.removeAttribute('aria-sort');
        th.setAttribute('aria-sort', sort.descending ? 'descending' : 'ascending');
        view.render(page.store.get());
      });
      th.append(button);
      header.append(th);
    }
    $('measures').replaceChildren(
      ...measures.flatMap((m) => {
        const dt = document.createElement('dt');
        dt.textContent = m.title;
        const dd = document.createElement('dd');
        dd.textContent = m.explain;
        return [dt, dd];
      }),
    );
  }
  columns('text');
  const open = (layer: number, head: number) => page.store.select({ layer, head });
  const csvButton = $<HTMLButtonElement>('heads-csv');
  csvButton.addEventListener('click', () => {
    const r = page.store.get().result;
    if (r) download('attnscope-heads.csv', new Blob([headsCsv(r.summaries, r.measures)], { type: 'text/csv' }));
  });
  const note = $('heads-note');

  /**
   * The rows in the table: those around the view, at least ROWS of them (a small model's every head), the rest
   * stood in for by the table's margins. A 2B model's 208 rows of 12 cells, built, laid out and painted at each
   * keystroke, took the page's task past 100 ms; a 1B Llama has 512.
   */
  const scroller = table.closest<HTMLElement>('.pane-body')!;
  let rowHeight = 0; // CSS pixels, once a row has been laid out
  const px = () => rowHeight || 24; // what a row is taken to be before then
  let seen = { top: 0, height: 0 }; // how far down the body the pane shows, and how much of it
  let sorted: Summary[] = [];
  let shown = { first: 0, last: 0 };
  let selected = { layer: -1, head: -1 };
  let measures: Measure[] = [];

  function rowsAround(): { first: number; last: number } {
    const top = Math.floor(seen.top / px());
    const count = Math.max(ROWS, Math.ceil(seen.height / px()) + 2 * OVERSCAN);
    const first = Math.max(0, Math.min(top - OVERSCAN, sorted.length - count));
    return { first, last: Math.min(sorted.length, first + count) };
  }

  function fill(force: boolean) {
    const { first, last } = rowsAround();
    if (!force && first === shown.first && last === shown.last) return;
    shown = { first, last };
    table.style.marginTop = `calc(var(--space-2) + ${first * px()}px)`;
    table.style.marginBottom = `${(sorted.length - last) * px()}px`;
    // A row with the keyboard's focus keeps it in the rows that replace it (Tab walks the rows; the view follows).
    const active = document.activeElement;
    const had = active instanceof HTMLTableRowElement && active.parentNode === body ? { ...active.dataset } : null;
    let refocus: HTMLTableRowElement | undefined;
    const value = (x: number) => (Number.isNaN(x) ? '—' : x.toFixed(3));
    body.replaceChildren(
      ...sorted.slice(first, last).map((h, at) => {
        const tr = document.createElement('tr');
        tr.tabIndex = 0;
        tr.ariaRowIndex = String(first + at + 2); // the header is row 1
        tr.dataset.layer = String(h.layer);
        tr.dataset.head = String(h.head);
        if (h.layer === selected.layer && h.head === selected.head) tr.setAttribute('aria-selected', 'true');
        const cells = [`L${h.layer + 1}`, `H${h.head + 1}`, ...measures.map((m) => value(h[m.key]))];
        cells.forEach((text, k) => {
          const td = document.createElement('td');
          td.textContent = text;
          const m = measures[k - 2];
          if (m) Object.assign(td.dataset, { measure: m.key, value: String(h[m.key]) });
          tr.append(td);
        });
        tr.addEventListener('click', () => open(h.layer, h.head));
        tr.addEventListener('keydown', (e) => e.key === 'Enter' && open(h.layer, h.head));
        if (had?.layer === tr.dataset.layer && had?.head === tr.dataset.head) refocus = tr;
        return tr;
      }),
    );
    refocus?.focus({ preventScroll: true });
  }

  /** Where the table is in its pane, read once the page is laid out (after a scroll, a resize, a pane shown). */
  let pending = 0;
  function measure() {
    if (pending) return;
    pending = requestAnimationFrame(() => {
      pending = 0;
      const row = body.rows[0]?.getBoundingClientRect();
      if (!row?.height) return; // no rows, or the pane is hidden
      const refit = Math.abs(row.height - rowHeight) > 0.5;
      if (refit) rowHeight = row.height;
      // What of the table is on screen: the pane scrolls it, or on a phone, where panes grow, the page does.
      const pane = scroller.getBoundingClientRect();
      const [from, to] = [Math.max(pane.top, 0), Math.min(pane.bottom, innerHeight)];
      const whole = row.top - shown.first * rowHeight; // where the body's first row would be
      seen = { top: Math.max(0, from - whole), height: Math.max(0, to - from) };
      fill(refit);
    });
  }
  document.addEventListener('scroll', measure, { capture: true, passive: true }); // the pane's, or the page's
  new ResizeObserver(measure).observe(scroller);

  const view: View = {
    id: 'heads',
    pane: 'heads',
    render(s) {
      const r = s.result;
      setProp(csvButton, 'disabled', !r?.summaries.length);
      if (!r || !dirty(r.summaries, sort, s.layer, s.head)) return;
      columns(r.measures);
      table.dataset.measures = r.measures;
      table.dataset.run = String(r.run);
      const some =
        r.mapLayers.length < r.layers
          ? `The heads of layer ${r.mapLayers.map((l) => l + 1).join(', ')}, the one shown (the input is too long for ` +
            `every layer's maps: choose another layer to measure its heads)`
          : 'Every head';
      const over =
        r.measures === 'image'
          ? 'on this image, averaged over its patches ([CLS] and registers over every token)'
          : r.measures === 'cross'
            ? 'as an alignment of one sequence to the other, averaged over its queries'
            : 'on this text, averaged over its query tokens';
      note.textContent = `${some} ${over}. Click a column to sort, a row to open its head.`;
      measures = MEASURES[r.measures];
      sorted = [...r.summaries].sort(order(sort.key, sort.descending));
      selected = { layer: s.layer, head: s.head };
      table.ariaRowCount = String(sorted.length + 1);
      fill(true);
    },
  };
  return view;
}
