// Rollout, flow, head summaries, compare, intervene, head ablation, export and the
// shareable link, in the production page (threads, CSP). What the page shows is
// compared with the library's own results computed here in Node; downloads are
// saved and read back (the .npy with NumPy).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { assert, check, chooseTinyBert, hover, open, serve } from './harness.mjs';

const TEXT = 'The cat sat on the mat.';
const close = (a, b, tol = 1e-5) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) <= tol);
const max = (xs) => xs.reduce((m, x) => Math.max(m, x), -Infinity);

/** Clicks a button that starts a download and returns the saved file's path. */
async function downloaded(page, selector, dir, name) {
  const [download] = await Promise.all([
    page.waitForEvent('download', { timeout: 15_000 }).catch(() => {
      throw new Error(`${selector}: no download`);
    }),
    page.click(selector),
  ]);
  const path = join(dir, name ?? download.suggestedFilename());
  await download.saveAs(path);
  // Chromium holds back a page's downloads when more than about ten come within a second or two, as
  // no person clicks: pause as one would.
  await page.waitForTimeout(300);
  return path;
}

export async function analysisChecks(browser, site, engine, shots) {
  const model = await engine.loadModel('default');
  const run = model.run(TEXT);
  const [layers, heads, n] = run.shape;
  const server = await serve(true, site);
  const origin = `http://127.0.0.1:${server.address().port}/`;
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  /** Switches the map's view and waits until the bars show `want` (or fails saying what they show). */
  const expectBars = async (view, residual, want) => {
    await page.check(`input[name=view][value=${view}]`); // opens the rollout & flow pane with its bars
    await page[residual ? 'check' : 'uncheck']('#residual');
    const json = JSON.stringify(Array.from(want));
    try {
      await page.waitForFunction((w) => document.getElementById('bars').dataset.values === w, json, {
        timeout: 15_000,
      });
    } catch {
      throw new Error(
        `${view} (residual ${residual}): bars ${await page.getAttribute('#bars', 'data-values')}, want ${json}`,
      );
    }
  };
  try {
    await page.goto(`${origin}#text=${encodeURIComponent(TEXT)}`);
    await page.waitForFunction(
      (want) => document.getElementById('map').dataset.tokens === want,
      JSON.stringify(model.labels(run.ids)),
      {
        timeout: 60_000,
      },
    );

    await check('analysis: rollout and flow, with and without the residual, as a map and as bars', async () => {
      for (const residual of [true, false]) {
        const rolled = engine.rollout(run, { residual }).data.slice((layers - 1) * n * n);
        await expectBars('rollout', residual, rolled.subarray(0, n));
        await expectBars('flow', residual, engine.attentionFlow(run, { residual }).data.subarray(0, n));
      }
      // The token-to-token map shows the same matrix: hover one cell, for another output token.
      await page.selectOption('#bar-token', { value: '2' });
      await page.waitForFunction(() => document.getElementById('across-note').textContent.startsWith('Flow'));
      const flow = engine.attentionFlow(run, { residual: false }).data;
      await page.waitForFunction(
        (want) => document.getElementById('bars').dataset.values === want,
        JSON.stringify(Array.from(flow.subarray(2 * n, 3 * n))),
      );
      await hover(page, 2, 4);
      const shown = Number(await page.getAttribute('#cell', 'data-weight'));
      assert(Math.abs(shown - flow[2 * n + 4]) < 1e-6, `hovered flow ${shown} vs ${flow[2 * n + 4]}`);
      await page.check('#residual');
      await page.check('input[name=view][value=head]');
    });

    await check(
      'analysis: every head summarized; sorting by a measure orders the rows; a row opens its head',
      async () => {
        await open(page, 'heads');
        const summaries = engine.headSummaries(run);
        const rows = await page.$$eval('#summaries tbody tr', (trs) =>
          trs.map((tr) => [...tr.cells].map((c) => c.textContent)),
        );
        assert(rows.length === layers * heads, `${rows.length} rows`);
        for (const s of summaries) {
          const row = rows.find((r) => r[0] === `L${s.layer + 1}` && r[1] === `H${s.head + 1}`);
          const want = [s.entropy, s.distance, s.previous, s.self, s.special, s.punctuation].map((x) => x.toFixed(3));
          assert(
            // The engine's six summaries, then the language-model measures (llm-heads.mjs checks those).
            JSON.stringify(row.slice(2, 8)) === JSON.stringify(want),
            `L${s.layer + 1}H${s.head + 1}: ${row} vs ${want}`,
          );
        }
        await page.click('#summaries button[data-sort=distance]'); // descending first
        const distances = await page.$$eval('#summaries tbody tr', (trs) =>
          trs.map((tr) => Number(tr.cells[3].textContent)),
        );
        assert(
          distances.every((d, i) => i === 0 || distances[i - 1] >= d),
          `not sorted: ${distances}`,
        );
        await page.click('#summaries button[data-sort=distance]');
        const ascending = await page.$$eval('#summaries tbody tr', (trs) =>
          trs.map((tr) => Number(tr.cells[3].textContent)),
        );
        assert(JSON.stringify(ascending) === JSON.stringify([...distances].reverse()), 'second click does not reverse');
        await page.click('#summaries tbody tr[data-layer="1"][data-head="2"]');
        assert(
          (await page.getAttribute('#map', 'data-layer')) === '1' &&
            (await page.getAttribute('#map', 'data-head')) === '2',
          'row did not select',
        );
        assert((await page.locator('#measures dt').count()) === 9, 'measures explained');
      },
    );

    await check(
      'analysis: compare two sentences: aligned tokens, their difference, a message for the rest',
      async () => {
        const other = 'The dog sat on the mat.';
        await open(page, 'compare');
        await page.fill('#compare-text', other);
        await page.click('#compare-run');
        await page.waitForFunction(() => document.getElementById('compare-note').textContent.includes('align'));
        const c = engine.compare(run, model.run(other));
        const d = c.difference(1, 2).data;
        assert(Number(await page.getAttribute('#compare-map', 'data-pairs')) === c.pairs.length, 'pairs');
        const worst = Number(await page.getAttribute('#compare-map', 'data-max-difference'));
        assert(Math.abs(worst - max(Array.from(d, Math.abs))) < 1e-6, `difference ${worst}`);
        const note = await page.textContent('#compare-note');
        assert(note.includes(`${c.pairs.length} tokens align; only in A: “▁cat”; only in B: “▁dog”`), note);
        await page.screenshot({ path: join(shots, 'analysis-compare.png'), fullPage: true });
      },
    );

    await check('analysis: intervene: masking or replacing a token moves each head as the library says', async () => {
      await open(page, 'intervene');
      await page.selectOption('#intervene-token', { value: '1' });
      await page.check('input[name=intervene-action][value=mask]');
      await page.click('#intervene-run');
      await page.waitForFunction(() => document.getElementById('intervene-change').dataset.change);
      const masked = model.run(run.ids, { attentionMask: run.tokens.map((_, i) => (i === 1 ? 0 : 1)) });
      const want = Array.from(engine.compare(run, masked).change.data);
      const got = JSON.parse(await page.getAttribute('#intervene-change', 'data-change'));
      assert(close(got, want), `change ${got} vs ${want}`);
      assert((await page.textContent('#intervene-note')).startsWith('“▁cat” hidden from every head'), 'mask note');
      await page.check('input[name=intervene-action][value=replace]');
      await page.fill('#replace-with', 'dog');
      await page.click('#intervene-run');
      await page.waitForFunction(() => document.getElementById('intervene-note').textContent.includes('replaced by'));
      const note = await page.textContent('#intervene-note');
      assert(note.startsWith('“▁cat” replaced by one token of “dog”'), note);
    });

    await check(
      'analysis: ablating a head changes the last hidden state by the cosine the library computes',
      async () => {
        await open(page, 'ablate');
        await page.click('#ablate-run'); // the selected head: layer 2, head 3
        await page.waitForFunction(() => document.getElementById('ablate-note').dataset.mean);
        const ablated = model.run(TEXT, { ablateHeads: [[1, 2]] });
        const cos = engine.cosineSimilarity(run.hidden, ablated.hidden);
        const want = cos.reduce((s, x) => s + x, 0) / cos.length;
        const got = Number(await page.getAttribute('#ablate-note', 'data-mean'));
        assert(Math.abs(got - want) < 1e-6 && got < 0.9999, `mean cosine ${got} vs ${want}`);
        assert((await page.textContent('#ablate-note')).includes('Without layer 2, head 3'), 'note');
      },
    );

    await check('analysis: every view exports as PNG and SVG; token text is escaped in the SVG', async () => {
      const dir = join(shots, 'downloads');
      // Each export sits in its view's pane: open the pane, then download.
      const panes = { lines: 'lines', math: 'math', compare: 'compare', intervene: 'intervene', ablate: 'ablate' };
      for (const view of ['grid', 'map', 'lines', 'math', 'compare', 'intervene', 'ablate']) {
        if (panes[view]) await open(page, panes[view]);
        const png = readFileSync(await downloaded(page, `button[data-export=${view}][data-format=png]`, dir));
        assert(png.subarray(1, 4).toString() === 'PNG' && png.length > 1000, `${view}.png`);
        const svg = readFileSync(await downloaded(page, `button[data-export=${view}][data-format=svg]`, dir), 'utf8');
        assert(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"') && svg.endsWith('</svg>'), `${view}.svg`);
        const shapes = (svg.match(/<(rect|path) /g) ?? []).length;
        assert(shapes > n, `${view}.svg has ${shapes} rects and paths`);
      }
      // Untrusted token text, exported: escaped, never markup.
      await page.fill('#text', '<b>bold</b> & more');
      await page.waitForFunction(() => document.getElementById('map').dataset.tokens.includes('old'));
      const svg = readFileSync(
        await downloaded(page, 'button[data-export=map][data-format=svg]', dir, 'escaped.svg'),
        'utf8',
      );
      assert(svg.includes('&lt;') && !/<b>|<\/b>/.test(svg) && svg.includes('&amp;'), 'SVG text not escaped');
      await page.fill('#text', TEXT);
      await page.waitForFunction(
        (want) => document.getElementById('map').dataset.tokens === want,
        JSON.stringify(model.labels(run.ids)),
      );
    });

    await check('analysis: the attention tensor downloads as JSON and as .npy; NumPy reads the .npy back', async () => {
      const dir = join(shots, 'downloads');
      const json = JSON.parse(readFileSync(await downloaded(page, '#download-json', dir), 'utf8'));
      assert(
        JSON.stringify(json.shape) === JSON.stringify(run.shape) &&
          JSON.stringify(json.tokens) === JSON.stringify(run.tokens) &&
          JSON.stringify(json.labels) === JSON.stringify(model.labels(run.ids)),
        'JSON shape/tokens',
      );
      assert(close(json.attentions.flat(3), Array.from(run.attentions), 0), 'JSON values');
      const npy = await downloaded(page, '#download-npy', dir);
      const script =
        'import numpy, sys, json; a = numpy.load(sys.argv[1]); print(json.dumps({"shape": a.shape, "dtype": str(a.dtype), "data": a.ravel().tolist()}))';
      const back = JSON.parse(execFileSync('/usr/bin/python3', ['-c', script, npy], { encoding: 'utf8' }));
      assert(
        JSON.stringify(back.shape) === JSON.stringify(run.shape) && back.dtype === 'float32',
        `numpy: ${back.shape} ${back.dtype}`,
      );
      assert(close(back.data, Array.from(run.attentions), 0), 'numpy values');
    });

    await check('analysis: a shared link restores the text, layer, head and view', async () => {
      await page.fill('#text', 'Links remember everything.');
      await page.selectOption('#layer', { value: '1' });
      await page.selectOption('#head', { value: '3' });
      await page.check('input[name=view][value=flow]');
      await page.click('#copy-link');
      const link = await page.inputValue('#share-link');
      const fresh = await browser.newPage();
      try {
        await fresh.goto(link);
        await fresh.waitForFunction(() => document.getElementById('bars').dataset.view === 'flow', null, {
          timeout: 60_000,
        });
        const state = await fresh.evaluate(() => ({
          text: document.getElementById('text').value,
          layer: document.getElementById('map').dataset.layer,
          head: document.getElementById('map').dataset.head,
          view: document.querySelector('input[name=view]:checked').value,
        }));
        assert(
          JSON.stringify(state) ===
            JSON.stringify({ text: 'Links remember everything.', layer: '1', head: '3', view: 'flow' }),
          JSON.stringify(state),
        );
      } finally {
        await fresh.close();
      }
    });

    await check('analysis: compare two models: the loaded BERT against the embedded default', async () => {
      await page.check('input[name=view][value=head]');
      await chooseTinyBert(page);
      await page.waitForFunction(
        () => document.getElementById('model-name').dataset.architecture === 'BertModel',
        null,
        { timeout: 30_000 },
      );
      await page.fill('#text', 'the cat sat on the mat');
      await page.waitForFunction(() => document.getElementById('map').dataset.tokens?.startsWith('["[CLS]"'));
      await open(page, 'compare');
      await page.fill('#compare-text', 'the cat sat on the mat');
      await page.selectOption('#compare-model', { value: 'default' });
      await page.click('#compare-run');
      await page.waitForFunction(() =>
        document.getElementById('compare-note').textContent.includes('only in A: “[CLS]”'),
      );
      const note = await page.textContent('#compare-note');
      assert(note.includes('5 tokens align; only in A: “[CLS]” “mat” “[SEP]”; only in B: “▁ma” “t”'), note);
    });

    await check('analysis: no page errors', async () => assert(errors.length === 0, errors.join('\n')));
  } finally {
    await page.close();
    server.close();
    model.dispose();
  }
}
