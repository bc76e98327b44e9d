// Generation in the page (llm.mjs loads the planted checkpoint first): Generate streams tokens under the text
// while the maps grow a row per token; Stop keeps what is shown; the grown maps equal a fresh run of the final
// ids; the seed is shown, repeats the generation as Node's does, and travels in the link. The hostile cases:
// typing during a generation keeps what it generated and stops it (no later token is ever shown), a download
// that fails mid-generation leaves the previous model working, and a paste longer than the model is cut at its
// limit with a notice.
import { join } from 'node:path';

import { assert, check, stats } from './harness.mjs';
import { at, load, record, set, settled, state, TEXT } from './llm-page.mjs';

/** The largest difference between the page's maps and an engine run's. */
const worst = (shown, want) => shown.reduce((m, x, i) => Math.max(m, Math.abs(x - want[i])), 0);

export async function generateChecks({ page, context, model, seed, origin, shots }) {
  const promptIds = Array.from(model.tokenize(TEXT).ids);
  // The planted checkpoint without an end-of-text token: its generations run as long as they are asked to, long
  // enough to be stopped or typed into while they run (they reach the page a few times a second).
  await load(page, 'test/planted-endless', 'LlamaForCausalLM');

  await check(
    'llm: Generate streams under the text, the maps grow a row per token; Stop keeps what is shown',
    async () => {
      await page.click('#tab-next');
      await page.fill('#text', TEXT);
      await settled(page);
      await set(page, 'max-new', 2000);
      await record(page);
      await at(page, 4, 'stop');
      await page.click('#generate');
      await page.waitForFunction(() => window.__acted !== undefined, null, { timeout: 20_000 });
      await settled(page);
      await page.screenshot({ path: join(shots, 'llm-1400-stopped.png') });
      const shown = await state(page, () => window.__shown);
      const acted = await state(page, () => window.__acted);
      // (The map redraws the same tokens too, e.g. as panes change: it is the generation's maps that count.)
      const grown = shown.slice(0, acted).filter((x) => x.origin === 'generation');
      // A few times a second, each time with every token since: more tokens each time, and fewer than asked for.
      assert(grown.length >= 1, 'no grown maps shown');
      grown.forEach((x, k) =>
        assert(x.n > (grown[k - 1]?.n ?? promptIds.length) && x.n < promptIds.length + 2000, `map ${k}: ${x.n}`),
      );
      // Streamed: each grown map's text is the prompt and the tokens so far, as the tokenizer decodes them.
      grown.forEach((x) => {
        const decoded = model.decode(x.ids, { skipSpecialTokens: true });
        assert(x.text === decoded, `box ${JSON.stringify(x.text)} beside ${JSON.stringify(decoded)}`);
      });
      const s = await state(page, () => {
        const { ids, generated, result } = window.__attnscope.state();
        return { ids, generated, resultIds: result.ids, text: document.getElementById('text').value };
      });
      const kept = grown.at(-1).ids;
      assert(s.generated.stopReason === 'stop' && s.ids.join() === kept.join(), `kept ${s.ids}, shown ${kept}`);
      assert(s.generated.promptTokens === promptIds.length, `prompt of ${s.generated.promptTokens}`);
      assert(s.resultIds.join() === s.ids.join(), 'the run is not of the kept ids');
      // (As a text box holds it: a box has no carriage returns.)
      const decoded = model.decode(s.ids, { skipSpecialTokens: true }).replace(/\r\n?/g, '\n');
      assert(s.text === decoded, `text ${JSON.stringify(s.text)}`);
      assert(!(await page.isDisabled('#generate')) && (await page.isDisabled('#stop')), 'buttons');
      // Nothing the worker sent after Stop shows.
      await page.waitForTimeout(300);
      const after = await state(page, () => window.__shown.slice(window.__acted));
      assert(
        after.every((x) => x.ids.join() === kept.join()),
        `after Stop: ${JSON.stringify(after.map((x) => [x.origin, x.n]))}`,
      );
      const maps = await state(page, () => Array.from(window.__attnscope.state().result.attentions));
      const d = worst(maps, model.run(s.ids).attentions);
      assert(d < 1e-5, `maps after stopping differ from a run by ${d}`);
    },
  );

  await check('llm: Generate from the keyboard keeps the focus: on Stop while it runs, on Generate after', async () => {
    await page.focus('#generate');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => !document.getElementById('stop').disabled, null, { timeout: 20_000 });
    const running = await page.evaluate(() => document.activeElement?.id);
    assert(running === 'stop', `the focus while generating: ${running}`);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => !document.getElementById('generate').disabled, null, { timeout: 20_000 });
    const after = await page.evaluate(() => document.activeElement?.id);
    assert(after === 'generate', `the focus after Stop: ${after}`);
    await settled(page);
  });

  await check(
    'llm: the grown maps equal a fresh run; the seed, shown and in the link, repeats the generation',
    async () => {
      await page.fill('#text', TEXT);
      await settled(page);
      await set(page, 'max-new', 12);
      await record(page);
      const started = Date.now();
      await page.click('#generate');
      await page.waitForFunction(() => window.__attnscope.state().generated, null, { timeout: 20_000 });
      const ms = Date.now() - started;
      await settled(page);
      const want = await model.generate(promptIds, { seed, maxNewTokens: 12, temperature: 1 });
      const ids = await state(page, () => window.__attnscope.state().ids);
      assert(ids.join() === Array.from(want.ids).join(), `page ${ids} vs Node ${Array.from(want.ids)}`);
      const grown = await state(page, () => window.__grown);
      assert(grown.ids.join() === ids.join(), `the last grown maps are of ${grown.ids}`);
      const d = worst(grown.attentions, model.run(ids).attentions);
      assert(d < 1e-5, `grown maps differ from a fresh run by ${d}`);
      console.log(`     12 tokens generated and shown in ${ms} ms (${((12 * 1000) / ms).toFixed(0)} tokens/s)`);
      assert((await page.inputValue('#seed')) === String(seed), 'seed not shown');
      await page.waitForFunction((s) => location.hash.includes(`seed=${s}`), seed);
      const linked = await context.newPage();
      await linked.goto(`${origin}${await state(page, () => location.hash)}`);
      await linked.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 60_000 });
      const restored = await linked.evaluate(() => [
        window.__attnscope.state().seed,
        document.getElementById('seed').value,
      ]);
      await linked.close();
      assert(restored.join() === `${seed},${seed}`, `the link restored seed ${restored}`);
    },
  );

  await check('llm: typing during generation keeps what it generated and stops it: no later token shows', async () => {
    await page.fill('#text', TEXT);
    await settled(page);
    await set(page, 'max-new', 2000);
    await record(page);
    await at(page, 2, 'type');
    await page.click('#generate');
    await page.waitForFunction(() => window.__acted !== undefined, null, { timeout: 20_000 });
    await page.focus('#text');
    await page.keyboard.press('End');
    await page.keyboard.type(' the dog', { delay: 15 });
    const typed = await page.inputValue('#text');
    const n = model.tokenize(typed).ids.length;
    await page.waitForFunction(
      (w) => window.__attnscope.state().result.ids.length === w && !window.__attnscope.state().generation,
      n,
      { timeout: 20_000 },
    );
    await settled(page);
    await page.waitForTimeout(300);
    const before = await state(page, () => window.__shown[window.__acted - 1]);
    // The runs since: of the kept generation's text, then of each keystroke's.
    const first = (await state(page, () => window.__actedText)).length;
    const runs = new Set(
      Array.from({ length: typed.length - first + 1 }, (_, k) =>
        Array.from(model.tokenize(typed.slice(0, first + k)).ids).join(),
      ),
    );
    runs.add(before.ids.join()); // the kept generation's own ids
    const shown = await state(page, () => window.__shown.slice(window.__acted));
    assert(
      shown.some((x) => x.origin === 'text'),
      'no run of the typed text shown',
    );
    for (const x of shown) {
      // The maps on screen at the keystroke may stay until the typed text's run arrives; no newer token shows.
      if (x.origin === 'generation') {
        assert(x.ids.join() === before.ids.join(), `a token arrived after typing: ${x.ids}`);
        continue;
      }
      assert(x.origin === 'text', `a ${x.origin} map was shown after typing`);
      // A run lags the keystrokes by a few: each shown run is of the box's text at one keystroke since the first.
      assert(
        runs.has(x.ids.join()),
        `shown ${x.ids}, the run of no text typed (the box held ${JSON.stringify(x.text)})`,
      );
    }
    assert((await page.inputValue('#text')) === typed, 'the text changed after typing');
    // The box held the generation as shown when the typing began, and nothing joined it since.
    const [atAction, grown] = await state(page, () => [window.__actedText, window.__shown.slice(0, window.__acted)]);
    assert(typed === `${atAction} and the dog`, `typed ${JSON.stringify(typed)} after ${JSON.stringify(atAction)}`);
    const decoded = grown
      .filter((x) => x.origin === 'generation')
      .map((x) => model.decode(x.ids, { skipSpecialTokens: true }).replace(/\r\n?/g, '\n'));
    assert(decoded.includes(atAction), `the box held ${JSON.stringify(atAction)}, no generation shown`);
  });

  await check('llm: a download that fails mid-generation leaves the previous model working', async () => {
    await page.fill('#hub-id', 'test/cut-short');
    await record(page);
    await at(page, 2, 'load');
    await page.click('#generate');
    await page.waitForFunction(() => window.__acted !== undefined, null, { timeout: 20_000 });
    await page.waitForFunction(() => document.getElementById('load-status').dataset.state !== 'loading', null, {
      timeout: 30_000,
    });
    const message = await page.textContent('#load-status');
    assert(message.includes('truncated') && message.endsWith('The previous model is still loaded.'), message);
    assert((await page.getAttribute('#model-name', 'data-architecture')) === 'LlamaForCausalLM', 'model replaced');
    await settled(page);
    await page.fill('#text', 'the mat');
    const want = Array.from(model.tokenize('the mat').ids).join();
    await page.waitForFunction((w) => window.__attnscope.state().result.ids.join() === w, want);
    await set(page, 'max-new', 3);
    await page.click('#generate');
    await page.waitForFunction(() => window.__attnscope.state().generated, null, { timeout: 20_000 });
    await settled(page);
    const ids = await state(page, () => window.__attnscope.state().ids);
    const node = await model.generate(model.tokenize('the mat').ids, { seed, maxNewTokens: 3 });
    assert(ids.join() === Array.from(node.ids).join(), `after the failed load: ${ids} vs ${Array.from(node.ids)}`);
  });

  await check(
    "llm: 2,048 tokens: a longer paste is cut at the model's limit with a notice; typing at the end reuses the rest",
    async () => {
      const sentence = 'the cat sat on the mat. ';
      const per = model.tokenize(sentence.repeat(10)).ids.length / 10;
      const long = sentence.repeat(Math.ceil(2100 / per));
      const total = model.tokenize(long).ids.length;
      await page.fill('#text', long);
      await page.waitForFunction(() => document.getElementById('status').textContent.includes('truncated'), null, {
        timeout: 60_000,
      });
      const status = await page.textContent('#status');
      assert(
        status.startsWith('2048 tokens · ') &&
          status.endsWith(`truncated: the model reads at most 2048 of ${total} tokens`),
        status,
      );
      const under = sentence.repeat(Math.floor(2000 / per)).trimEnd();
      await page.fill('#text', under);
      await page.waitForFunction(
        (n) => document.getElementById('status').textContent.startsWith(`${n} tokens`),
        model.tokenize(under).ids.length,
        { timeout: 60_000 },
      );
      await page.focus('#text');
      await page.keyboard.press('End');
      await page.keyboard.type(' the');
      const n = model.tokenize(`${under} the`).ids.length;
      await page.waitForFunction((w) => document.getElementById('status').textContent.startsWith(`${w} tokens`), n, {
        timeout: 60_000,
      });
      const typed = await page.textContent('#status');
      const reused = Number(/reused the first (\d+) tokens/.exec(typed)?.[1]);
      assert(reused >= n - 2, typed);
      console.log(`     ${typed}`);
      // The model's map of 2,000 tokens zooms about the pointer and pans, drawing only the cells in view.
      const fit = Number(await page.getAttribute('#map', 'data-cell'));
      const box = await page.locator('#map').boundingBox();
      const centre = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
      const before = (await page.evaluate(() => window.__attnscope.frames())).length;
      await page.mouse.move(centre.x, centre.y);
      for (let k = 0; k < 12; k++) await page.mouse.wheel(0, -240);
      await page.mouse.down();
      for (let k = 0; k < 20; k++) await page.mouse.move(centre.x - 6 * k, centre.y - 4 * k);
      await page.mouse.up();
      await page.waitForTimeout(100);
      const zoomed = Number(await page.getAttribute('#map', 'data-cell'));
      const drawn = Number(await page.getAttribute('#map', 'data-drawn-cells'));
      const draws = (await page.evaluate(() => window.__attnscope.frames())).slice(before);
      console.log(`     ${n}-token model map, draw per frame while zooming and panning: ${stats(draws, 16)}`);
      assert(zoomed > fit * 8 && drawn < (n * n) / 50, `zoom ${fit} → ${zoomed} px, ${drawn} cells drawn`);
      assert(draws.length > 10, `${draws.length} draws`);
      await page.screenshot({ path: join(shots, 'llm-1400-2048.png') });
    },
  );
  await load(page, 'test/planted-llama', 'LlamaForCausalLM');
}
