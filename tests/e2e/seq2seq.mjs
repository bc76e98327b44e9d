// An encoder-decoder model (BART, random weights in the Hub's layout, with a byte-level BPE tokenizer.json) in the
// page: loaded from files, the source and the target each a readable width. Each set of maps the page shows (cross-attention,
// the encoder's, the decoder's), chosen by tabs with the keyboard, is compared with the library's own run here in
// Node; so are the alignment over the heads (their mean, the lowest-entropy head) and the head view's sides.
// "Generate the target" streams the library's greedy tokens into the target, a step per token, and Stop keeps them.
// With more beams the page says it is searching, then shows the library's beam-search winner; Beams starts at the
// model's num_beams (generation_config.json), and a count outside 1 to 8 never reaches the worker.
import { join } from 'node:path';

import { bartWithTokenizer } from '../seq2seq.mjs';
import { assert, check, clickCell, hover, loadFiles, serve, why } from './harness.mjs';

/**
 * Holds the worker's messages back in the page while `window.__hold` is set: every target token then arrives that
 * many ms after the one before, in order with the other messages. The test model writes its whole target in a few
 * milliseconds; held, its stream can be seen, photographed and stopped half-way, as a slower model's would be.
 * While `window.__park` is set, translate replies wait until `window.__release()`: a beam search, which streams
 * nothing, can be seen searching. `window.__posted` lists every request the page sent (its kind and beams).
 */
function holdTokens() {
  const queue = [];
  const parked = [];
  window.__posted = [];
  window.__release = () => {
    window.__park = false;
    for (const deliver of parked.splice(0)) deliver();
  };
  let pumping = false;
  const pump = () => {
    const next = queue.shift();
    if (!next) return void (pumping = false);
    next.fn(next.event);
    setTimeout(pump, next.event.data?.kind === 'target-token' ? window.__hold : 0);
  };
  const Real = window.Worker;
  window.Worker = class extends Real {
    postMessage(message, transfer) {
      window.__posted.push({ kind: message?.kind, beams: message?.beams });
      return super.postMessage(message, transfer);
    }
    set onmessage(fn) {
      super.onmessage = (event) => {
        if (window.__park && event.data?.kind === 'translate') return void parked.push(() => fn(event));
        if (!window.__hold && !pumping) return fn(event);
        queue.push({ fn, event });
        if (pumping) return;
        pumping = true;
        setTimeout(pump, 0);
      };
    }
  };
}

/**
 * Whether the source's box `a` and the target's `b` are each at least 240 px wide (a sentence reads on a line or
 * two), side by side or the target under the source.
 */
const placed = (a, b) =>
  a.width >= 240 &&
  b.width >= 240 &&
  ((Math.abs(a.y - b.y) < 2 && b.x >= a.x + a.width) || (Math.abs(a.x - b.x) < 2 && b.y >= a.y + a.height));

/** Records what the target's stream shows at every change (each message lands in its own task). */
function watchStream() {
  const el = document.getElementById('target-stream');
  window.__stream = { steps: [], nodes: 0, boxHidden: true };
  window.__streamObserver?.disconnect();
  window.__streamObserver = new MutationObserver(() => {
    const w = window.__stream;
    if (el.hidden || !el.textContent) return;
    if (w.steps.at(-1) !== el.textContent) w.steps.push(el.textContent);
    w.nodes = Math.max(w.nodes, el.childNodes.length);
    w.boxHidden &&= document.getElementById('context').hidden;
  });
  window.__streamObserver.observe(el, { childList: true, characterData: true, subtree: true });
}

export async function seq2seqChecks(browser, site, engine, shots) {
  const files = bartWithTokenizer();
  const model = await engine.loadModel({ files });
  const server = await serve(true, site);
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.addInitScript(holdTokens);
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
  /** The weight the page reads out under the pointer at cell (i, j) of what the map shows. */
  const hovered = async (i, j) => {
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
  /** The cell (i, j) of layer l, head h as the page reads it out under the pointer. */
  const cell = async (l, h, i, j) => {
    await page.selectOption('#layer', { value: String(l) });
    await page.selectOption('#head', { value: String(h) });
    return hovered(i, j);
  };
  /** Which tab is chosen, which has the focus, and which one the keyboard reaches (tabindex 0). */
  const tabs = () =>
    page.evaluate(() => {
      const all = [...document.querySelectorAll('#stack-tabs [role=tab]')];
      const only = (f) => all.filter(f).map((t) => t.dataset.stack);
      return {
        selected: only((t) => t.getAttribute('aria-selected') === 'true'),
        reachable: only((t) => t.tabIndex === 0),
        focused: document.activeElement?.dataset.stack ?? null,
      };
    });
  /** Presses a key on the focused tab and checks that the tab it reaches is focused and chosen alone. */
  const press = async (key, want) => {
    await page.keyboard.press(key);
    const t = await tabs();
    assert(
      t.focused === want && t.selected.join() === want && t.reachable.join() === want,
      `${key}: want ${want} chosen, focused and the only one in the tab order; got ${JSON.stringify(t)}`,
    );
  };
  const box = (selector) => page.locator(selector).boundingBox();
  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => document.getElementById('model-name').dataset.architecture !== undefined);

    await check(
      'seq2seq: BART from files: the source and the target, each a readable width; the maps as tabs',
      async () => {
        await loadFiles(page, files, 'BartForConditionalGeneration');
        await page.waitForSelector('#context-row:not([hidden])');
        await page.waitForSelector('#stack-row:not([hidden])');
        const label = await page.textContent('#context-label');
        assert(label.startsWith('Target'), label);
        assert((await page.textContent('#text-label')) === 'Source', await page.textContent('#text-label'));
        await page.fill('#text', source);
        await page.fill('#context', target);
        const [a, b] = [await box('#text'), await box('#context')];
        assert(placed(a, b), `source ${JSON.stringify(a)}, target ${JSON.stringify(b)}`);
        const t = await tabs();
        assert(t.selected.join() === 'cross' && t.reachable.join() === 'cross', JSON.stringify(t));
        const roles = await page.$$eval('#stack-tabs', ([l]) => [l.getAttribute('role'), l.children.length]);
        assert(roles.join() === 'tablist,3', roles.join());
      },
    );

    const r = model.run({ source, target });
    const sourceLabels = model.labels(r.sourceIds);
    const targetLabels = model.labels(r.targetIds);
    const [n, m] = [r.targetIds.length, r.sourceIds.length];
    const [, HEADS] = r.maps.cross.shape;
    const crossAt = (l, h, i, j) => r.maps.cross.attentions[((l * HEADS + h) * n + i) * m + j];

    await check(
      "seq2seq: cross-attention: target tokens on the rows, source tokens on the columns, the library's maps",
      async () => {
        await shows(targetLabels, sourceLabels);
        assert(n !== m, 'the test needs a source and a target of different lengths');
        const [l, h, i, j] = [2, 1, n - 1, m - 1];
        const shown = await cell(l, h, i, j);
        const want = crossAt(l, h, i, j);
        assert(Math.abs(shown - want) < 1e-6, `cross (${i}, ${j}): page ${shown}, library ${want}`);
        await page.waitForFunction(() => Number(document.getElementById('lines').dataset.lines) > 0);
        await page.screenshot({ path: join(shots, 'seq2seq-cross.png') });
      },
    );

    await check(
      'seq2seq: the heads table measures cross-attention as an alignment, as the library maps give it',
      async () => {
        await page.click('#tab-heads');
        await page.waitForFunction(() => {
          const table = document.getElementById('summaries');
          return (
            table.dataset.measures === 'cross' && table.dataset.run === String(window.__attnscope.state().result.run)
          );
        });
        const columns = await page.$$eval('#summaries thead button[data-sort]', (bs) => bs.map((b) => b.dataset.sort));
        assert(columns.join() === 'entropy,monotonicity,diagonal,coverage', `cross-attention measured as ${columns}`);
        const [LAYERS] = r.maps.cross.shape;
        const rows = await page.$$eval('#summaries tbody tr', (trs) => trs.length);
        assert(rows === LAYERS * HEADS, `${rows} heads in the table`);
        // Head 2 of layer 3: the share of source tokens that are some target token's most-weighted one, and the share
        // of consecutive target tokens whose most-weighted source token does not go back.
        const best = Array.from({ length: n }, (_, i) => {
          let b = 0;
          for (let j = 1; j < m; j++) if (crossAt(2, 1, i, j) > crossAt(2, 1, i, b)) b = j;
          return b;
        });
        const coverage = new Set(best).size / m;
        const monotonicity = best.slice(1).filter((b, i) => b >= best[i]).length / (n - 1);
        const value = async (key) =>
          Number(
            await page.getAttribute(
              `#summaries tbody tr[data-layer="2"][data-head="1"] td[data-measure="${key}"]`,
              'data-value',
            ),
          );
        assert(
          Math.abs((await value('coverage')) - coverage) < 1e-9,
          `coverage: page ${await value('coverage')}, ${coverage}`,
        );
        assert(
          Math.abs((await value('monotonicity')) - monotonicity) < 1e-9,
          `monotonicity: page ${await value('monotonicity')}, ${monotonicity}`,
        );
        const note = await page.textContent('#heads-note');
        assert(note.includes('alignment'), note);
        // Rollout and flow follow one sequence: not offered on cross-attention.
        const off = await page.$$eval('input[name=view]', (rs) => rs.filter((r) => r.disabled).map((r) => r.value));
        assert(off.join() === 'rollout,flow', `views offered on cross-attention: all but ${off}`);
      },
    );

    await check(
      "seq2seq: a cross-attention cell's Why: query sources from the decoder, key sources from the encoder's output",
      async () => {
        // The Head view tab again, whatever happens: the next checks read it.
        try {
          const [l, h, i, j] = [2, 1, n - 1, m - 1];
          await clickCell(page, i, j);
          const got = await why(page, { what: 'score', layer: l, head: h, query: i, key: j });
          const want = model.explainScore(r, { set: 'cross', layer: l, head: h, query: i, key: j });
          const near = (a, b) => Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b));
          assert(near(+got.score, want.score) && near(+got.sum, want.score), `${got.score}, ${got.sum}: ${want.score}`);
          assert(
            new Set(want.keySources.map((s) => s.sequence)).size === 1 && want.keySources[0].sequence === 0,
            'keys',
          );
          assert(
            got.terms.every((t) => / \(query\) × /.test(t)),
            got.terms.join('\n'),
          );
          assert(
            got.terms.some((t) => t.includes('(key)') && /encoder|embedding|position/.test(t.split(' × ')[1])),
            got.terms.join('\n'),
          );
          await page.screenshot({ path: join(shots, 'seq2seq-why-cross.png') });
        } finally {
          await page.click('#tab-lines');
        }
      },
    );

    await check(
      "seq2seq: the head view of cross-attention: source on the left, target on the right, a target token's lines the library's",
      async () => {
        const sides = () => page.$eval('#lines', (c) => [JSON.parse(c.dataset.left), JSON.parse(c.dataset.right)]);
        const [left, right] = await sides();
        assert(JSON.stringify(left) === JSON.stringify(sourceLabels), `left: ${left}`);
        assert(JSON.stringify(right) === JSON.stringify(targetLabels), `right: ${right}`);
        // Hovering target token i on the right leaves its lines alone: one per head and source token of weight 1% and
        // more (the view draws no weaker line), in layer 3.
        const i = 2;
        let want = 0;
        for (let h = 0; h < HEADS; h++) for (let j = 0; j < m; j++) if (crossAt(2, h, i, j) >= 0.01) want++;
        await page.$eval('#lines-scroll', (el) => (el.scrollTop = 0));
        const c = await box('#lines');
        // The target's rows on the right span the view as the source's do on the left.
        const row = (Math.max(n, m) * Math.max(6, Math.min(22, 640 / Math.max(n, m)))) / n;
        await page.mouse.move(c.x + c.width / 2, c.y - 20);
        await page.mouse.move(c.x + c.width - 30, c.y + 16 + (i + 0.5) * row);
        const drawn = () => page.$eval('#lines', (c) => ({ ...c.dataset, left: undefined, right: undefined }));
        await page
          .waitForFunction(
            ([i, w]) => {
              const d = document.getElementById('lines').dataset;
              return d.focus === String(i) && d.lines === String(w);
            },
            [i, want],
            { timeout: 5_000 },
          )
          .catch(async () =>
            assert(false, `hovering target ${i}: want ${want} lines, drawn ${JSON.stringify(await drawn())}`),
          );
        // On the left (the source's side) nothing is a query: every line is drawn again.
        await page.mouse.move(c.x + 30, c.y + 16 + (i + 0.5) * row);
        await page.waitForFunction((w) => Number(document.getElementById('lines').dataset.lines) > w, want);
        const note = await page.textContent('#lines-note');
        assert(note.startsWith('Lines run from each target token (right)'), note);
        await page.screenshot({ path: join(shots, 'seq2seq-lines.png') });
      },
    );

    await check(
      "seq2seq: the tabs, by keyboard: the encoder's maps (source × source), the decoder's (causal)",
      async () => {
        const before = await page.evaluate(() => window.__attnscope.state().result.run);
        await page.focus('#stack-cross');
        await press('ArrowLeft', 'decoder');
        await shows(targetLabels);
        // One run brought every set: the tab shows another without running the pair again.
        await page.waitForTimeout(300);
        const after = await page.evaluate(() => {
          const r = window.__attnscope.state().result;
          return { run: r.run, set: r.set };
        });
        assert(after.run === before && after.set === 'decoder', `tab switch: run ${before} → ${JSON.stringify(after)}`);
        const dec = await cell(0, 2, n - 1, 1);
        const wantDec = r.maps.decoder.attentions[((0 * 4 + 2) * n + n - 1) * n + 1];
        assert(Math.abs(dec - wantDec) < 1e-6, `decoder: page ${dec}, library ${wantDec}`);
        await page.screenshot({ path: join(shots, 'seq2seq-decoder.png') });
        await page.focus('#stack-decoder');
        await press('ArrowLeft', 'encoder');
        await shows(sourceLabels);
        const enc = await cell(1, 3, m - 1, 1);
        const wantEnc = r.maps.encoder.attentions[((1 * 4 + 3) * m + m - 1) * m + 1];
        assert(Math.abs(enc - wantEnc) < 1e-6, `encoder: page ${enc}, library ${wantEnc}`);
        // Self-attention's head view keeps its queries on the left.
        const sides = await page.$eval('#lines', (c) => [c.dataset.left, c.dataset.right]);
        assert(
          sides.every((s) => s === JSON.stringify(sourceLabels)),
          sides.join(' | '),
        );
        await page.focus('#stack-encoder');
        await press('ArrowLeft', 'cross'); // around the end
        await press('Home', 'encoder');
        await press('End', 'cross');
        await press('ArrowRight', 'encoder');
        await press('ArrowRight', 'decoder');
        await press('ArrowRight', 'cross');
        await shows(targetLabels, sourceLabels);
      },
    );

    await check(
      "seq2seq: the alignment over a layer's heads: their mean, and the head of lowest mean row entropy, the library's",
      async () => {
        for (const l of [1, 2]) {
          await page.selectOption('#aggregate', 'head');
          await page.selectOption('#layer', { value: String(l) });
          // Computed here from the library's maps: the heads' mean, and each head's −Σ p ln p averaged over rows.
          const entropy = Array.from({ length: HEADS }, (_, h) => {
            let e = 0;
            for (let i = 0; i < n; i++)
              for (let j = 0; j < m; j++) {
                const p = crossAt(l, h, i, j);
                if (p > 0) e -= p * Math.log(p);
              }
            return e / n;
          });
          const best = entropy.indexOf(Math.min(...entropy));
          const sorted = [...entropy].sort((a, b) => a - b);
          assert(sorted[1] - sorted[0] > 1e-4, `layer ${l + 1}: two heads' entropies tie (${entropy})`);
          await page.selectOption('#aggregate', 'mean');
          await page.waitForFunction(() => document.getElementById('map').dataset.aggregate === 'mean');
          const note = await page.textContent('#map-aggregate');
          assert(note.startsWith(`Mean over layer ${l + 1}'s heads`), note);
          // The note sits under the map's last row, not over it.
          await page.waitForFunction(() => {
            const c = document.getElementById('map');
            const bottom = c.getBoundingClientRect().top + Number(c.dataset.y0) + c.dataset.rows * c.dataset.cell;
            return bottom <= document.getElementById('map-aggregate').getBoundingClientRect().top + 0.5;
          });
          assert(await page.$eval('#head', (s) => s.disabled), 'the head select stays enabled under the mean');
          for (const [i, j] of [
            [0, 0],
            [n - 1, 2],
            [3, m - 1],
          ]) {
            let sum = 0;
            for (let h = 0; h < HEADS; h++) sum += crossAt(l, h, i, j);
            const shown = await hovered(i, j);
            assert(
              Math.abs(shown - sum / HEADS) < 1e-6,
              `mean (${l}, ${i}, ${j}): page ${shown}, library ${sum / HEADS}`,
            );
          }
          await page.selectOption('#aggregate', 'entropy');
          await page.waitForFunction(() => document.getElementById('map').dataset.aggregate === 'entropy');
          const chosen = Number(await page.getAttribute('#map', 'data-shown-head'));
          assert(chosen === best, `layer ${l + 1}: the page chose head ${chosen + 1}, lowest entropy: ${best + 1}`);
          // The chosen head is the head in view: the head select says which.
          await page.waitForFunction((h) => document.getElementById('head').value === String(h), best);
          const says = await page.textContent('#map-aggregate');
          assert(
            says.includes(`head ${best + 1}, the most peaked of layer ${l + 1}'s`) &&
              says.includes(entropy[best].toFixed(3)),
            `${says} (want head ${best + 1}, ${entropy[best].toFixed(3)} nats)`,
          );
          for (const [i, j] of [
            [1, 1],
            [n - 1, m - 1],
          ]) {
            const shown = await hovered(i, j);
            const want = crossAt(l, best, i, j);
            assert(Math.abs(shown - want) < 1e-6, `best head (${l}, ${i}, ${j}): page ${shown}, library ${want}`);
          }
        }
        await page.screenshot({ path: join(shots, 'seq2seq-alignment.png') });
        await page.selectOption('#aggregate', 'head');
        await page.waitForFunction(() => document.getElementById('map-aggregate').hidden);
      },
    );

    const texts = [];
    const g = await model.generate(
      { source },
      { maxNewTokens: 30, temperature: 0, attentions: false, onToken: (t) => texts.push(t.text) },
    );
    const streamed = () => page.evaluate(() => window.__stream);
    /** The stream's steps each one of the library's texts after a token, in its order. */
    const inOrder = (steps) => {
      let at = 0;
      for (const step of steps) {
        at = texts.indexOf(step, at);
        if (at < 0) return false;
      }
      return true;
    };

    await check(
      'seq2seq: "Generate the target" streams the library\'s greedy tokens, a step each, then runs them teacher-forced',
      async () => {
        await page.evaluate(watchStream);
        await page.click('#translate');
        await page.waitForFunction((want) => document.getElementById('context').value === want, g.text, {
          timeout: 30_000,
        });
        const w = await streamed();
        assert(w.steps.length >= 2, `the target grew in ${w.steps.length} step(s): ${JSON.stringify(w.steps)}`);
        assert(w.steps.at(-1) === g.text, `the stream ended at ${JSON.stringify(w.steps.at(-1))}`);
        assert(inOrder(w.steps), `steps not the library's, in order: ${JSON.stringify(w.steps)}`);
        assert(w.nodes > 1, 'the stream was rewritten, not appended to');
        assert(w.boxHidden, 'the target box showed beside its stream');
        // The generated ids run as they are (their text need not tokenize back to them).
        await shows(model.labels(g.targetIds), sourceLabels);
        const forced = model.run({ source, target: g.targetIds });
        const k = g.targetIds.length;
        const shown = await cell(0, 0, k - 1, 2);
        const want = forced.maps.cross.attentions[(0 * k + k - 1) * m + 2];
        assert(Math.abs(shown - want) < 1e-6, `generated cross (${k - 1}, 2): page ${shown}, library ${want}`);
        await page.screenshot({ path: join(shots, 'seq2seq-generated.png') });
        // The head view after Generate: source and target each span the view, so that wherever it has scrolled
        // (it follows the newest target rows) the source tokens the lines run to are beside them.
        await page.click('#tab-lines');
        await page.waitForFunction((k) => JSON.parse(document.getElementById('lines').dataset.right).length === k, k);
        const view = await page.$eval('#lines', (c) => ({
          rows: JSON.parse(c.dataset.rows),
          left: JSON.parse(c.dataset.left).length,
          right: JSON.parse(c.dataset.right).length,
        }));
        const [spanLeft, spanRight] = [view.rows[0] * view.left, view.rows[1] * view.right];
        assert(Math.abs(spanLeft - spanRight) < 1e-6, `the source spans ${spanLeft} px, the target ${spanRight} px`);
        await page.$eval('#lines-scroll', (el) => (el.scrollTop = el.scrollHeight));
        await page.waitForFunction(() => Number(document.getElementById('lines').dataset.lines) > 0);
        await (await page.$('#lines-scroll')).screenshot({ path: join(shots, 'seq2seq-generated-lines.png') });
        // An edit of the box runs its text again.
        await page.fill('#context', target);
        await shows(targetLabels, sourceLabels);
      },
    );

    await check(
      "seq2seq: held back, the stream shows in the target's place as it grows; Stop keeps what it shows",
      async () => {
        const targetBox = await box('#context');
        await page.evaluate(() => (window.__hold = 120));
        await page.evaluate(watchStream);
        await page.click('#translate');
        await page.waitForFunction(() => window.__stream.steps.length >= 6, null, { timeout: 15_000 });
        const [a, b] = [await box('#text'), await box('#target-stream')];
        assert(
          placed(a, b) && Math.abs(b.x - targetBox.x) < 2 && Math.abs(b.y - targetBox.y) < 2,
          `source ${JSON.stringify(a)}, stream ${JSON.stringify(b)}, the target's box ${JSON.stringify(targetBox)}`,
        );
        await page.screenshot({ path: join(shots, 'seq2seq-streaming.png') });
        await page.click('#translate-stop');
        await page.evaluate(() => (window.__hold = 0));
        await page.waitForSelector('#target-stream', { state: 'hidden' });
        const kept = await page.evaluate(() => window.__attnscope.state().contextIds);
        const shownLast = (await streamed()).steps.at(-1);
        assert(kept && kept.length > 2 && kept.length < g.targetIds.length, `kept ${kept}`);
        assert(JSON.stringify(kept) === JSON.stringify(Array.from(g.targetIds.slice(0, kept.length))), `kept ${kept}`);
        const value = await page.inputValue('#context');
        assert(value === texts[kept.length - 2] && value === shownLast, `box ${JSON.stringify(value)}`);
        await shows(model.labels(kept), sourceLabels);
        const forced = model.run({ source, target: kept });
        const k = kept.length;
        const shown = await cell(1, 3, k - 1, 1);
        const want = forced.maps.cross.attentions[((1 * 4 + 3) * k + k - 1) * m + 1];
        assert(Math.abs(shown - want) < 1e-6, `stopped cross (${k - 1}, 1): page ${shown}, library ${want}`);
        await page.screenshot({ path: join(shots, 'seq2seq-stopped.png') });
        await page.fill('#context', target);
        await shows(targetLabels, sourceLabels);
      },
    );

    const maxNewTokens = await page.evaluate(() => window.__attnscope.state().maxNewTokens);
    // The worker's cap: the start token and an end token within the model's positions.
    const searched = await model.generate(
      { source },
      { beams: 4, maxNewTokens: Math.min(maxNewTokens, model.info.maxTokens - 2), temperature: 0, attentions: false },
    );
    const posted = (kind) => page.evaluate((k) => window.__posted.filter((m) => m.kind === k), kind);
    /** What the target's place shows while a translation runs, and whether Generate, Beams and Stop take clicks. */
    const searching = () =>
      page.evaluate(() => ({
        stream: document.getElementById('target-stream').textContent,
        state: document.getElementById('target-stream').dataset.searching ?? null,
        label: document.getElementById('context-label').textContent,
        generate: !document.getElementById('translate').disabled,
        beams: !document.getElementById('beams').disabled,
        stop: !document.getElementById('translate-stop').disabled,
      }));

    await check("seq2seq: Beams starts at the model's num_beams (1: no generation_config.json); its note", async () => {
      const want = String(model.info.generation?.numBeams ?? 1);
      assert(want === '1', `the test model's num_beams: ${want}`);
      assert((await page.inputValue('#beams')) === want, `Beams shows ${await page.inputValue('#beams')}`);
      const note = await page.textContent('#beams-note');
      assert(note.startsWith('1 beam: greedy'), note);
      // Beside "Generate the target", on its line.
      const [b, n] = [await box('#translate'), await box('#beams')];
      assert(Math.abs(b.y + b.height / 2 - (n.y + n.height / 2)) < 4 && n.x > b.x + b.width, JSON.stringify([b, n]));
    });

    await check(
      "seq2seq: 4 beams: the target's place says it is searching, then shows the library's beam-search target",
      async () => {
        const greedy = Array.from(g.targetIds).join();
        assert(
          Array.from(searched.targetIds).join() !== greedy,
          'beam search and greedy agree: the check tells nothing',
        );
        await page.fill('#beams', '4');
        const note = await page.textContent('#beams-note');
        assert(note.startsWith('4 beams: beam search keeps the 4 likeliest partial targets at each step'), note);
        await page.evaluate(watchStream);
        await page.evaluate(() => (window.__park = true));
        const before = (await posted('translate')).length;
        await page.click('#translate');
        await page.waitForSelector('#target-stream[data-searching=running]');
        const w = await searching();
        assert(
          w.stream === 'Searching 4 beams…' && w.label === 'Target: searching 4 beams…',
          `searching: ${JSON.stringify(w)}`,
        );
        assert(!w.generate && !w.beams && w.stop, `while searching: ${JSON.stringify(w)}`);
        const sent = (await posted('translate')).slice(before);
        assert(sent.length === 1 && sent[0].beams === 4, `asked ${JSON.stringify(sent)}`);
        const status = await page.textContent('#status');
        assert(status.includes('searching 4 beams for the target'), status);
        await page.screenshot({ path: join(shots, 'seq2seq-beams-searching.png') });
        await page.evaluate(() => window.__release());
        await page.waitForFunction((want) => document.getElementById('context').value === want, searched.text, {
          timeout: 30_000,
        });
        await page.waitForSelector('#target-stream', { state: 'hidden' });
        const kept = await page.evaluate(() => window.__attnscope.state().contextIds);
        assert(JSON.stringify(kept) === JSON.stringify(Array.from(searched.targetIds)), `target ${kept}`);
        // No token showed before the winner: the search's tokens are final only at its end.
        const steps = (await streamed()).steps;
        assert(JSON.stringify(steps) === JSON.stringify(['Searching 4 beams…']), `shown ${JSON.stringify(steps)}`);
        await shows(model.labels(searched.targetIds), sourceLabels);
        const forced = model.run({ source, target: searched.targetIds });
        const k = searched.targetIds.length;
        const shown = await cell(2, 1, k - 1, 3);
        const want = forced.maps.cross.attentions[((2 * 4 + 1) * k + k - 1) * m + 3];
        assert(Math.abs(shown - want) < 1e-6, `beam cross (${k - 1}, 3): page ${shown}, library ${want}`);
        await page.screenshot({ path: join(shots, 'seq2seq-beams.png') });
      },
    );

    await check("seq2seq: Stop during a beam search waits for the search's leading beam and keeps it", async () => {
      await page.fill('#context', target);
      await shows(targetLabels, sourceLabels);
      await page.evaluate(() => (window.__park = true));
      await page.click('#translate');
      await page.waitForSelector('#target-stream[data-searching=running]');
      await page.click('#translate-stop');
      await page.waitForSelector('#target-stream[data-searching=stopping]');
      const w = await searching();
      assert(w.stream.startsWith('Stopping the search') && !w.stop && !w.generate, JSON.stringify(w));
      // The test model's search ends before Stop reaches the worker: the leading beam is the winner. What the page
      // must do is wait for that reply rather than drop it, as it drops a greedy run's after the tokens it showed.
      await page.evaluate(() => window.__release());
      await page.waitForSelector('#target-stream', { state: 'hidden' });
      const kept = await page.evaluate(() => window.__attnscope.state().contextIds);
      assert(JSON.stringify(kept) === JSON.stringify(Array.from(searched.targetIds)), `kept ${kept}`);
      assert((await page.inputValue('#context')) === searched.text, await page.inputValue('#context'));
      await shows(model.labels(searched.targetIds), sourceLabels);
    });

    await check('seq2seq: a count of beams outside 1 to 8 (0, 9, 2.5, none) never starts a search', async () => {
      await page.fill('#context', target);
      await shows(targetLabels, sourceLabels);
      const before = (await posted('translate')).length;
      for (const typed of ['0', '9', '2.5', '']) {
        await page.fill('#beams', typed);
        const state = await page.evaluate(() => ({
          disabled: document.getElementById('translate').disabled,
          invalid: document.getElementById('beams').getAttribute('aria-invalid'),
          note: document.getElementById('beams-note').textContent,
          error: document.getElementById('beams-note').dataset.state,
          beams: window.__attnscope.state().beams,
        }));
        assert(
          state.disabled && state.invalid === 'true' && state.error === 'error' && state.beams === 4,
          `${JSON.stringify(typed)}: ${JSON.stringify(state)}`,
        );
        assert(state.note === 'Beams: a whole number from 1 to 8.', state.note);
        if (typed === '9') await page.screenshot({ path: join(shots, 'seq2seq-beams-invalid.png') });
        await page.click('#translate', { force: true });
        await page.press('#beams', 'Enter');
      }
      // A request sent would be in the list by now: the page posts at the click, within the same task.
      const after = await page.evaluate(() => window.__attnscope.state().translation);
      assert(after === null, `a translation started: ${JSON.stringify(after)}`);
      const sent = (await posted('translate')).slice(before);
      assert(sent.length === 0, `sent ${JSON.stringify(sent)}`);
      assert((await page.inputValue('#context')) === target, await page.inputValue('#context'));
      await page.fill('#beams', '1');
      assert(!(await page.$eval('#translate', (b) => b.disabled)), 'Generate stays disabled at 1 beam');
    });

    await check('seq2seq: a cross map of about 31 × 15 at 1400 × 900 labels every token', async () => {
      // Words added until the target is 31 tokens (the decoder's start token first) and the source 15.
      const grow = (words, count, target) => {
        let text = '';
        for (let k = 0; ; k++) {
          const next = `${text} ${words[k % words.length]}`.trim();
          // The target's tokens as the page counts them: the decoder's start token, then the tokenized text.
          const n = target ? model.tokenize(next, { target: true }).ids.length + 1 : model.tokenize(next).ids.length;
          if (n > count) return text;
          text = next;
        }
      };
      const [longSource, longTarget] = [grow(['the', 'cat', 'sat'], 15, false), grow(['the', 'hat', 'sat'], 31, true)];
      const r31 = model.run({ source: longSource, target: longTarget });
      await page.fill('#text', longSource);
      await page.fill('#context', longTarget);
      await shows(model.labels(r31.targetIds), model.labels(r31.sourceIds));
      await page.locator('#map').screenshot({ path: join(shots, 'seq2seq-31x15.png') });
      const [cell, every] = await page.$eval('#map', (c) => [Number(c.dataset.cell), Number(c.dataset.labelEvery)]);
      // Back to the pair the later checks read.
      await page.fill('#text', source);
      await page.fill('#context', target);
      await shows(targetLabels, sourceLabels);
      assert(
        r31.targetIds.length >= 29 && r31.sourceIds.length === 15,
        `${r31.targetIds.length} × ${r31.sourceIds.length}`,
      );
      assert(cell >= 10, `a 31-row map at 1400 × 900 has ${cell} px rows`);
      assert(every === 1, `rows ${cell} px apart label every ${every} tokens`);
    });

    await check(
      'seq2seq: a 390-px phone: source and target each a readable width, nothing wider than the screen',
      async () => {
        await page.setViewportSize({ width: 390, height: 844 });
        await page.locator('#texts').scrollIntoViewIfNeeded();
        const [a, b] = [await box('#text'), await box('#context')];
        assert(placed(a, b), `source ${JSON.stringify(a)}, target ${JSON.stringify(b)}`);
        const wide = await page.evaluate(() => document.documentElement.scrollWidth);
        assert(wide <= 390, `the page is ${wide} px wide`);
        await page.screenshot({ path: join(shots, 'seq2seq-390-texts.png') });
        // The target streams in its column, where its box was, here too.
        await page.evaluate(() => (window.__hold = 120));
        await page.evaluate(watchStream);
        await page.click('#translate');
        await page.waitForFunction(() => window.__stream.steps.length >= 4, null, { timeout: 15_000 });
        const c = await box('#target-stream');
        assert(placed(a, c) && Math.abs(c.x - b.x) < 2, `source ${JSON.stringify(a)}, stream ${JSON.stringify(c)}`);
        await page.screenshot({ path: join(shots, 'seq2seq-390-streaming.png') });
        await page.click('#translate-stop');
        await page.evaluate(() => (window.__hold = 0));
        await page.waitForSelector('#target-stream', { state: 'hidden' });
        await page.fill('#context', target);
        await shows(targetLabels, sourceLabels);
        await page.selectOption('#aggregate', 'entropy');
        await page.locator('#map-pane').scrollIntoViewIfNeeded();
        await page.screenshot({ path: join(shots, 'seq2seq-390-alignment.png') });
        await page.locator('#pane-lines').scrollIntoViewIfNeeded();
        await page.screenshot({ path: join(shots, 'seq2seq-390-lines.png') });
        await page.selectOption('#aggregate', 'head');
        // Beams beside the buttons, and the searching state, fit the phone too.
        await page.fill('#beams', '4');
        await page.evaluate(() => (window.__park = true));
        await page.locator('#texts').scrollIntoViewIfNeeded();
        await page.click('#translate');
        await page.waitForSelector('#target-stream[data-searching=running]');
        const wider = await page.evaluate(() => document.documentElement.scrollWidth);
        assert(wider <= 390, `searching, the page is ${wider} px wide`);
        const [s, n] = [await box('#translate'), await box('#beams-note')];
        assert(n.x >= 0 && n.x + n.width <= 390 && n.y > s.y, `note ${JSON.stringify(n)}`);
        await page.screenshot({ path: join(shots, 'seq2seq-390-beams.png') });
        await page.evaluate(() => window.__release());
        await page.waitForSelector('#target-stream', { state: 'hidden' });
        await page.fill('#beams', '1');
        await page.setViewportSize({ width: 1400, height: 900 });
      },
    );

    await check(
      "seq2seq: a model with generation_config.json's num_beams 3: Beams starts at 3, as the library reads it",
      async () => {
        const config = new TextEncoder().encode(JSON.stringify({ num_beams: 3 }));
        const three = { ...files, 'generation_config.json': config };
        const loaded = await engine.loadModel({ files: three });
        const want = loaded.info.generation?.numBeams;
        loaded.dispose();
        assert(want === 3, `the library reads num_beams ${want}`);
        await loadFiles(page, three);
        await page.waitForFunction(() => document.getElementById('beams').value === '3', null, { timeout: 30_000 });
        const note = await page.textContent('#beams-note');
        assert(note.startsWith('3 beams: beam search keeps the 3 likeliest'), note);
        assert((await page.evaluate(() => window.__attnscope.state().beams)) === 3, 'the state has other beams');
      },
    );

    await check(
      'seq2seq: a link to rollout, then BART: its cross-attention shows the head, in no API words',
      async () => {
        const linked = await browser.newPage({ viewport: { width: 1400, height: 900 } });
        try {
          await linked.goto(`http://127.0.0.1:${server.address().port}/#view=rollout&tools=across&main=lines`);
          await linked.waitForFunction(() => window.__attnscope.state().result?.tokens?.length > 0, null, {
            timeout: 30_000,
          });
          const restored = await linked.evaluate(() => window.__attnscope.state().view);
          assert(restored === 'rollout', `the link's view is ${restored}`);
          await loadFiles(linked, files);
          // The page's default target is longer than this BART's 32 positions: a short one runs.
          await linked.waitForFunction(
            () => window.__attnscope.state().model?.architecture === 'BartForConditionalGeneration',
            null,
            { timeout: 30_000 },
          );
          await linked.fill('#context', target);
          await linked.waitForFunction(
            () => {
              const s = window.__attnscope.state();
              return s.result?.set === 'cross' && s.result.tokens.length > 1;
            },
            null,
            { timeout: 30_000 },
          );
          const shown = await linked.evaluate(() => ({
            view: window.__attnscope.state().view,
            across: window.__attnscope.state().errors.across ?? '',
            text: ['pane-across', 'map-pane'].map((id) => document.getElementById(id).innerText).join('\n'),
          }));
          assert(shown.view === 'head', `the view is ${shown.view}`);
          assert(!/rollout: |flow: |not defined here/.test(shown.text + shown.across), shown.across);
        } finally {
          await linked.close();
        }
      },
    );

    await check('seq2seq: no page errors', () => assert(errors.length === 0, errors.join('\n')));
  } finally {
    await page.close();
    server.close();
    model.dispose();
  }
}
