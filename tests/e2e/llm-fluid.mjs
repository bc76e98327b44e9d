// What a person with a long text or a long generation needs of the page (llm.mjs runs these after the others):
// nothing they wrote is lost (the browser's undo takes back each edit the page makes; a token is not added after
// a cut), a generation grows the maps in place (its chips wait below the list's view), an error about a text goes
// with it, the header says the page's own limit, "0–max" brightens a causal map, the heads table exports and
// scrolls sideways on a phone with a cue, the logit lens's PNG is as wide as its positions, and a link made with a
// model from files says so where it opens instead of showing another model. The Long Tasks figures are a bench
// (npm run bench -- page), not a test.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { assert, check, loadFiles } from './harness.mjs';
import { deep, planted } from './llm-hub.mjs';
import { barsAt, load, set, settled, state, TEXT } from './llm-page.mjs';

/** Clicks a button that downloads, and returns the file's name and bytes. */
async function downloaded(page, selector) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  return { name: download.suggestedFilename(), bytes: readFileSync(await download.path()) };
}

/** A PNG's width and height, from its IHDR chunk. */
const pngSize = (bytes) => ({ width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) });

/** Waits until the page shows a run of `n` tokens of its text, with nothing else asked. */
const shows = (page, n) =>
  page.waitForFunction(
    (n) => window.__attnscope.answered() && window.__attnscope.state().result?.tokens.length === n,
    n,
    { timeout: 60_000 },
  );

export async function fluidChecks({ page, context, engine, model, origin, shots }) {
  const promptIds = Array.from(model.tokenize(TEXT).ids);

  await check("llm: the browser's undo takes back an added token and a generation, one edit each", async () => {
    await load(page, 'test/planted-llama', 'LlamaForCausalLM');
    await page.click('#tab-next');
    await page.fill('#text', TEXT);
    await settled(page);
    const [first] = await barsAt(page);
    await page.click(`#candidates button[data-id="${first.id}"]`);
    await page.waitForFunction((n) => window.__attnscope.state().result.ids.length === n, promptIds.length + 1);
    await settled(page);
    const added = await page.inputValue('#text');
    assert(added !== TEXT && added.startsWith(TEXT), `after adding: ${JSON.stringify(added)}`);
    await page.focus('#text');
    await page.keyboard.press('Control+z');
    assert((await page.inputValue('#text')) === TEXT, `undo left ${JSON.stringify(await page.inputValue('#text'))}`);
    await shows(page, promptIds.length);
    // A generation: the box gets it when it ends, as one edit.
    await set(page, 'max-new', 6);
    await page.click('#generate');
    await page.waitForFunction(() => window.__attnscope.state().generated, null, { timeout: 30_000 });
    await settled(page);
    const generated = await page.inputValue('#text');
    assert(generated.startsWith(TEXT) && generated.length > TEXT.length, JSON.stringify(generated));
    await page.focus('#text');
    await page.keyboard.press('Control+z');
    assert((await page.inputValue('#text')) === TEXT, `undo left ${JSON.stringify(await page.inputValue('#text'))}`);
    await shows(page, promptIds.length);
    await page.keyboard.press('Control+Shift+z');
    assert((await page.inputValue('#text')) === generated, 'redo did not bring the generation back');
  });

  await check('llm: a generation grows the maps a row per token in place, and streams under the text', async () => {
    await page.fill('#text', TEXT);
    await settled(page);
    await set(page, 'max-new', 40);
    // Every state the map shows during the generation: the run's blocks stay the same size, the rows grow.
    await page.evaluate(() => {
      window.__growth = [];
      new MutationObserver(() => {
        const r = window.__attnscope.state().result;
        if (r.origin !== 'generation') return;
        window.__growth.push({
          n: r.shape[2],
          base: r.attentions.length,
          grown: r.grown.map((g) => g.length),
          streamed: document.getElementById('continuation-text').textContent,
          box: document.getElementById('text').value,
        });
      }).observe(document.getElementById('map'), { attributeFilter: ['data-tokens'] });
    });
    await page.click('#generate');
    await page.waitForFunction(() => window.__attnscope.state().generated, null, { timeout: 30_000 });
    const growth = await state(page, () => window.__growth);
    const [layers, heads] = await state(page, () => window.__attnscope.state().result.shape);
    const n0 = promptIds.length;
    assert(growth.length > 0, 'no grown map was shown');
    for (const g of growth) {
      assert(g.base === layers * heads * n0 * n0, `the run's blocks hold ${g.base} values, not ${n0}² per map`);
      assert(g.grown.length === g.n - n0, `${g.grown.length} grown rows for ${g.n} tokens`);
      g.grown.forEach((length, k) =>
        assert(length === layers * heads * (n0 + k + 1), `row ${n0 + k}: ${length} values`),
      );
      assert(g.box === TEXT, `the box changed while generating: ${JSON.stringify(g.box)}`);
    }
    assert(growth.at(-1).streamed.length > 0, 'nothing streamed under the box');
    await settled(page);
  });

  await check(
    "llm: a long generation keeps the shown layer's rows, and folds every layer's into the thumbnails",
    async () => {
      await load(page, 'test/deep-llama', 'LlamaForCausalLM');
      await page.fill('#text', 'the cat');
      // The run of this text, not the one the box held before (settled alone would take either).
      const tokenizer = await engine.loadModel({ files: deep.files });
      const prompt = Array.from(tokenizer.tokenize('the cat').ids);
      tokenizer.dispose();
      await page.waitForFunction(
        (ids) => {
          const s = window.__attnscope.state();
          return !s.generation && s.result?.origin === 'text' && s.result.ids.join() === ids;
        },
        prompt.join(),
        { timeout: 30_000 },
      );
      // Every layer's new rows of 600 tokens would take 4 · 12 · 8 · (600² − n²) / 2 bytes, past the page's 64 MB.
      await page.click('#tab-next');
      await set(page, 'max-new', 600);
      await page.fill('#temperature', '0');
      await page.click('#generate');
      // Mid-generation, in one task: the ids shown, the layers held, and every thumbnail.
      const mid = await (
        await page.waitForFunction(
          () => {
            const s = window.__attnscope.state();
            if (!s.generation || !(s.result?.grown?.length >= 150)) return null;
            return { ids: s.result.ids, held: s.result.mapLayers, layer: s.layer, ...window.__attnscope.thumbnails() };
          },
          null,
          { timeout: 120_000 },
        )
      ).jsonValue();
      await page.waitForFunction(() => window.__attnscope.state().generated, null, { timeout: 120_000 });
      await settled(page);
      // The atlas the grid draws from, painted a row and a column of blocks at a time as the maps grew, shows each
      // block in its own colour, once the last rows are folded in (a run after the generation may fold them a few
      // milliseconds at a time) and painted.
      await page.waitForFunction(() => !window.__attnscope.thumbnails().folding, null, { timeout: 30_000 });
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
      const { stale } = await state(page, () => window.__attnscope.thumbnails());
      assert(stale === 0, `${stale} thumbnail blocks shown in another colour than their own`);
      assert(mid.held.join() === String(mid.layer), `held ${mid.held} while generating, not the shown layer`);
      assert(mid.ids.slice(0, prompt.length).join() === prompt.join(), 'the prompt changed');
      // The thumbnails against the engine's run of the same ids, max-pooled as the page pools them.
      const deepModel = await engine.loadModel({ files: deep.files });
      try {
        const r = deepModel.run(Int32Array.from(mid.ids));
        const [layers, heads, n] = r.shape;
        const wide = Math.ceil(n / mid.block);
        assert(mid.block === 2 ** Math.ceil(Math.log2(n / 64)), `blocks of ${mid.block} for ${n} tokens`);
        assert(mid.blocks.length === layers * heads, `${mid.blocks.length} thumbnails`);
        let worst = 0;
        for (let k = 0; k < layers * heads; k++) {
          assert(mid.blocks[k], `layer ${Math.floor(k / heads) + 1} head ${(k % heads) + 1}: no thumbnail`);
          // Each block equals the largest weight it covers, so no weight is above its block either.
          const pooled = new Float32Array(wide * wide);
          for (let i = 0; i < n; i++)
            for (let j = 0; j <= i; j++) {
              const at = Math.floor(i / mid.block) * wide + Math.floor(j / mid.block);
              pooled[at] = Math.max(pooled[at], r.attentions[(k * n + i) * n + j]);
            }
          for (let b = 0; b < wide * wide; b++) worst = Math.max(worst, Math.abs(pooled[b] - mid.blocks[k][b]));
        }
        assert(worst < 1e-5, `a thumbnail differs from the engine's pooled map by ${worst}`);
      } finally {
        deepModel.dispose();
      }
      await load(page, 'test/planted-llama', 'LlamaForCausalLM');
    },
  );

  await check("llm: a generation's chips wait below the list's view, and come when it is scrolled there", async () => {
    await load(page, 'test/planted-endless', 'LlamaForCausalLM'); // no end-of-text token: it runs its length
    const prompt = `${TEXT} `.repeat(10).trimEnd(); // chips enough to fill the list's view
    const n0 = model.tokenize(prompt).ids.length;
    await page.fill('#text', prompt);
    await shows(page, n0);
    await settled(page);
    const view = await page.$eval('#tokens', (list) => [list.scrollHeight, list.clientHeight, list.scrollTop]);
    assert(view[0] > view[1] && view[2] === 0, `the chips do not fill the list's view: ${view}`);
    // Chips and tokens at every map the page shows while generating.
    const generate = async (scroll) => {
      await page.evaluate((scroll) => {
        window.__chips = [];
        const list = document.getElementById('tokens');
        if (scroll) list.scrollTop = list.scrollHeight;
        // Chips added in each task, to see that the held-back ones come a frame's worth at a time.
        window.__added = [];
        window.__chipRecorder?.disconnect();
        window.__chipRecorder = new MutationObserver((records) =>
          window.__added.push(records.reduce((sum, r) => sum + r.addedNodes.length, 0)),
        );
        window.__chipRecorder.observe(list, { childList: true });
        new MutationObserver(() => {
          const s = window.__attnscope.state();
          if (s.generation) window.__chips.push([list.children.length, s.result.tokens.length]);
        }).observe(document.getElementById('map'), { attributeFilter: ['data-tokens'] });
      }, scroll);
      await page.click('#generate');
      await page.waitForFunction(() => window.__attnscope.state().generated, null, { timeout: 120_000 });
      await settled(page);
      // The chips the generation held back come a frame's worth at a time (CHIPS_PER_FRAME, views/tokens.ts).
      const all = () =>
        document.querySelectorAll('#tokens li').length === window.__attnscope.state().result.tokens.length;
      await page.waitForFunction(all, null, { timeout: 10_000 }).catch(() => {});
      const [chips, tokens] = await state(page, () => [
        document.querySelectorAll('#tokens li').length,
        window.__attnscope.state().result.tokens.length,
      ]);
      assert(chips === tokens, `${chips} chips for the ${tokens} tokens after the generation`);
      return state(page, () => window.__chips);
    };
    await page.click('#tab-next');
    await set(page, 'max-new', 300);
    const below = await generate(false);
    assert(below.length > 0 && below.at(-1)[1] > n0, `no generated map shown: ${JSON.stringify(below)}`);
    assert(
      below.every(([chips]) => chips === n0),
      `chips made below the list's view while generating: ${JSON.stringify(below)}`,
    );
    // The 300 held back come at the end, at most 256 a frame: not one layout of them all.
    const added = await state(page, () => window.__added);
    assert(
      added.length >= 2 && Math.max(...added) <= 256 && added.reduce((a, b) => a + b, 0) >= 300,
      `chips added at the generation's end, by task: ${JSON.stringify(added)}`,
    );
    // Scrolled to the end, the last chip is in view: the chips follow the tokens.
    await set(page, 'max-new', 300);
    const followed = await generate(true);
    const [chips, tokens] = followed.at(-1);
    assert(tokens > n0 + 300 && chips > n0 + 300, `at the end of the list: ${JSON.stringify(followed)}`);
  });

  await check("llm: Generate on a text too long for every layer's maps grows the shown layer's", async () => {
    await load(page, 'test/deep-llama', 'LlamaForCausalLM');
    const sentence = 'the cat sat on the mat. ';
    const long = sentence.repeat(240).trimEnd(); // about 1,700 tokens: past every layer's maps of this model
    await page.fill('#text', long);
    await page.waitForFunction(
      () => window.__attnscope.answered() && window.__attnscope.state().result?.mapLayers.length === 1,
      null,
      { timeout: 120_000 },
    );
    await settled(page);
    const n = await state(page, () => window.__attnscope.state().result.tokens.length);
    await page.click('#tab-next');
    await set(page, 'max-new', 5);
    await page.click('#generate');
    await page.waitForFunction(() => window.__attnscope.state().generated, null, { timeout: 120_000 });
    await settled(page);
    const after = await state(page, () => {
      const s = window.__attnscope.state();
      return { n: s.result.tokens.length, held: s.result.mapLayers, reason: s.generated.stopReason, layer: s.layer };
    });
    assert(after.n === n + 5 && after.reason === 'maxNewTokens', JSON.stringify(after));
    assert(after.held.join() === String(after.layer), JSON.stringify(after));
    await load(page, 'test/planted-llama', 'LlamaForCausalLM');
  });

  await check('llm: past the cut, a candidate is refused and nothing goes; the error goes with the text', async () => {
    const sentence = 'the cat sat on the mat. ';
    const per = model.tokenize(sentence.repeat(10)).ids.length / 10;
    const long = sentence.repeat(Math.ceil(2200 / per));
    await page.fill('#text', long);
    await page.waitForFunction(() => document.getElementById('status').textContent.includes('truncated'), null, {
      timeout: 60_000,
    });
    await settled(page);
    const [first] = await barsAt(page);
    await page.click(`#candidates button[data-id="${first.id}"]`);
    await page.waitForFunction(() => document.getElementById('generate-note').dataset.state === 'error');
    const refused = await page.textContent('#generate-note');
    assert(refused.startsWith('Add: the text is cut at 2048 of its'), refused);
    assert((await page.inputValue('#text')) === long, 'the text changed');
    await page.click('#generate');
    const generate = await page.textContent('#generate-note');
    assert(generate.startsWith('Generate: the text is cut at 2048'), generate);
    assert((await page.inputValue('#text')) === long, 'the text changed');
    // A shorter text: the notice was about the long one, and goes.
    await page.fill('#text', TEXT);
    await settled(page);
    await page.waitForFunction(() => document.getElementById('generate-note').dataset.state === 'ok');
    const after = await page.textContent('#generate-note');
    assert(!after.includes('cut at'), `stale: ${after}`);
  });

  await check("llm: the header says the page's limit, where the model reads more", async () => {
    await load(page, 'test/long-llama', 'LlamaForCausalLM');
    const name = await page.textContent('#model-name');
    assert(name.endsWith('up to 2048 tokens'), name);
    const title = await page.getAttribute('#model-name', 'title');
    assert(title.startsWith('The model reads up to 4096 tokens; this page runs up to 2048'), title);
  });

  // On the random checkpoint just loaded, whose heads spread their weight (the planted one's are all peaks).
  await check(
    'llm: "0–max" brightens a causal map: the top of its scale leaves the first key and the diagonal out',
    async () => {
      await page.fill('#text', 'the cat sat on the mat. '.repeat(8));
      await settled(page);
      await page.click('#tab-lines');
      await page.waitForFunction(() => document.getElementById('map').dataset.top === '1');
      const before = await page.$eval('#map', (c) => c.toDataURL());
      await page.click('#stretch');
      await page.waitForFunction(() => Number(document.getElementById('map').dataset.top) < 1);
      const top = Number(await page.getAttribute('#map', 'data-top'));
      const after = await page.$eval('#map', (c) => c.toDataURL());
      assert(top > 0 && top < 0.9, `the scale's top is ${top}`);
      assert(after !== before, 'the map looks the same');
      await page.screenshot({ path: join(shots, 'llm-1400-stretched.png') });
      await page.click('#stretch');
      await page.waitForFunction(() => document.getElementById('map').dataset.top === '1');
      await load(page, 'test/planted-llama', 'LlamaForCausalLM');
    },
  );

  await check('llm: the heads table exports as CSV, every head and measure', async () => {
    await page.click('#tab-heads');
    const { name, bytes } = await downloaded(page, '#heads-csv');
    assert(name === 'attnscope-heads.csv', name);
    const lines = bytes.toString().trim().split('\n');
    const summaries = await state(page, () => window.__attnscope.state().result.summaries);
    assert(
      lines[0] === 'layer,head,entropy,distance,previous,self,special,punctuation,sink,induction,duplicate',
      lines[0],
    );
    assert(lines.length === summaries.length + 1, `${lines.length - 1} rows for ${summaries.length} heads`);
    const [layer, head, entropy] = lines[1].split(',').map(Number);
    const s = summaries[0];
    assert(layer === s.layer + 1 && head === s.head + 1 && Math.abs(entropy - s.entropy) < 1e-12, lines[1]);
  });

  await check("llm: the logit lens's PNG is as wide as its positions", async () => {
    await page.fill('#text', 'the cat');
    await settled(page);
    await page.click('#tab-lens');
    await page.waitForFunction(() => window.__attnscope.state().result.logitLens, null, { timeout: 20_000 });
    const n = await state(page, () => window.__attnscope.state().result.tokens.length);
    const layers = await state(page, () => window.__attnscope.state().result.layers);
    const { bytes } = await downloaded(page, 'button[data-export="lens"][data-format="png"]');
    const size = pngSize(bytes);
    const pane = await page.$eval('#lens-scroll', (e) => e.clientWidth);
    assert(size.width === 40 + n * 72 && size.width < pane, `${size.width} px wide for ${n} positions in ${pane} px`);
    assert(size.height === 26 + layers * 22 + 34, `${size.height} px high for ${layers} layers`);
  });

  await check('llm: at 390 px the heads table and the tab strips scroll sideways, and show that they do', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.click('#tab-heads');
    const table = page.locator('#pane-heads .scroll');
    await table.scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelector('#pane-heads .scroll').dataset.more === 'right');
    const wide = await table.evaluate((e) => [e.scrollWidth, e.clientWidth]);
    assert(wide[0] > wide[1], `the table is ${wide[0]} px in ${wide[1]} px`);
    await page.screenshot({ path: join(shots, 'llm-390-heads-cue.png') });
    await table.evaluate((e) => (e.scrollLeft = e.scrollWidth));
    await page.waitForFunction(() => document.querySelector('#pane-heads .scroll').dataset.more === 'left');
    const last = await page.$eval('#summaries thead th:last-child', (th) => th.getBoundingClientRect().right);
    assert(last <= 390, `the Duplicate column ends at ${last} px`);
    const tabs = await page.$eval('#tools-dock .tabs', (e) => [e.dataset.more, e.scrollWidth > e.clientWidth]);
    assert(tabs[0] === 'right' && tabs[1], `the tools' tabs: ${tabs}`);
    await page.setViewportSize({ width: 1400, height: 900 });
  });

  await check('llm: a link made with a model from files says so where it opens, and shows no other model', async () => {
    await loadFiles(page, planted.files);
    await page.waitForFunction(() => document.getElementById('load-status').textContent === 'Loaded.');
    await page.fill('#text', TEXT);
    await settled(page);
    await page.waitForFunction(() => location.hash.includes('model=files'));
    assert(await page.isVisible('#share-note'), 'the share box does not say the files stay behind');
    const hash = await state(page, () => location.hash);
    const linked = await context.newPage();
    try {
      await linked.goto(`${origin}${hash}`);
      await linked.waitForFunction(() => document.getElementById('load-status').dataset.state === 'waiting', null, {
        timeout: 60_000,
      });
      const said = await linked.textContent('#load-status');
      assert(said.startsWith('This link was made with a model loaded from files'), said);
      const header = await linked.textContent('#model-name');
      assert(header.includes('loaded from files'), header);
      await linked.waitForTimeout(1000);
      assert((await linked.evaluate(() => window.__attnscope.state().result)) === null, 'a run was shown');
      assert((await linked.inputValue('#text')) === TEXT, 'the text did not come with the link');
      await linked.screenshot({ path: join(shots, 'llm-1400-files-link.png') });
      // The same files, chosen where the link opened: the text runs on them.
      await loadFiles(linked, planted.files);
      await shows(linked, promptIds.length);
    } finally {
      await linked.close();
    }
  });
}
