// The language-model panes, continued (llm.mjs): GPT-2 through the same panes, the exports (the generated
// text with its attention tensor as JSON and .npy; PNG and SVG of the new panes), and a screenshot of each
// new pane at 1400 × 900 and 390 × 844.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { gpt2Checkpoint } from '../llm/gpt2.mjs';
import { assert, check } from './harness.mjs';

const state = (page, pick) => page.evaluate(pick);

/** Clicks a button that downloads, and returns the file's name and bytes. */
async function downloaded(page, selector) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  return { name: download.suggestedFilename(), bytes: readFileSync(await download.path()) };
}

export async function exportChecks(page, context, engine, shots) {
  const gpt2 = await engine.loadModel({ files: gpt2Checkpoint() });
  const TEXT = 'the cat sat on the mat and';

  await check("llm: GPT-2 too: the bars are the engine's predictions, the lens its own", async () => {
    await page.fill('#hub-id', 'test/gpt2');
    await page.click('#load-hub');
    await page.waitForFunction(
      () => document.getElementById('model-name').dataset.architecture === 'GPT2LMHeadModel',
      null,
      {
        timeout: 30_000,
      },
    );
    await page.click('#tab-next');
    await page.fill('#text', TEXT);
    const n = gpt2.tokenize(TEXT).ids.length;
    await page.waitForFunction(
      (w) =>
        document.getElementById('candidates').dataset.position === String(w - 1) &&
        window.__attnscope.state().result.tokens.length === w,
      n,
      { timeout: 20_000 },
    );
    const shown = await page.$$eval('#candidates button[data-id]', (bs) =>
      bs.map((b) => [Number(b.dataset.id), Number(b.dataset.p)]),
    );
    const p = gpt2.run(TEXT, { topK: 10 }).predictions;
    shown.forEach(([id, prob], k) => {
      assert(id === p.ids[(n - 1) * 10 + k], `bar ${k}: ${id} vs ${p.ids[(n - 1) * 10 + k]}`);
      assert(Math.abs(prob - p.probs[(n - 1) * 10 + k]) < 1e-6, `bar ${k}: ${prob}`);
    });
    await page.click('#tab-lens');
    await page.waitForFunction(() => window.__attnscope.state().result.logitLens, null, { timeout: 20_000 });
    const lens = await state(page, () => Array.from(window.__attnscope.state().result.logitLens.ids));
    assert(lens.join() === Array.from(gpt2.run(TEXT, { logitLens: true }).logitLens.ids).join(), 'GPT-2 lens');
  });

  await check('llm: the generated text exports with its attention tensor as JSON and .npy', async () => {
    await page.click('#tab-next');
    await page.fill('#max-new', '6');
    await page.dispatchEvent('#max-new', 'change');
    await page.click('#generate');
    await page.waitForFunction(
      () => {
        const s = window.__attnscope.state();
        return s.generated && !s.generation && s.result.origin === 'text' && s.result.ids.join() === s.ids.join();
      },
      null,
      { timeout: 20_000 },
    );
    const s = await state(page, () => {
      const { text, ids, seed, result, generated } = window.__attnscope.state();
      return { text, ids, seed, shape: result.shape, promptTokens: generated.promptTokens };
    });
    const json = await downloaded(page, '#download-json');
    const saved = JSON.parse(json.bytes.toString('utf8'));
    assert(
      json.name === 'attentions.json' && saved.text === s.text && saved.ids.join() === s.ids.join(),
      'JSON text or ids',
    );
    assert(
      saved.generation.seed === s.seed && saved.generation.promptTokens === s.promptTokens,
      JSON.stringify(saved.generation),
    );
    assert(saved.shape.join() === s.shape.join() && saved.attentions[0][0].length === s.ids.length, 'JSON maps');
    const fresh = gpt2.run(s.ids);
    const n = s.ids.length;
    assert(
      Math.abs(saved.attentions[1][2][n - 1][0] - fresh.attentions[((1 * 4 + 2) * n + n - 1) * n]) < 1e-5,
      'JSON weight',
    );
    const npy = await downloaded(page, '#download-npy');
    const header = npy.bytes.subarray(0, 128).toString('latin1');
    assert(npy.bytes[0] === 0x93 && header.includes(`'shape': (${s.shape.join(', ')})`), header);
  });

  await check('llm: the new panes export as PNG and SVG', async () => {
    await page.click('#tab-induction');
    await page.click('#induction-run');
    await page.waitForFunction(() => window.__attnscope.state().induction, null, { timeout: 20_000 });
    await page.click('#induction-back');
    for (const pane of ['next', 'lens', 'induction']) {
      await page.click(`#tab-${pane}`);
      await page.waitForTimeout(200);
      const png = await downloaded(page, `button[data-export="${pane}"][data-format="png"]`);
      assert(
        png.name.endsWith('.png') && png.bytes.length > 1000 && png.bytes.subarray(1, 4).toString() === 'PNG',
        `${pane} PNG`,
      );
      const svg = await downloaded(page, `button[data-export="${pane}"][data-format="svg"]`);
      const text = svg.bytes.toString('utf8');
      assert(
        svg.name.endsWith('.svg') && text.startsWith('<svg') && text.includes('<text'),
        `${pane} SVG: ${text.slice(0, 80)}`,
      );
    }
  });

  await check('llm: every new pane, screenshotted at 1400 × 900 and 390 × 844, light and dark', async () => {
    for (const [width, height] of [
      [1400, 900],
      [390, 844],
    ]) {
      await page.setViewportSize({ width, height });
      for (const scheme of ['light', 'dark']) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const pane of ['next', 'lens', 'induction', 'heads']) {
          await page.click(`#tab-${pane}`);
          await page.$eval(`#pane-${pane}`, (el) => {
            el.closest('.dock').scrollIntoView();
            el.querySelector('.pane-body').scrollTop = 0; // its top, however an earlier click scrolled it
          });
          await page.waitForTimeout(200);
          const name = scheme === 'light' ? pane : `${pane}-dark`;
          await page.screenshot({ path: join(shots, `llm-${width}-${name}.png`) });
        }
      }
      await page.emulateMedia({ colorScheme: 'light' });
      await page.$eval('#chooser', (el) => {
        el.closest('.pane-body').scrollTop = 0; // the picker, however far the text pane was scrolled
        el.scrollIntoView();
      });
      await page.screenshot({ path: join(shots, `llm-${width}-picker.png`) });
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      assert(wide <= width, `the page is ${wide} px wide at ${width} px`);
    }
    await page.setViewportSize({ width: 1400, height: 900 });
  });
  gpt2.dispose();
}
