// What each head does: the engine's summaries of every head on this text, in a table sortable by
// each measure (descending first, again to reverse); a row opens its head. New measures add a row
// to MEASURES.
import type { HeadSummary } from 'attnscope';

import { $, changes, type Page, type View } from './view.js';

export const MEASURES: Array<{ key: keyof HeadSummary & string; title: string; explain: string }> = [
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
];

export function headsView(page: Page): View {
  const table = $<HTMLTableElement>('summaries');
  const body = table.tBodies[0];
  const header = table.tHead!.rows[0];
  const dirty = changes();
  let sort: { key: keyof HeadSummary; descending: boolean } = { key: 'entropy', descending: false };

  for (const m of MEASURES) {
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
    ...MEASURES.flatMap((m) => {
      const dt = document.createElement('dt');
      dt.textContent = m.title;
      const dd = document.createElement('dd');
      dd.textContent = m.explain;
      return [dt, dd];
    }),
  );
  const open = (layer: number, head: number) => page.store.select({ layer, head });

  const view: View = {
    id: 'heads',
    pane: 'heads',
    render(s) {
      const r = s.result;
      if (!r || !dirty(r.summaries, sort, s.layer, s.head)) return;
      const sorted = [...r.summaries].sort((a, b) => {
        const d = (a[sort.key] as number) - (b[sort.key] as number);
        return sort.descending ? -d : d;
      });
      body.replaceChildren(
        ...sorted.map((h) => {
          const tr = document.createElement('tr');
          tr.tabIndex = 0;
          tr.dataset.layer = String(h.layer);
          tr.dataset.head = String(h.head);
          if (h.layer === s.layer && h.head === s.head) tr.setAttribute('aria-selected', 'true');
          const cells = [`L${h.layer + 1}`, `H${h.head + 1}`, ...MEASURES.map((m) => (h[m.key] as number).toFixed(3))];
          for (const text of cells) {
            const td = document.createElement('td');
            td.textContent = text;
            tr.append(td);
          }
          tr.addEventListener('click', () => open(h.layer, h.head));
          tr.addEventListener('keydown', (e) => e.key === 'Enter' && open(h.layer, h.head));
          return tr;
        }),
      );
    },
  };
  return view;
}
