// The workspace itself, in the production page: every pane on a 1400 × 900 desktop screen
// (no page scroll) and on a 390 × 844 phone (stacked, no sideways scroll), each screenshotted;
// no pane blank before it has run; the first-run hints; the About panel; split panes by mouse
// and keyboard; the keyboard over layers, heads and tokens; a tap on a touch phone's map; the URL keeping the state; and
// 2,048 tokens zoomed and panned, with the frame times measured (requestAnimationFrame) and reported.
import { join } from 'node:path';

import { assert, check, open, serve, stats } from './harness.mjs';

const MAIN = ['lines', 'math'];
const TOOLS = ['heads', 'across', 'compare', 'intervene', 'ablate', 'cost'];
const state = (page) => page.evaluate(() => window.__attnscope.state());

/** Fills every tool pane that waits for an action, so that its screenshot shows a result. */
async function runEveryTool(page) {
  for (const [pane, button, ready] of [
    ['compare', '#compare-run', '#compare-map[data-pairs]'],
    ['intervene', '#intervene-run', '#intervene-change[data-change]'],
    ['ablate', '#ablate-run', '#ablate-note[data-mean]'],
    ['cost', '#measure', '#cost[data-points]'],
  ]) {
    await open(page, pane);
    await page.click(button);
    await page.waitForSelector(ready, { timeout: 60_000 });
  }
  await page.check('input[name=view][value=rollout]');
  await page.waitForSelector('#bars[data-values]', { timeout: 15_000 });
}

/**
 * Opens each pane in turn and screenshots what the screen shows (`name-pane.png`): on a phone,
 * scrolled to the pane's dock, as a person would see it there.
 */
async function everyPane(page, shots, name) {
  for (const pane of [...MAIN, ...TOOLS]) {
    await open(page, pane);
    await page.$eval(`#pane-${pane}`, (el) => el.closest('.dock').scrollIntoView());
    await page.waitForTimeout(150);
    const box = await page.locator(`#pane-${pane}`).boundingBox();
    assert(box && box.width > 100 && box.height > 100, `${name}: pane ${pane} is ${JSON.stringify(box)}`);
    await page.screenshot({ path: join(shots, `${name}-${pane}.png`) });
  }
}

export async function workspaceChecks(browser, site, shots) {
  const server = await serve(true, site);
  const origin = `http://127.0.0.1:${server.address().port}/`;
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  try {
    await page.goto(origin);
    await page.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 60_000 });

    await check('workspace: a pane that has not run says what it will show and offers its action', async () => {
      for (const pane of ['across', 'compare', 'intervene', 'ablate', 'cost']) {
        await open(page, pane);
        const empty = page.locator(`#pane-${pane} .empty`);
        assert(await empty.isVisible(), `${pane}: no empty state`);
        const said = (await empty.textContent()).trim();
        assert(said.length > 60, `${pane} says only: ${said}`);
        const action = page.locator(`#pane-${pane} button.primary`);
        assert((await action.count()) === 1 && (await action.isEnabled()), `${pane}: no single action`);
        assert((await page.locator(`#pane-${pane} canvas:visible`).count()) === 0, `${pane}: a blank canvas shows`);
      }
      await page.screenshot({ path: join(shots, 'workspace-1400-empty-cost.png') });
    });

    await check('workspace: the first-run hints name three things to try, and stay dismissed', async () => {
      assert(await page.locator('#hints').isVisible(), 'no hints on the first visit');
      assert((await page.locator('#hints li').count()) === 3, 'not three hints');
      await page.click('#hints-close');
      await page.reload();
      await page.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 60_000 });
      assert(!(await page.locator('#hints').isVisible()), 'the hints came back after a reload');
    });

    await check(
      'workspace: the About panel says in three sentences what the page shows, and links the docs',
      async () => {
        const docs = ['README.md', 'api.md', 'models.md', 'analysis.md', 'performance.md', 'architecture.md'].map(
          (f) => `https://github.com/attnscope/attnscope/blob/main/${f === 'README.md' ? f : `docs/${f}`}`,
        );
        for (const [width, height] of [
          [1400, 900],
          [390, 844],
        ]) {
          await page.setViewportSize({ width, height });
          await page.waitForTimeout(200);
          assert(!(await page.locator('#about').isVisible()), `${width}: the panel shows before it is opened`);
          await page.locator('#about-open').scrollIntoViewIfNeeded();
          await page.click('#about-open');
          const text = page.locator('#about #about-text');
          assert(await text.isVisible(), `${width}: the panel did not open`);
          const said = (await text.innerText()).trim().replace(/\s+/g, ' ');
          const sentences = said.split(/(?<=\.) /);
          assert(sentences.length === 3, `${width}: ${sentences.length} sentences: ${said}`);
          for (const word of ['attention head', 'WebAssembly', 'PyTorch', 'TensorFlow.js', 'llama.cpp'])
            assert(said.includes(word), `${width}: the panel does not say ${word}: ${said}`);
          const hrefs = await page.$$eval('#about a', (as) => as.map((a) => a.href));
          assert(
            docs.every((d) => hrefs.includes(d)) && hrefs.every((h) => docs.includes(h)),
            `${width}: links ${hrefs.join(' ')}`,
          );
          // Each link can be reached on screen: inside the viewport once scrolled to, within the panel's width.
          for (const href of docs) {
            const link = page.locator(`#about-links a[href="${href}"]`);
            await link.scrollIntoViewIfNeeded();
            const box = await link.boundingBox();
            assert(
              box && box.x >= 0 && box.x + box.width <= width && box.y >= 0 && box.y + box.height <= height,
              `${width}: ${href} is at ${JSON.stringify(box)}`,
            );
          }
          const panel = await page.locator('#about').boundingBox();
          const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
          assert(panel.x >= 0 && panel.x + panel.width <= width, `${width}: the panel is ${JSON.stringify(panel)}`);
          assert(scrollWidth <= width, `${width}: the page is ${scrollWidth} px wide`);
          await page.locator('#about-text').scrollIntoViewIfNeeded();
          await page.screenshot({ path: join(shots, `workspace-${width}-about.png`) });
          // Closed by its button at one size and by Escape at the other; focus goes back to the opener.
          if (width === 1400) await page.click('#about-close');
          else await page.keyboard.press('Escape');
          assert(!(await page.locator('#about').isVisible()), `${width}: the panel did not close`);
          const focused = await page.evaluate(() => document.activeElement?.id);
          assert(focused === 'about-open', `${width}: focus went to ${focused}`);
        }
        await page.setViewportSize({ width: 1400, height: 900 });
        await page.waitForTimeout(300);
      },
    );

    await check('workspace: 1400 × 900 fills the screen, no page scroll; every pane screenshotted', async () => {
      await runEveryTool(page);
      const { scrollWidth, scrollHeight } = await page.evaluate(() => {
        const { scrollWidth, scrollHeight } = document.documentElement;
        return { scrollWidth, scrollHeight };
      });
      assert(scrollWidth <= 1400 && scrollHeight <= 900, `the page is ${scrollWidth} × ${scrollHeight}`);
      for (const id of ['#map', '#grid', '#text', '#tokens', '#tools-dock', '#main-dock']) {
        const box = await page.locator(id).boundingBox();
        assert(box && box.y >= 0 && box.y + Math.min(box.height, 40) <= 900, `${id} is off the screen`);
      }
      await everyPane(page, shots, 'workspace-1400');
    });

    await check(
      'workspace: 390 × 844 stacks the panes, nothing scrolls sideways; every pane screenshotted',
      async () => {
        await page.setViewportSize({ width: 390, height: 844 });
        await page.waitForTimeout(200);
        await everyPane(page, shots, 'workspace-390');
        const width = await page.evaluate(() => document.documentElement.scrollWidth);
        assert(width <= 390, `the page is ${width} px wide at a 390 px viewport`);
        const [side, map] = [await page.locator('#side').boundingBox(), await page.locator('#map-pane').boundingBox()];
        assert(map.y >= side.y + side.height - 1, 'the panes do not stack');
        // The header: the share link keeps room to be read, the About button stays on the screen.
        const [link, about] = [
          await page.locator('#share-link').boundingBox(),
          await page.locator('#about-open').boundingBox(),
        ];
        assert(link.width >= 200, `the share link is ${link.width} px wide`);
        assert(about.x + about.width <= 390, `the About button ends at ${about.x + about.width} px`);
        await page.setViewportSize({ width: 1400, height: 900 });
        await page.waitForTimeout(300);
      },
    );

    await check('workspace: split panes resize by mouse and by keyboard', async () => {
      const gutter = page.locator('#top > .gutter'); // between the map and the main dock
      const before = (await page.locator('#map-pane').boundingBox()).width;
      const g = await gutter.boundingBox();
      await page.mouse.move(g.x + g.width / 2, g.y + g.height / 2);
      await page.mouse.down();
      await page.mouse.move(g.x - 80, g.y + g.height / 2, { steps: 5 });
      await page.mouse.up();
      const dragged = (await page.locator('#map-pane').boundingBox()).width;
      await gutter.focus();
      await page.keyboard.press('ArrowRight');
      const keyed = (await page.locator('#map-pane').boundingBox()).width;
      assert(dragged < before - 40 && keyed > dragged + 5, `map pane ${before} → ${dragged} → ${keyed} px`);
    });

    await check('workspace: the keyboard walks layers, heads and tokens', async () => {
      await page.click('#grid', { position: { x: 2, y: 2 } });
      await page.focus('#grid');
      const from = await state(page);
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('ArrowRight');
      const moved = await state(page);
      const [layers, heads] = moved.result.shape;
      assert(
        moved.layer === Math.min(from.layer + 1, layers - 1) && moved.head === Math.min(from.head + 1, heads - 1),
        `layer ${from.layer} → ${moved.layer}, head ${from.head} → ${moved.head}`,
      );
      await page.focus('#tokens');
      await page.keyboard.press('Home');
      await page.keyboard.press('ArrowRight');
      assert((await state(page)).token === 1, 'tokens: ArrowRight did not move to the second token');
      const current = await page.$eval('#tokens [aria-current=true]', (li) => li.textContent);
      assert(current === moved.result.tokens[1], `the marked chip is ${current}`);
      await page.keyboard.press('Escape');
      await open(page, 'math');
      await page.focus('#tab-math');
      await page.keyboard.press('ArrowLeft');
      assert((await state(page)).main === 'lines', 'tabs: ArrowLeft did not open the head view');
    });

    await check('workspace: the URL keeps the text, layer, head, view and open panes', async () => {
      await page.fill('#text', 'Panes are remembered too.');
      await page.selectOption('#layer', { value: '1' });
      await page.selectOption('#head', { value: '2' });
      await page.check('input[name=view][value=head]');
      await open(page, 'math');
      await open(page, 'compare');
      await page.waitForFunction(() => location.hash.includes('tools=compare') && location.hash.includes('head=3'));
      await page.reload();
      await page.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 60_000 });
      const s = await state(page);
      const got = [s.text, s.layer, s.head, s.view, s.main, s.tools].join('|');
      assert(got === 'Panes are remembered too.|1|2|head|math|compare', got);
      assert((await page.getAttribute('#tab-compare', 'aria-selected')) === 'true', 'the compare tab is not open');
    });

    await check(
      'workspace: 2,048 tokens (parameter-free): the map zooms and pans, drawing only what is in view',
      async () => {
        await page.check('input[value="parameter-free"]');
        await page.fill('#text', Array.from({ length: 2048 }, (_, i) => `w${i}`).join(' '));
        await page.waitForFunction(
          () => document.getElementById('status').textContent.startsWith('2048 tokens'),
          null,
          {
            timeout: 60_000,
          },
        );
        // Timed alone: the open math pane's steps for this run have arrived and been drawn.
        await page.waitForFunction(() => {
          const s = window.__attnscope.state();
          return s.main !== 'math' || s.math?.run === s.result.run;
        });
        await page.waitForTimeout(300);
        const fit = Number(await page.getAttribute('#map', 'data-cell'));
        const map = await page.locator('#map').boundingBox();
        const centre = { x: map.x + map.width / 2, y: map.y + map.height / 2 };
        // Frames as the browser paints them, from requestAnimationFrame's timestamps.
        await page.evaluate(() => {
          window.__frames = [];
          window.__recording = true;
          const tick = (t) => {
            window.__frames.push(t);
            if (window.__recording) requestAnimationFrame(tick);
          };
          requestAnimationFrame(tick);
        });
        const drawsBefore = (await page.evaluate(() => window.__attnscope.frames())).length;
        await page.mouse.move(centre.x, centre.y);
        for (let k = 0; k < 12; k++) await page.mouse.wheel(0, -240); // zoom in about the pointer
        const zoomed = Number(await page.getAttribute('#map', 'data-cell'));
        const drawn = Number(await page.getAttribute('#map', 'data-drawn-cells'));
        await page.mouse.down();
        for (let k = 0; k < 40; k++) await page.mouse.move(centre.x - 6 * k, centre.y - 4 * k);
        await page.mouse.up();
        await page.focus('#map');
        for (const key of ['Shift+ArrowRight', 'Shift+ArrowDown', '-', '-', '+', 'Shift+ArrowLeft', '0'])
          await page.keyboard.press(key);
        await page.waitForTimeout(100);
        const stamps = await page.evaluate(() => {
          window.__recording = false;
          return window.__frames;
        });
        const draws = (await page.evaluate(() => window.__attnscope.frames())).slice(drawsBefore);
        const intervals = stamps.slice(1).map((t, k) => t - stamps[k]);
        // A frame's own work is the map's draw; the intervals say whether a frame was dropped (60 Hz: 16.7 ms).
        console.log(`     map draw per frame (${draws.length} frames): ${stats(draws, 16)}`);
        console.log(`     requestAnimationFrame intervals (${intervals.length}): ${stats(intervals, 25)}`);
        assert(zoomed > fit * 8, `zoom: a cell went from ${fit} px to ${zoomed} px`);
        assert(drawn < (2048 * 2048) / 50, `zoomed in, the map drew ${drawn} of ${2048 * 2048} cells`);
        assert(draws.length > 20 && intervals.length > 20, `${draws.length} draws, ${intervals.length} frames`);
        // Zoomed in again, the hovered cell is named in full, row and column.
        await page.mouse.move(centre.x, centre.y);
        for (let k = 0; k < 8; k++) await page.mouse.wheel(0, -240);
        await page.mouse.move(centre.x + 3, centre.y + 3);
        const [row, col] = [await page.getAttribute('#cell', 'data-row'), await page.getAttribute('#cell', 'data-col')];
        const readout = await page.textContent('#cell');
        assert(Number(row) > 100 && readout.startsWith(`“w${row}” → “w${col}”: `), `${row}, ${col}: ${readout}`);
        await page.screenshot({ path: join(shots, 'workspace-1400-2048-zoomed.png') });
        await page.check('input[value="model"]');
      },
    );

    await check('workspace: loading the embedded default shows its download, the files summed', async () => {
      await page.evaluate(() => {
        window.__loading = [];
        const status = document.getElementById('load-status');
        const bar = document.getElementById('progress');
        new MutationObserver(() =>
          window.__loading.push({ text: status.textContent, bar: bar.hidden ? null : bar.value }),
        ).observe(status, { childList: true, characterData: true, subtree: true });
      });
      await page.click('#load-default');
      await page.waitForFunction(() => document.getElementById('load-status').textContent === 'Loaded.', null, {
        timeout: 60_000,
      });
      const seen = await page.evaluate(() => window.__loading);
      const shown = seen.filter((s) => /^The embedded default: [\d.]+ MB( of [\d.]+ MB)?$/.test(s.text));
      assert(shown.length > 0, `no progress: ${JSON.stringify(seen)}`);
      const whole = shown.filter((s) => s.text.endsWith(' of 26.8 MB') && s.bar !== null);
      assert(whole.length > 0, `no total of 26.8 MB with a bar: ${JSON.stringify(shown.slice(-3))}`);
      const bars = shown.map((s) => s.bar ?? 0);
      assert(
        bars.every((b, k) => k === 0 || b >= bars[k - 1]),
        `the bar went back: ${bars.map((b) => b.toFixed(2))}`,
      );
    });

    await check('workspace: on a touch phone, tapping a map cell reads its weight out', async () => {
      const context = await browser.newContext({
        viewport: { width: 390, height: 844 },
        hasTouch: true,
        isMobile: true,
      });
      const phone = await context.newPage();
      try {
        await phone.goto(origin);
        await phone.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 60_000 });
        await phone.locator('#map').scrollIntoViewIfNeeded();
        const box = await phone.locator('#map').boundingBox();
        const at = await phone.$eval('#map', (c) => ({ x0: +c.dataset.x0, y0: +c.dataset.y0, cell: +c.dataset.cell }));
        const [i, j] = [2, 1];
        await phone.touchscreen.tap(box.x + at.x0 + (j + 0.5) * at.cell, box.y + at.y0 + (i + 0.5) * at.cell);
        await phone.waitForFunction(
          ([i, j]) => {
            const c = document.getElementById('cell').dataset;
            return c.row === String(i) && c.col === String(j);
          },
          [i, j],
          { timeout: 5_000 },
        );
        const s = await phone.evaluate(() => window.__attnscope.state());
        const [, heads, n] = s.result.shape;
        const want = s.result.attentions[((s.layer * heads + s.head) * n + i) * n + j];
        const weight = Number(await phone.getAttribute('#cell', 'data-weight'));
        assert(Math.abs(weight - want) < 1e-6, `tapped (${i}, ${j}): ${weight}, the map holds ${want}`);
      } finally {
        await context.close();
      }
    });

    await check('workspace: no page errors', async () => assert(errors.length === 0, errors.join('\n')));
  } finally {
    await page.close();
    server.close();
  }
}
