// After a failure the page shows nothing of the run before it. A BART from files (random weights in the Hub's
// layout, a byte-level tokenizer) loads, but its decoder reads 32 positions and the page's default target takes 33
// tokens: the run fails. The header then names the BART with each stack's layers, and where the map was the page
// says, in its own words, what went wrong and what to do; the embedded model's map, grid and tokens are gone. A
// target that fits brings the BART's maps.
import { join } from 'node:path';

import { bartWithTokenizer } from '../seq2seq.mjs';
import { jfkWav } from '../whisper.mjs';
import { assert, check, loadFiles, ONE_PIXEL_PNG, serve } from './harness.mjs';

/** Whether an element is drawn: in the layout and not hidden by visibility. */
const drawn = (page, selector) =>
  page.$eval(selector, (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility === 'visible');

export async function honestChecks(browser, site, engine, shots) {
  const files = bartWithTokenizer();
  const model = await engine.loadModel({ files });
  const server = await serve(true, site);
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 60_000 });
    await page.click('#hints-close');
    const before = await page.getAttribute('#map', 'data-tokens');

    await check('honest: the Next token pane says why the model in view predicts none, by its name', async () => {
      await page.click('#tab-next');
      const said = await page.textContent('#next-empty');
      const name = await page.evaluate(() => window.__attnscope.state().model.name);
      assert(said.includes(`${name} is an encoder: it does not predict tokens.`), said);
      assert(!said.includes('embedded encoder'), said);
    });

    await check('honest: an image dropped on a text model loads nothing, says why, and leaves the link', async () => {
      const header = await page.textContent('#model-name');
      await page.setInputFiles('#files', [{ name: 'cat.png', mimeType: 'image/png', buffer: ONE_PIXEL_PNG }]);
      await page.waitForFunction(() => document.getElementById('load-status').dataset.state === 'error');
      const said = await page.textContent('#load-status');
      assert(/reads text, not images/.test(said) && !/config\.json is missing/.test(said), said);
      await page.waitForTimeout(400); // the link is written a moment after a change
      assert((await page.textContent('#model-name')) === header, await page.textContent('#model-name'));
      const link = new URL(await page.inputValue('#share-link'));
      assert(new URLSearchParams(link.hash.slice(1)).get('model') === 'default', link.hash);
      assert(await page.$eval('#share-note', (e) => e.hidden), 'the link says the model came from files');
    });

    await check(
      'honest: a sound dropped on a text model loads nothing, says it reads text, and keeps the model',
      async () => {
        const header = await page.textContent('#model-name');
        await page.setInputFiles('#files', [{ name: 'jfk.wav', mimeType: 'audio/wav', buffer: Buffer.from(jfkWav()) }]);
        // Until this one is refused, the status still holds the image's error from the check before: wait for this one's.
        await page.waitForFunction(() => /not sound/.test(document.getElementById('load-status').textContent));
        const said = await page.textContent('#load-status');
        assert(/reads text, not sound: choose a speech model \(Whisper\)/.test(said), said);
        assert((await page.textContent('#model-name')) === header, await page.textContent('#model-name'));
        assert(await drawn(page, '#map'), 'the map of the model before went away');
      },
    );

    await check(
      'honest: a model that loads but cannot run shows nothing of the model before, and says why where the map was',
      async () => {
        await loadFiles(page, files, 'BartForConditionalGeneration');
        await page.waitForFunction(() => window.__attnscope.state().runError, null, { timeout: 30_000 });
        await page.waitForTimeout(200);
        const header = await page.textContent('#model-name');
        const [encoder, decoder] = model.info.stacks;
        assert(
          header.includes(`encoder ${encoder.layers} layers`) && header.includes(`decoder ${decoder.layers} layers`),
          `the header says "${header}"`,
        );
        for (const selector of ['#map', '#grid', '#tokens'])
          assert(!(await drawn(page, selector)), `${selector} still shows the run before the failure`);
        assert(await drawn(page, '#run-failed'), 'no message where the map was');
        const said = await page.textContent('#run-failed');
        assert(/33/.test(said) && /32/.test(said) && /shorten the target/i.test(said), said);
        assert(
          !/\b(run|generate|loadModel|explain\w*): |token ids|\w+\(\)/.test(said),
          `the message names the API: ${said}`,
        );
        const box = await page.locator('#run-failed').boundingBox();
        assert(box && box.y >= 0 && box.y + box.height <= 900, `the message is out of sight: ${JSON.stringify(box)}`);
        await page.screenshot({ path: join(shots, 'honest-failed-run-1400.png') });
        // On a phone the status under the boxes says it too, in the same words.
        assert((await page.textContent('#status')) === said, await page.textContent('#status'));
        await page.setViewportSize({ width: 390, height: 844 });
        await page.waitForTimeout(100);
        await page.locator('#status').scrollIntoViewIfNeeded();
        await page.screenshot({ path: join(shots, 'honest-failed-run-390.png') });
        await page.setViewportSize({ width: 1400, height: 900 });
      },
    );

    await check('honest: a target that fits brings the new model’s maps back, and the message goes', async () => {
      await page.fill('#context', 'the hat sat');
      const labels = JSON.stringify(
        model.labels(model.run({ source: await page.inputValue('#text'), target: 'the hat sat' }).targetIds),
      );
      await page.waitForFunction((want) => document.getElementById('map').dataset.tokens === want, labels, {
        timeout: 30_000,
      });
      await page.waitForFunction(() => !document.body.dataset.run);
      for (const selector of ['#map', '#grid', '#tokens']) assert(await drawn(page, selector), `${selector} hidden`);
      assert(!(await drawn(page, '#run-failed')), 'the message stays');
      assert((await page.getAttribute('#map', 'data-tokens')) !== before, 'the map is the embedded model’s');
    });

    await check('honest: no page errors', async () => assert(errors.length === 0, errors.join('\n')));
  } finally {
    await page.close();
    await server.close();
    model.dispose();
  }
}
