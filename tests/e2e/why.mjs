// The Why pane in the production page: a click on a map cell takes that score apart, and "why?" beside a next-token
// candidate takes its logit apart; the page's numbers are held to the library's own explanation computed here in
// Node, on the embedded encoder and on the planted-induction Llama (whose induction head must be explained by the
// previous-token head that feeds it). A cell no head can see is an error the pane shows, and the next click clears.
import { join } from 'node:path';

import { assert, check, clickCell, serve, why as shown } from './harness.mjs';
import { planted, routeHub } from './llm-hub.mjs';
import { load, settled, state } from './llm-page.mjs';

const near = (a, b, what) =>
  assert(Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b)), `${what}: the page shows ${a}, the library ${b}`);

export async function whyChecks(browser, site, engine, shots) {
  const server = await serve(true, site);
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await routeHub(context);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  const origin = `http://127.0.0.1:${server.address().port}/`;
  try {
    await page.goto(origin);
    await page.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 60_000 });
    await page.click('#hints-close');

    await check("why: a cell of the embedded encoder's map opens the Why pane with the library's numbers", async () => {
      const encoder = await engine.loadModel('default');
      await page.selectOption('#layer', { value: '1' });
      await page.selectOption('#head', { value: '2' });
      await clickCell(page, 3, 1);
      const got = await shown(page, { what: 'score', layer: 1, head: 2, query: 3, key: 1 });
      assert(got.main === 'why', `the Why pane is not open: ${got.main}`);
      const ids = await state(page, () => window.__attnscope.state().result.ids);
      const want = encoder.explainScore(encoder.run(ids), { layer: 1, head: 2, query: 3, key: 1 });
      near(+got.score, want.score, 'score');
      near(+got.sum, want.score, 'the sum of the terms');
      const top = want.largest[0];
      const words = (s) => (s.kind === 'head' ? `L${s.layer + 1} H${s.head + 1}` : s.kind);
      assert(got.terms.length === 10, `${got.terms.length} terms listed`);
      // The page counts layers and heads from 1; the library from 0.
      for (const s of [want.querySources[top.query], want.keySources[top.key]])
        if (s.kind === 'head') assert(got.terms[0].includes(words(s)), `${got.terms[0]} against ${top.text}`);
      assert(got.terms[0].endsWith(`${top.value >= 0 ? '+' : '−'}${Math.abs(top.value).toPrecision(4)}`), got.terms[0]);
      await page.screenshot({ path: join(shots, 'why-1400-encoder.png') });
      encoder.dispose();
    });

    const model = await engine.loadModel({ files: planted.files });
    await check('why: the induction head on the repeated sequence is the previous-token head × the token', async () => {
      await load(page, 'test/planted-llama', 'LlamaForCausalLM');
      await settled(page);
      await page.click('#tab-induction');
      await page.click('#induction-run');
      await page.waitForFunction(() => window.__attnscope.state().induction, null, { timeout: 20_000 });
      const { length, ids, layer, head } = await state(page, () => {
        const s = window.__attnscope.state();
        return { length: s.induction.length, ids: s.result.ids, layer: s.layer, head: s.head };
      });
      assert(layer === planted.induction.layer && head === planted.induction.head, `shows L${layer} H${head}`);
      const query = length + 3,
        key = 4; // the second copy's token 3 → the token after its first copy
      await clickCell(page, query, key);
      const got = await shown(page, { what: 'score', layer, head, query, key });
      const want = model.explainScore(model.run(ids), { layer, head, query, key });
      near(+got.score, want.score, 'score');
      near(+got.sum, want.score, 'sum');
      const top = want.largest[0];
      assert(
        want.querySources[top.query].kind === 'token' && want.keySources[top.key].kind === 'head',
        `the largest term is ${top.text}`,
      );
      assert(got.terms[0].startsWith('embedding of') && got.terms[0].includes('× L1 H1 at'), got.terms[0]);
      await page.screenshot({ path: join(shots, 'why-1400-induction.png') });
    });

    await check('why: a cell no head sees says why, and the next click takes a score apart again', async () => {
      await clickCell(page, 2, 5);
      await page.waitForFunction(() => document.getElementById('why-note').dataset.state === 'error', null, {
        timeout: 20_000,
      });
      const note = await page.textContent('#why-note');
      assert(note.includes('key 5 comes after query 2') && (await page.isHidden('#why-body')), note);
      await clickCell(page, 5, 2);
      await shown(page, { what: 'score', query: 5, key: 2 });
      assert((await page.getAttribute('#why-note', 'data-state')) === 'ok', 'the error stays');
      await page.click('#induction-back');
      await settled(page);
    });

    await check("why: a candidate's “why?” takes its logit apart, each head's push in the grid", async () => {
      await page.click('#tab-next');
      await page.waitForSelector('#candidates button[data-why]', { timeout: 20_000 });
      const id = Number(await page.getAttribute('#candidates li:first-child button[data-why]', 'data-why'));
      await page.click('#candidates li:first-child button[data-why]');
      const ids = await state(page, () => window.__attnscope.state().result.ids);
      const position = ids.length - 1;
      const got = await shown(page, { what: 'logit', position, token: id });
      const r = model.run(ids, { returnLogits: true });
      const want = model.explainLogit(r, { position, token: id });
      near(+got.score, want.logit, 'logit');
      near(+got.sum, r.logits.data[position * model.info.vocabSize + id], "the run's own logit");
      assert(got.title.startsWith('What pushes'), got.title);
      // The candidate was not added: "why?" asks, it does not type.
      const after = await state(page, () => window.__attnscope.state().result.ids);
      assert(after.join() === ids.join(), 'the candidate was added');
      await page.screenshot({ path: join(shots, 'why-1400-logit.png') });
    });
    model.dispose();
    await check('why: no page errors', async () => assert(errors.length === 0, errors.join('\n')));
  } finally {
    await context.close();
    server.close();
  }
}
