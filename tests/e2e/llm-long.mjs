// A text longer than every layer's maps fit (a 12-layer, 8-head checkpoint: every layer's maps of n tokens take
// 384·n² bytes, past the engine's 1 GiB per call from about 1,590 tokens): the page computes the maps of the layer
// it shows, held to the engine's own run of that layer; choosing another layer computes its maps from the kept
// queries and keys (every token reused); the status says so; analyses that read every layer say why they cannot.
import { join } from 'node:path';

import { assert, check } from './harness.mjs';
import { deep } from './llm-hub.mjs';
import { load, state } from './llm-page.mjs';

/** A few rows of (layer, head)'s map as the page holds it: null when it holds another layer's. */
const rowsShown = (page, layer, head, rows) =>
  page.evaluate(
    ({ layer, head, rows }) => {
      const r = window.__attnscope.state().result;
      const slot = r.mapLayers.indexOf(layer);
      if (slot < 0) return null;
      const [, heads, n] = r.shape;
      const at = (slot * heads + head) * n * n;
      return rows.map((i) => Array.from(r.attentions.subarray(at + i * n, at + (i + 1) * n)));
    },
    { layer, head, rows },
  );

export async function longChecks({ page, engine, shots }) {
  await check(
    "llm: past every layer's maps, the page computes the layer it shows, the engine's own; another layer is a run away",
    async () => {
      await load(page, 'test/deep-llama', 'LlamaForCausalLM');
      const model = await engine.loadModel({ files: deep.files });
      try {
        const sentence = 'the cat sat on the mat. ';
        const per = model.tokenize(sentence.repeat(10)).ids.length / 10;
        const text = sentence.repeat(Math.ceil(1700 / per)).trimEnd();
        const ids = model.tokenize(text).ids;
        const n = ids.length;
        assert(n > 1600 && n < 2048, `${n} tokens`);
        const shows = (layer, reused) =>
          page.waitForFunction(
            ({ n, layer, reused }) => {
              const r = window.__attnscope.state().result;
              return (
                r?.run >= 0 &&
                r.tokens.length === n &&
                r.mapLayers.join() === String(layer) &&
                (reused === undefined || r.reusedTokens === reused)
              );
            },
            { n, layer, reused },
            { timeout: 120_000 },
          );
        await page.selectOption('#layer', { value: '0' });
        await page.fill('#text', text);
        await shows(0);
        const status = await page.textContent('#status');
        assert(status.startsWith(`${n} tokens · `) && status.includes("layer 1's maps: every layer's maps of"), status);
        const empty = await page.getAttribute('#grid', 'data-held');
        assert(empty === '0', `the grid says it holds layers ${empty}`);
        assert(!status.includes('truncated'), status);
        const rows = [0, 7, n - 1];
        const near = async (layer) => {
          const want = model.run(ids, { mapLayers: [layer], reusePrefix: false });
          for (const head of [0, 5]) {
            const shown = await rowsShown(page, layer, head, rows);
            assert(shown, `layer ${layer + 1} is not held`);
            let worst = 0;
            rows.forEach((i, k) =>
              shown[k].forEach((x, j) => {
                worst = Math.max(worst, Math.abs(x - want.attentions[(head * n + i) * n + j]));
              }),
            );
            assert(worst < 1e-6, `layer ${layer + 1}, head ${head + 1}: differs from the engine by ${worst}`);
          }
        };
        await near(0);
        // Another layer: nothing run again but that layer's attention, from the kept queries and keys.
        await page.selectOption('#layer', { value: '9' }); // layer 10
        await shows(9, n);
        await near(9);
        await page.click('#tab-heads');
        const note = await page.textContent('#heads-note');
        assert(note.startsWith('The heads of layer 10, the one shown'), note);
        const tableRows = await page.$$eval('#summaries tbody tr', (trs) => trs.map((tr) => tr.dataset.layer));
        assert(tableRows.length === 8 && tableRows.every((l) => l === '9'), `heads table rows of layers ${tableRows}`);
        await page.screenshot({ path: join(shots, 'llm-1400-long-layer.png') });
        // Typing at the end keeps the layer shown and reuses the rest.
        await page.focus('#text');
        await page.keyboard.press('End');
        await page.keyboard.type(' the');
        await page.waitForFunction((n) => window.__attnscope.state().result?.tokens.length > n, n, { timeout: 60_000 });
        const typed = await state(page, () => {
          const r = window.__attnscope.state().result;
          return { mapLayers: r.mapLayers, reused: r.reusedTokens, n: r.tokens.length };
        });
        assert(typed.mapLayers.join() === '9' && typed.reused >= n - 2, JSON.stringify(typed));
        // Rollout combines every layer's maps: the map pane says why it cannot, and offers the way out.
        await page.check('input[name=view][value=rollout]');
        // (The run the view asks for says why, once it is back.)
        await page.waitForFunction(
          () => {
            const empty = document.getElementById('map-empty');
            return !empty.hidden && !empty.textContent.startsWith('Computing');
          },
          null,
          { timeout: 30_000 },
        );
        const why = await page.textContent('#map-empty');
        assert(why.includes("Rollout reads every layer's maps") && why.includes('shorten it'), why);
        await page.check('input[name=view][value=head]');
      } finally {
        model.dispose();
      }
    },
  );

  await check(
    'llm: the heads table holds the rows around its view (96 heads: the first 64), and every head is a scroll away',
    async () => {
      await load(page, 'test/deep-llama', 'LlamaForCausalLM');
      await page.fill('#text', 'the cat sat on the mat. the dog sat on the log.');
      await page.click('#tab-heads');
      await page.$eval('#pane-heads .pane-body', (e) => (e.scrollTop = 0)); // as the checks before left it
      // The short text's run, with every layer's maps (the long text before it had one layer's), in the table.
      await page.waitForFunction(() => {
        const r = window.__attnscope.state().result;
        const table = document.getElementById('summaries');
        return r?.run >= 0 && r.tokens.length < 40 && r.summaries.length === 96 && table.dataset.run === String(r.run);
      });
      const summaries = await state(page, () => window.__attnscope.state().result.summaries);
      assert(summaries.length === 96, `${summaries.length} heads`);
      // Sorted by entropy (the checks before may have sorted by another measure): a click sorts by it, and says which way.
      await page.click('#summaries button[data-sort=entropy]');
      const way = await page.getAttribute('#summaries th[aria-sort]', 'aria-sort');
      const sign = way === 'descending' ? -1 : 1;
      const want = [...summaries].sort((a, b) => sign * (a.entropy - b.entropy)).map((h) => `${h.layer},${h.head}`);
      const rows = () =>
        page.$$eval('#summaries tbody tr', (trs) =>
          trs.map((tr) => ({ at: Number(tr.ariaRowIndex) - 2, head: `${tr.dataset.layer},${tr.dataset.head}` })),
        );
      const held = (shown, where) => {
        assert(
          shown.every((r, k) => r.at === shown[0].at + k && r.head === want[r.at]),
          `${where}: ${JSON.stringify(shown.slice(0, 4))}…`,
        );
      };
      const top = await rows();
      assert(top.length === 64 && top[0].at === 0, `at the top: rows ${top[0]?.at}… (${top.length})`);
      held(top, 'at the top');
      /** Where the table's first row is, or would be, in the pane's content. */
      const origin = () =>
        page.evaluate(() => {
          const pane = document.querySelector('#pane-heads .pane-body');
          const tr = document.querySelector('#summaries tbody tr');
          const { top, height } = tr.getBoundingClientRect();
          return top + pane.scrollTop - (Number(tr.ariaRowIndex) - 2) * height;
        });
      const starts = await origin();
      assert((await page.getAttribute('#summaries', 'aria-rowcount')) === '97', 'aria-rowcount');
      // A row with the keyboard's focus keeps it when a scroll moves the rows held past it.
      await page.focus('#summaries tbody tr[aria-rowindex="22"]');
      await page.$eval('#pane-heads .pane-body', (pane) => {
        const row = document.querySelector('#summaries tbody tr').getBoundingClientRect(); // head 0's
        pane.scrollTop += row.top - pane.getBoundingClientRect().top + 30 * row.height; // head 30 at the top
      });
      await page.waitForFunction(() => document.querySelector('#summaries tbody tr').ariaRowIndex !== '2');
      const focus = await page.evaluate(() => {
        const tr = document.activeElement;
        return `${tr.ariaRowIndex} ${tr.dataset.layer},${tr.dataset.head} (row ${tr.parentNode.firstChild.ariaRowIndex} first)`;
      });
      assert(focus.startsWith(`22 ${want[20]}`), `the focus is on ${focus}`);
      // Scrolled to the end, the last heads are there, where the whole table would put them.
      await page.$eval('#pane-heads .pane-body', (e) => (e.scrollTop = e.scrollHeight));
      await page.waitForFunction(() => document.querySelector('#summaries tbody tr:last-child').ariaRowIndex === '97');
      const end = await rows();
      held(end, 'at the end');
      const [row, pane] = await page.evaluate(() => [
        document.querySelector('#summaries tbody tr:last-child').getBoundingClientRect(),
        document.querySelector('#pane-heads .pane-body').getBoundingClientRect(),
      ]);
      assert(
        row.bottom <= pane.bottom + 1 && row.top >= pane.top,
        `the last row at ${row.top} in ${pane.top}-${pane.bottom}`,
      );
      // The margins stand in for the rows left out: head k is k rows below the first wherever the table is scrolled.
      const ends = await origin();
      assert(
        Math.abs(ends - starts) < 1,
        `the first row would be at ${ends} px scrolled down, ${starts} px at the top`,
      );
      await page.click('#summaries tbody tr[aria-rowindex="97"]');
      const [layer, head] = want[95].split(',').map(Number);
      await page.waitForFunction(
        ({ layer, head }) => {
          const s = window.__attnscope.state();
          return s.layer === layer && s.head === head;
        },
        { layer, head },
      );
      await page.$eval('#pane-heads .pane-body', (e) => (e.scrollTop = 0));
      // On a phone the page scrolls, not the pane: the rows follow it.
      await page.setViewportSize({ width: 390, height: 844 });
      try {
        await page.$eval('#pane-heads .scroll', (e) => e.scrollIntoView({ block: 'end' }));
        await page.waitForFunction(
          () => document.querySelector('#summaries tbody tr:last-child').ariaRowIndex === '97',
        );
        held(await rows(), 'at the end on a phone');
        const last = await page.$eval('#summaries tbody tr:last-child', (tr) => tr.getBoundingClientRect());
        assert(last.top >= 0 && last.bottom <= 845, `on a phone the last row is at ${last.top}-${last.bottom} px`);
      } finally {
        await page.setViewportSize({ width: 1400, height: 900 });
        await page.evaluate(() => window.scrollTo(0, 0));
      }
    },
  );
}
