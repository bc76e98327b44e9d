// An encoder-decoder model (BART, random weights in the Hub's layout, with a byte-level BPE tokenizer.json) in the
// page: loaded from files, the text is the source and the second box the target. Each set of maps the page shows
// (cross-attention, the encoder's, the decoder's) is compared with the library's own run here in Node, and
// "Generate the target" writes the target the library generates.
import { join } from 'node:path';

import { bartWithTokenizer } from '../seq2seq.mjs';
import { assert, check, hover, serve } from './harness.mjs';

export async function seq2seqChecks(browser, site, engine, shots) {
  const files = bartWithTokenizer();
  const model = await engine.loadModel({ files });
  const server = await serve(true, site);
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  const [source, target] = ['the cat sat on the mat', 'the hat sat'];
  /** Waits until the map shows these rows (and columns, when given). */
  const shows = async (rows, cols) => {
    const want = [JSON.stringify(rows), cols && JSON.stringify(cols)];
    try {
      await page.waitForFunction(
        ([r, c]) => {
          const map = document.getElementById('map');
          return map.dataset.tokens === r && (!c || map.dataset.keys === c);
        },
        want,
        { timeout: 15_000 },
      );
    } catch {
      const map = await page.evaluate(() => ({ ...document.getElementById('map').dataset }));
      throw new Error(`the map shows ${map.tokens} × ${map.keys}, want ${want.join(' × ')}`);
    }
  };
  /** The cell (i, j) of layer l, head h as the page reads it out under the pointer. */
  const cell = async (l, h, i, j) => {
    await page.selectOption('#layer', { value: String(l) });
    await page.selectOption('#head', { value: String(h) });
    await hover(page, i, j);
    await page.waitForFunction(
      ([i, j]) => {
        const c = document.getElementById('cell').dataset;
        return c.row === String(i) && c.col === String(j);
      },
      [i, j],
    );
    return Number(await page.getAttribute('#cell', 'data-weight'));
  };
  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => document.getElementById('model-name').dataset.architecture !== undefined);

    await check('seq2seq: BART from files: the text is the source, the second box the target', async () => {
      await page.setInputFiles(
        '#files',
        Object.entries(files).map(([name, bytes]) => ({
          name,
          mimeType: 'application/octet-stream',
          buffer: Buffer.from(bytes),
        })),
      );
      await page.waitForFunction(
        () => document.getElementById('model-name').dataset.architecture === 'BartForConditionalGeneration',
        null,
        { timeout: 30_000 },
      );
      await page.waitForSelector('#context-row:not([hidden])');
      await page.waitForSelector('#stack-row:not([hidden])');
      const label = await page.textContent('#context-label');
      assert(label.startsWith('Target'), label);
      await page.fill('#text', source);
      await page.fill('#context', target);
    });

    const r = model.run({ source, target });
    const sourceLabels = model.labels(r.sourceIds);
    const targetLabels = model.labels(r.targetIds);
    const [n, m] = [r.targetIds.length, r.sourceIds.length];

    await check(
      "seq2seq: cross-attention: target tokens on the rows, source tokens on the columns, the library's maps",
      async () => {
        await shows(targetLabels, sourceLabels);
        assert(n !== m, 'the test needs a source and a target of different lengths');
        const [l, h, i, j] = [2, 1, n - 1, m - 1];
        const shown = await cell(l, h, i, j);
        const want = r.maps.cross.attentions[((l * 4 + h) * n + i) * m + j];
        assert(Math.abs(shown - want) < 1e-6, `cross (${i}, ${j}): page ${shown}, library ${want}`);
        await page.waitForFunction(() => Number(document.getElementById('lines').dataset.lines) > 0);
        await page.screenshot({ path: join(shots, 'seq2seq-cross.png') });
      },
    );

    await check("seq2seq: the encoder's maps (source × source) and the decoder's (target, causal)", async () => {
      await page.check('input[name=stack][value=encoder]');
      await shows(sourceLabels);
      const enc = await cell(1, 3, m - 1, 1);
      const wantEnc = r.maps.encoder.attentions[((1 * 4 + 3) * m + m - 1) * m + 1];
      assert(Math.abs(enc - wantEnc) < 1e-6, `encoder: page ${enc}, library ${wantEnc}`);
      await page.check('input[name=stack][value=decoder]');
      await shows(targetLabels);
      const dec = await cell(0, 2, n - 1, 1);
      const wantDec = r.maps.decoder.attentions[((0 * 4 + 2) * n + n - 1) * n + 1];
      assert(Math.abs(dec - wantDec) < 1e-6, `decoder: page ${dec}, library ${wantDec}`);
      await page.screenshot({ path: join(shots, 'seq2seq-decoder.png') });
      await page.check('input[name=stack][value=cross]');
      await shows(targetLabels, sourceLabels);
    });

    await check(
      'seq2seq: "Generate the target" writes the greedy generation, which then runs teacher-forced',
      async () => {
        const g = await model.generate({ source }, { maxNewTokens: 30, temperature: 0, attentions: false });
        await page.click('#translate');
        await page.waitForFunction((want) => document.getElementById('context').value === want, g.text, {
          timeout: 30_000,
        });
        // The generated ids run as they are (their text need not tokenize back to them).
        await shows(model.labels(g.targetIds), sourceLabels);
        const forced = model.run({ source, target: g.targetIds });
        const k = g.targetIds.length;
        const shown = await cell(0, 0, k - 1, 2);
        const want = forced.maps.cross.attentions[(0 * k + k - 1) * m + 2];
        assert(Math.abs(shown - want) < 1e-6, `generated cross (${k - 1}, 2): page ${shown}, library ${want}`);
        await page.screenshot({ path: join(shots, 'seq2seq-generated.png') });
        // An edit of the box runs its text again.
        await page.fill('#context', target);
        await shows(targetLabels, sourceLabels);
      },
    );

    await check('seq2seq: no page errors', () => assert(errors.length === 0, errors.join('\n')));
  } finally {
    await page.close();
    server.close();
    model.dispose();
  }
}
