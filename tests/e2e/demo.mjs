// The demo in real headless Chromium (Debian's, driven by playwright-core),
// served three ways from loopback: Vite's dev server (what `npm run demo`
// starts), the production build cross-origin isolated (threads), and the same
// build without those headers (the single-threaded fallback). Each is typed
// into, hovered, switched between layers and heads and screenshotted, and what
// it shows is compared with the library's own results computed here in Node.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer as createViteServer } from 'vite';

import { createEngine } from '../../dist/node.js';
import { analysisChecks } from './analysis.mjs';
import { downloadChecks } from './downloads.mjs';
import { assert, check, chooseTinyBert, finish, hover, launch, mapAndButtons, open, serve } from './harness.mjs';
import { llmChecks } from './llm.mjs';
import { whyChecks } from './why.mjs';
import { honestChecks } from './honest.mjs';
import { seq2seqChecks } from './seq2seq.mjs';
import { speechChecks } from './speech.mjs';
import { visionChecks } from './vision.mjs';
import { workspaceChecks } from './workspace.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const site = join(root, 'web/demo/dist');
const shots = join(root, 'test-output/e2e');
mkdirSync(shots, { recursive: true });

execFileSync('npx', ['vite', 'build', '--config', 'web/demo/vite.config.ts', '--logLevel', 'warn'], {
  cwd: root,
  stdio: 'inherit',
});
const browser = await launch();

async function devServer() {
  const server = await createViteServer({
    configFile: join(root, 'web/demo/vite.config.ts'),
    server: { port: 0 },
    logLevel: 'warn',
  });
  await server.listen();
  return { url: server.resolvedUrls.local[0], close: () => server.close() };
}

async function staticServer(isolated) {
  const server = await serve(isolated, site);
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

const targets = [
  { name: 'dev', isolated: true, start: devServer },
  { name: 'isolated', isolated: true, start: () => staticServer(true) },
  { name: 'plain', isolated: false, start: () => staticServer(false) },
];

// What the library itself says, computed here in Node: the page must show exactly this.
// Chromium runs the relaxed-SIMD builds, whose fused multiply-add rounds differently from
// SIMD128's multiply then add; so does Node only with --experimental-wasm-relaxed-simd,
// which .ci/test passes (without it, createEngine says so).
const engine = await createEngine({ threads: 1, build: 'relaxed-simd' });
const model = await engine.loadModel('default');
const SENTENCE = 'Attention is all you need.';
const expected = model.run(SENTENCE);
/** The tokens of a text as the page shows them: the tokenizer's labels. */
const labels = (text) => model.labels(model.tokenize(text).ids);
const library = expected; // by another name where a check has its own `expected`
const [LAYERS, HEADS, N] = expected.shape;

for (const { name, isolated, start } of targets) {
  const server = await start();
  const url = server.url;
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const consoleErrors = [];
  // Every CSP violation, and any script run by text the page renders, lands here.
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective));
  });
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('response', (r) => r.status() >= 400 && consoleErrors.push(`${r.status()} ${r.url()}`));

  await check(
    `${name}: loads the ${isolated ? 'relaxed-simd-threads' : 'relaxed-simd'} build and the default model in a worker`,
    async () => {
      await page.goto(url);
      await page.waitForSelector('#engine-info[data-build]', { timeout: 60_000 });
      const build = await page.getAttribute('#engine-info', 'data-build');
      const info = await page.textContent('#engine-info');
      // Chromium has relaxed SIMD (since 114): the fused multiply-add build.
      assert(build === (isolated ? 'relaxed-simd-threads' : 'relaxed-simd'), `build ${build}`);
      assert(info.includes('SIMD128 with relaxed SIMD (fused multiply-add)'), info);
      if (!isolated) assert(info.includes('not cross-origin isolated'), `no single-thread notice: ${info}`);
      await page.waitForFunction(() => document.getElementById('model-name').dataset.architecture, null, {
        timeout: 60_000,
      });
      const modelName = await page.textContent('#model-name');
      assert(
        modelName.includes('Universal Sentence Encoder lite (UniversalSentenceEncoderLite): 2 layers × 4 heads'),
        modelName,
      );
    },
  );

  await check(`${name}: typing shows the tokenizer's tokens`, async () => {
    await page.fill('#text', '');
    await page.type('#text', SENTENCE, { delay: 5 });
    await page.waitForFunction(
      (want) => document.getElementById('map').dataset.tokens === JSON.stringify(want),
      labels(SENTENCE),
      { timeout: 15_000 },
    );
    const shown = await page.$$eval('#tokens li', (lis) => lis.map((li) => li.textContent));
    assert(JSON.stringify(shown) === JSON.stringify(labels(SENTENCE)), `tokens ${JSON.stringify(shown)}`);
    const titles = await page.$$eval('#tokens li', (lis) => lis.map((li) => li.title));
    assert(titles[1] === `${expected.tokens[1]} · id ${expected.ids[1]}`, `a chip's tooltip: ${titles[1]}`);
    const status = await page.textContent('#status');
    assert(status.startsWith(`${N} tokens · `), `status: ${status}`);
  });

  await check(`${name}: a result superseded by newer input is never shown`, async () => {
    // Record what the map shows, and the text in the box at that moment, each time its tokens change.
    await page.evaluate(() => {
      window.__shown = [];
      new MutationObserver((records) => {
        const map = document.getElementById('map');
        if (records.some((r) => r.oldValue !== map.dataset.tokens))
          window.__shown.push({ tokens: map.dataset.tokens, text: document.getElementById('text').value });
      }).observe(document.getElementById('map'), { attributeFilter: ['data-tokens'], attributeOldValue: true });
    });
    const typed = 'Every keystroke asks for a new map while the older ones are still being computed.';
    await page.fill('#text', '');
    await page.type('#text', typed, { delay: 0 });
    const final = JSON.stringify(labels(typed));
    await page.waitForFunction((want) => document.getElementById('map').dataset.tokens === want, final, {
      timeout: 15_000,
    });
    const shown = await page.evaluate(() => window.__shown);
    for (const { tokens, text } of shown) {
      const want = JSON.stringify(labels(text));
      assert(tokens === want, `shown ${tokens} while the box held ${JSON.stringify(text)} (${want})`);
    }
    assert(shown.at(-1).tokens === final, 'the last map shown is not the final text');
    console.log(`     ${typed.length} keystrokes, ${shown.length} maps shown`);
    await page.fill('#text', SENTENCE);
    await page.waitForFunction(
      (want) => document.getElementById('map').dataset.tokens === want,
      JSON.stringify(labels(SENTENCE)),
    );
  });

  await check(`${name}: the hovered value equals the library's weight, across layers and heads`, async () => {
    for (const [l, h, i, j] of [
      [0, 0, 1, 4],
      [1, 3, N - 1, 0],
      [1, 2, 2, 2],
    ]) {
      await page.selectOption('#layer', { value: String(l) });
      await page.selectOption('#head', { value: String(h) });
      await hover(page, i, j);
      const cell = page.locator('#cell');
      assert((await cell.getAttribute('data-row')) === String(i), `row for ${l},${h}`);
      assert((await cell.getAttribute('data-col')) === String(j), `col for ${l},${h}`);
      const shownWeight = Number(await cell.getAttribute('data-weight'));
      const libraryWeight = expected.attentions[((l * HEADS + h) * N + i) * N + j];
      assert(
        shownWeight === libraryWeight,
        `L${l + 1} H${h + 1} (${i},${j}): page ${shownWeight}, library ${libraryWeight}`,
      );
      const heading = await page.textContent('#head-title');
      assert(heading.replace(/\s+/g, ' ').includes(`Layer ${l + 1}, head ${h + 1}`), heading);
    }
  });

  await check(`${name}: clicking a head in the grid opens it`, async () => {
    await page.locator('#grid').scrollIntoViewIfNeeded();
    const box = await page.locator('#grid').boundingBox();
    const g = await page.$eval('#grid', (c) => ({ width: c.width, ...c.dataset }));
    const scale = box.width / g.width;
    // Layer 2, head 2: the grid says where its thumbnails are (first one's corner, and their step).
    void LAYERS;
    const middle = +g.step + +g.thumb / 2;
    await page.mouse.click(box.x + (+g.x0 + middle) * scale, box.y + (+g.y0 + middle) * scale);
    assert((await page.getAttribute('#map', 'data-layer')) === '1', 'layer not selected');
    assert((await page.getAttribute('#map', 'data-head')) === '1', 'head not selected');
    await page.screenshot({ path: join(shots, `demo-${name}.png`), fullPage: true });
  });

  await check(
    `${name}: the math view's softmax(QKᵀ/√d_k) equals the engine's weights; the switches change it`,
    async () => {
      await open(page, 'math');
      await page.selectOption('#layer', { value: '1' });
      await page.selectOption('#head', { value: '2' });
      // The head's steps arrive from the worker when the pane opens or the head changes: then all 14 show.
      await page.waitForFunction(
        () => {
          const m = window.__attnscope.state().math;
          return m?.layer === 1 && m?.head === 2 && document.querySelectorAll('#steps > li').length === 14;
        },
        null,
        { timeout: 15_000 },
      );
      const steps = await page.$$eval('#steps > li h3', (hs) => hs.map((h) => h.textContent));
      const expected = [
        'Input',
        'Query weights',
        'Key weights',
        'Value weights',
        'Queries',
        'Keys',
        'Values',
        'Scores',
        'Scaled',
        'Masked',
        'Weights',
        'Head output',
        'All heads side by side',
        'Output weights',
      ];
      assert(JSON.stringify(steps) === JSON.stringify(expected), steps);
      // Softmax, here in Node, of the scaled scores the math view shows must give the library's weights.
      const shown = await page.evaluate(() => Array.from(window.__attnscope.state().math.scaled.data));
      const weights = library.attentions.subarray((1 * HEADS + 2) * N * N, (1 * HEADS + 2 + 1) * N * N);
      let difference = 0;
      for (let i = 0; i < N; i++) {
        const row = shown.slice(i * N, (i + 1) * N);
        const top = Math.max(...row);
        const sum = row.reduce((a, x) => a + Math.exp(x - top), 0);
        row.forEach(
          (x, j) => (difference = Math.max(difference, Math.abs(Math.exp(x - top) / sum - weights[i * N + j]))),
        );
      }
      assert(difference < 1e-5, `math view vs engine: ${difference}`);
      // And the weights it shows are the engine's own map, not recomputed.
      const own = await page.evaluate(() => window.__attnscope.state().math.weights === undefined);
      assert(own, 'the math view recomputed the weights');
      // X [n, 512] · W_Q's head columns [512, 128] = Q [n, 128]; weights [n, n]; heads side by side [n, 512]; W_O.
      const shapes = await page.$$eval('#steps > li p', (ps) => ps.map((p) => p.textContent.split(' · ')[0]));
      const want = [`[${N} × 512]`, '[512 × 128]', '[512 × 128]', '[512 × 128]', `[${N} × 128]`];
      assert(JSON.stringify(shapes.slice(0, 5)) === JSON.stringify(want), shapes);
      assert(shapes[10] === `[${N} × ${N}]` && shapes[12] === `[${N} × 512]` && shapes[13] === '[512 × 512]', shapes);
      const scaled = await page.textContent('#steps > li:nth-child(9) code');
      await page.uncheck('#scale');
      const unscaled = await page.textContent('#steps > li:nth-child(9) code');
      assert(scaled.includes('√128') && unscaled.includes('saturates'), `${scaled} / ${unscaled}`);
      await page.check('#scale');
    },
  );

  await check(`${name}: the head view draws every head; clicking toggles one, double-clicking solos it`, async () => {
    await open(page, 'lines');
    const toggles = page.locator('#head-toggles button');
    assert((await toggles.count()) === HEADS, 'head toggles');
    await toggles.nth(1).click();
    assert((await toggles.nth(1).getAttribute('aria-pressed')) === 'false', 'toggle off');
    await toggles.nth(2).dblclick();
    const pressed = await toggles.evaluateAll((bs) => bs.map((b) => b.getAttribute('aria-pressed')));
    assert(JSON.stringify(pressed) === '["false","false","true","false"]', JSON.stringify(pressed));
    const height = await page.$eval('#lines', (c) => c.height);
    assert(height > 100, `head view height ${height}`);
  });

  await check(`${name}: the parameter-free mode computes softmax(s·XXᵀ)X`, async () => {
    await page.check('input[value="parameter-free"]');
    await page.waitForFunction(() => document.getElementById('layer').options.length === 1, null, { timeout: 15_000 });
    const tokens = JSON.parse(await page.getAttribute('#map', 'data-tokens'));
    assert(JSON.stringify(tokens) === JSON.stringify(['Attention', 'is', 'all', 'you', 'need', '.']), tokens);
    await page.check('input[value="model"]');
    await page.waitForFunction(() => document.getElementById('layer').options.length === 2, null, { timeout: 15_000 });
  });

  await check(
    `${name}: across two texts, the map is rectangular: the text's tokens on the rows, the second text's on the columns, the engine's cross-attention`,
    async () => {
      const text = 'Attention is all you need.';
      const second = 'The cat sat on the mat because it was warm.';
      await page.check('input[value="two-texts"]');
      await page.waitForSelector('#context-row:not([hidden])');
      await page.fill('#context', second);
      // The engine's own cross-attention: each text's layer inputs, then multiHeadAttention with the second as context.
      const a = model.run(text, { returnProjections: true, reusePrefix: false });
      const b = model.run(second, { returnProjections: true, reusePrefix: false });
      const keys = model.labels(b.ids);
      await page.waitForFunction((k) => document.getElementById('map').dataset.keys === k, JSON.stringify(keys), {
        timeout: 15_000,
      });
      assert(keys.length !== a.tokens.length, 'the test needs texts of different lengths');
      const tokens = JSON.parse(await page.getAttribute('#map', 'data-tokens'));
      assert(JSON.stringify(tokens) === JSON.stringify(model.labels(a.ids)), `rows: ${tokens}`);
      const [l, h] = [1, 2];
      const want = engine.multiHeadAttention(a.inputs[l], model.attentionWeights(l), {
        heads: model.info.heads,
        context: b.inputs[l],
      }).weights;
      assert(
        JSON.stringify(want.shape) === JSON.stringify([model.info.heads, a.tokens.length, keys.length]),
        want.shape,
      );
      await page.selectOption('#layer', { value: String(l) });
      await page.selectOption('#head', { value: String(h) });
      const [i, j] = [a.tokens.length - 1, keys.length - 1]; // the last column lies past the last row
      await hover(page, i, j);
      const cell = page.locator('#cell');
      await page.waitForFunction(() => document.getElementById('cell').dataset.col !== undefined);
      assert(
        (await cell.getAttribute('data-row')) === String(i) && (await cell.getAttribute('data-col')) === String(j),
      );
      const shown = Number(await cell.getAttribute('data-weight'));
      const library = want.data[(h * a.tokens.length + i) * keys.length + j];
      assert(Math.abs(shown - library) < 1e-6, `(${i}, ${j}): page ${shown}, engine ${library}`);
      const readout = await cell.textContent();
      assert(readout.includes(`“${tokens[i]}” → “${keys[j]}”`), readout);
      // The head view draws lines to the second text's tokens; rollout and flow, which follow one text attending to
      // itself, are not offered, and their titles say why.
      await page.waitForFunction(() => Number(document.getElementById('lines').dataset.lines) > 0);
      const views = await page.$$eval('input[name=view]', (rs) =>
        rs.map((r) => ({ view: r.value, off: r.disabled, why: r.parentElement.title })),
      );
      assert(
        views.every((v) => v.off === (v.view !== 'head') && (v.view === 'head' || v.why.includes('another sequence'))),
        JSON.stringify(views),
      );
      await page.screenshot({ path: join(shots, `demo-${name}-cross.png`) });
      await page.check('input[value="model"]');
      await page.waitForFunction(() => document.getElementById('map').dataset.keys === 'null', null, {
        timeout: 15_000,
      });
      await page.waitForSelector('#context-row[hidden]', { state: 'attached' });
    },
  );

  await check(`${name}: a model chosen from files replaces the default; a bad Hub id is a clear error`, async () => {
    await chooseTinyBert(page);
    await page.waitForFunction(() => document.getElementById('model-name').dataset.architecture === 'BertModel', null, {
      timeout: 30_000,
    });
    await page.fill('#text', 'the cats sat on the mat.');
    await page.waitForFunction(
      () =>
        document.getElementById('map').dataset.tokens ===
        JSON.stringify(['[CLS]', 'the', 'cat', '##s', 'sat', 'on', 'the', 'mat', '.', '[SEP]']),
      null,
      { timeout: 15_000 },
    );
    await page.fill('#hub-id', '../../etc/passwd');
    await page.click('#load-hub');
    await page.waitForFunction(() => document.getElementById('load-status').dataset.state === 'error', null, {
      timeout: 15_000,
    });
    const message = await page.textContent('#load-status');
    assert(message.includes('is not a Hub model id') && message.includes('previous model is still loaded'), message);
    await page.fill('#text', 'the mat');
    await page.waitForFunction(
      () => document.getElementById('map').dataset.tokens === JSON.stringify(['[CLS]', 'the', 'mat', '[SEP]']),
      null,
      { timeout: 15_000 },
    );
  });

  await check(`${name}: input beyond the model's limit is truncated, and the page says so`, async () => {
    await page.fill('#text', 'many words '.repeat(100));
    await page.waitForFunction(() => document.getElementById('status').textContent.includes('truncated'), null, {
      timeout: 15_000,
    });
    const status = await page.textContent('#status');
    // Whichever model is loaded: it reads its limit, and says how many tokens there were.
    const m = /^(\d+) tokens · .* truncated: the model reads at most (\d+) of (\d+) tokens$/.exec(status);
    assert(m && m[1] === m[2] && Number(m[3]) > Number(m[2]), status);
  });

  await check(`${name}: typed HTML is shown as text and never runs`, async () => {
    await page.check('input[value="parameter-free"]');
    await page.fill('#text', '<img src=x onerror="window.__xss=1"> <script>window.__xss=2</script>');
    await page.waitForFunction(() => document.getElementById('map').dataset.tokens?.includes('img'), null, {
      timeout: 15_000,
    });
    await page.waitForTimeout(200);
    const ran = await page.evaluate(() => window.__xss);
    const images = await page.$$eval('main img, #tokens img', (els) => els.length);
    assert(ran === undefined && images === 0, `xss ran: ${ran}, images: ${images}`);
    await page.check('input[value="model"]');
  });

  if (name !== 'dev') {
    await check(`${name}: served with a Content-Security-Policy, and nothing violates it`, async () => {
      const csp = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
      assert(csp && csp.includes("script-src 'self' 'wasm-unsafe-eval'") && !csp.includes('unsafe-inline'), csp);
      assert(!/'unsafe-eval'/.test(csp), csp);
      const violations = await page.evaluate(() => window.__violations);
      assert(violations.length === 0, `violations: ${violations.join(', ')}`);
    });
  }

  await check(`${name}: the cost plot measures attention time against length`, async () => {
    await open(page, 'cost');
    await page.click('#measure');
    await page.waitForFunction(() => document.getElementById('cost').dataset.points, null, { timeout: 60_000 });
    const points = JSON.parse(await page.getAttribute('#cost', 'data-points'));
    assert(points.map((p) => p.n).join() === '16,32,64,128,256,512,1024', JSON.stringify(points));
    assert(
      points.every((p) => p.ms > 0 && Number.isFinite(p.ms)),
      JSON.stringify(points),
    );
    // The note reads the last doubling off the same points the plot draws.
    const note = await page.textContent('#cost-note');
    const ratio = (points[6].ms / points[5].ms).toFixed(1);
    assert(note.includes(`from 512 to 1024 took ${ratio}× as long (quadratic growth is 4×)`), note);
  });

  await check(`${name}: the map's cells can be read with the keyboard`, async () => {
    await page.focus('#map');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowRight');
    const row = Number(await page.getAttribute('#cell', 'data-row'));
    const col = Number(await page.getAttribute('#cell', 'data-col'));
    assert(Number.isInteger(row) && Number.isInteger(col), `cell ${row}, ${col}`);
    assert((await page.textContent('#cell')).includes('→'), 'readout');
  });

  await check(`${name}: 512 tokens stay usable (parameter-free mode has no length limit)`, async () => {
    await page.check('input[value="parameter-free"]');
    await page.fill('#text', Array.from({ length: 512 }, (_, i) => `w${i}`).join(' '));
    await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('512 tokens'), null, {
      timeout: 30_000,
    });
    await page.screenshot({ path: join(shots, `demo-${name}-512.png`) });
    await page.check('input[value="model"]');
    await page.fill('#text', 'the mat');
  });

  await check(`${name}: the zoom buttons cover neither the map nor its keys' labels, wide or narrow`, async () => {
    // Enough tokens that the labels run along the whole top of the map, up to the corner the buttons sit in.
    await page.fill(
      '#text',
      'The cat sat on the mat because it was warm. The keys and values come from the same words.',
    );
    await page.waitForFunction(
      () => JSON.parse(document.getElementById('map').dataset.tokens ?? '[]').length > 20,
      null,
      {
        timeout: 15_000,
      },
    );
    for (const [width, height] of [
      [1400, 900],
      [1024, 700],
      [390, 844],
    ]) {
      await page.setViewportSize({ width, height });
      await page.waitForTimeout(300);
      const { buttons: b, labels: m } = await mapAndButtons(page);
      const apart = b.right <= m.left || m.right <= b.left || b.bottom <= m.top || m.bottom <= b.top;
      assert(apart, `${width} × ${height}: the buttons ${JSON.stringify(b)} over the map ${JSON.stringify(m)}`);
    }
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.fill('#text', 'the mat');
  });

  await check(`${name}: reads in dark mode`, async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForTimeout(100);
    const colours = await page.evaluate(() => {
      const style = getComputedStyle(document.body);
      return [style.color, style.backgroundColor];
    });
    await page.screenshot({ path: join(shots, `demo-${name}-dark.png`) });
    await page.emulateMedia({ colorScheme: 'light' });
    assert(colours[0] === 'rgb(232, 232, 238)' && colours[1] === 'rgb(22, 22, 26)', colours.join(' on '));
  });

  await check(`${name}: fits a 390-px-wide phone screen without sideways scrolling`, async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(100);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    await page.screenshot({ path: join(shots, `demo-${name}-phone.png`) });
    await page.setViewportSize({ width: 1400, height: 900 });
    assert(width <= 390, `the page is ${width} px wide at a 390 px viewport`);
  });

  await check(`${name}: no console errors`, async () => {
    assert(consoleErrors.length === 0, consoleErrors.join('\n'));
  });
  await page.close();
  await server.close();
}
await analysisChecks(browser, site, engine, shots);
await workspaceChecks(browser, site, shots);
await llmChecks(browser, site, engine, shots);
await whyChecks(browser, site, engine, shots);
await seq2seqChecks(browser, site, engine, shots);
await honestChecks(browser, site, engine, shots);
await visionChecks(browser, site, engine, shots);
await speechChecks(browser, site, engine, shots);
engine.dispose();

// The package's browser entry, served as files straight from dist/ (no bundler), in a Web Worker.
await check(
  'browser: a bert-base-sized model (109.5M parameters) runs in a Web Worker; every build agrees; a GGUF File, and one from the Hub, read in pieces',
  async () => {
    const server = await serve(true, root);
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${server.address().port}/tests/e2e/big-model.html`);
      await page.waitForFunction(() => document.title !== 'pending', null, { timeout: 120_000 });
      const report = JSON.parse(await page.title());
      assert(!report.error, report.error);
      assert(report.params > 109e6 && report.build === 'relaxed-simd-threads', JSON.stringify(report));
      // Every shipped build loads in the page's worker and computes the same attention.
      const builds = Object.keys(report.builds).join();
      assert(builds === 'relaxed-simd-threads,relaxed-simd,simd-threads,simd', builds);
      assert(
        Object.values(report.builds).every((d) => d < 1e-5),
        JSON.stringify(report.builds),
      );
      assert(JSON.stringify(report.shape) === '[12,12,128,128]' && report.finite, JSON.stringify(report));
      // A GGUF File read a tensor at a time, as the page's worker reads a dropped one; one no longer readable.
      const { same, unreadable, after } = report.pieces;
      assert(same && after, JSON.stringify(report.pieces));
      assert(
        unreadable.includes('gone.gguf: the file could not be read (it was changed or removed after it was chosen)'),
        unreadable,
      );
      // A GGUF from the Hub: checked as it arrives, kept in the Origin Private File System, read in pieces; a flipped byte
      // refused.
      const hub = report.hub;
      assert(hub.downloaded && hub.cached && hub.full === true && hub.after && hub.whole === 0, JSON.stringify(hub));
      assert(!hub.twice, 'a copy of a kept file left in the Cache API'); // deleted when the kept file is read
      assert(hub.downloads.join() === 'test/good,test/flipped,test/good,test/unreadable', JSON.stringify(hub));
      assert(/q\.gguf has the wrong checksum: sha256 [0-9a-f]{64}, but the Hub lists/.test(hub.refused), hub.refused);
      const { cache, files, url } = hub.kept;
      assert(cache.join() === '/test/good/resolve/main/q.gguf?checksum', JSON.stringify(hub.kept));
      assert(files.join() === url, JSON.stringify(hub.kept)); // the file, under its URL's SHA-256; no partial one
      // Weights an earlier version kept in the Cache API: moved to the file system, no download, the old copy deleted.
      const { moved } = hub;
      assert(moved.ran && moved.cached && moved.inFolder && !moved.stillInCache, JSON.stringify(moved));
      // One there that cannot be read: downloaded again, deleted, nothing partial left.
      const { broken } = hub;
      assert(broken.recovered && !broken.stillInCache && !broken.partial, JSON.stringify(broken));
      // The package on the page's main thread, which reads no file in pieces: the GGUF the worker kept in the file
      // system is read from there, whole, with no download.
      const main = await page.evaluate(async () => {
        const { createEngine } = await import('/dist/browser.js');
        const { decoderCheckpoint } = await import('/tests/llm/checkpoints.mjs');
        const bytes = decoderCheckpoint({ arch: 'qwen3' }).gguf();
        const { fakeHub } = await import('/tests/e2e/fake-hub.mjs');
        const baseUrl = 'https://hub.invalid';
        const { downloads, restore } = await fakeHub(baseUrl, { 'test/good': bytes }, bytes);
        const engine = await createEngine();
        try {
          const ids = [1, 2, 3, 4, 5];
          const reference = (await engine.loadModel({ files: { 'q.gguf': bytes } })).run(ids).attentions;
          const cached = [];
          const model = await engine.loadModel({
            hub: 'test/good',
            file: 'q.gguf',
            baseUrl,
            onProgress: (p) => cached.push(p.cached),
          });
          const same = model.run(ids).attentions.every((v, i) => v === reference[i]);
          return { same, downloads, cached: cached.length > 0 && cached.every((c) => c) };
        } finally {
          restore();
          engine.dispose();
        }
      });
      assert(main.same && main.downloads.length === 0 && main.cached, JSON.stringify(main));
      console.log(`     wasm heap in Chromium: ${report.heapMiB} MiB`);
    } finally {
      await page.close();
      server.close();
    }
  },
);

// The 1-3B models people study, from GGUF files in their real shapes, in a Web Worker: quantized weights stay at about
// the file's size in the 4 GiB heap. docs/models.md's memory table has these lines too, at 512 tokens
// (big-model.html?gguf=…&tokens=512).
await check(
  'browser: Llama-3.2-1B (Q8_0) and Gemma-2-2B (Q4_K_M) shapes load from GGUF files and run in a Web Worker',
  async () => {
    const server = await serve(true, root);
    const page = await browser.newPage();
    try {
      const list = ['Llama-3.2-1B:Q8_0', 'Gemma-2-2B:Q4_K_M'];
      await page.goto(`http://127.0.0.1:${server.address().port}/tests/e2e/big-model.html?gguf=${list.join(',')}`);
      await page.waitForFunction(() => document.title !== 'pending', null, { timeout: 600_000 });
      const reports = JSON.parse(await page.title());
      assert(!reports.error, reports.error);
      for (const entry of list) {
        const r = reports[entry];
        assert(
          r && r.weights === entry.split(':')[1] && r.finite && r.shape[2] === 128,
          `${entry}: ${JSON.stringify(r)}`,
        );
        assert(r.loadedMiB < 1.15 * r.fileMiB + 256, `${entry} holds ${r.loadedMiB} MiB for a ${r.fileMiB} MiB file`);
        console.log(
          `     ${entry} (${(r.params / 1e9).toFixed(2)}B, ${r.fileMiB} MiB file, ${r.build}): wasm heap ${r.loadedMiB} ` +
            `MiB after load, ${r.ranMiB} MiB after a 128-token run with the last layer's maps (${r.runMs} ms)`,
        );
      }
    } finally {
      await page.close();
      server.close();
    }
  },
);

// Language models in their real shapes, BF16, in a Web Worker: the weights stay 16-bit in the heap, so
// Qwen2.5-0.5B (494M parameters) fits with room to spare. docs/models.md's memory table ("Memory") comes from
// these lines.
await check(
  'browser: SmolLM2-135M, SmolLM2-360M and Qwen2.5-0.5B shapes (BF16) load and run in a Web Worker',
  async () => {
    const server = await serve(true, root);
    const page = await browser.newPage();
    try {
      const names = ['SmolLM2-135M', 'SmolLM2-360M', 'Qwen2.5-0.5B'];
      await page.goto(`http://127.0.0.1:${server.address().port}/tests/e2e/big-model.html?llm=${names.join(',')}`);
      await page.waitForFunction(() => document.title !== 'pending', null, { timeout: 300_000 });
      const reports = JSON.parse(await page.title());
      assert(!reports.error, reports.error);
      for (const name of names) {
        const r = reports[name];
        assert(r && r.weightsDtype === 'bf16' && r.finite && r.shape[2] === 128, `${name}: ${JSON.stringify(r)}`);
        assert(r.ranMiB < 2048, `${name} needs ${r.ranMiB} MiB`);
        console.log(
          `     ${name} (${(r.params / 1e6).toFixed(1)}M, ${r.build}): wasm heap ${r.loadedMiB} MiB after load, ` +
            `${r.ranMiB} MiB after a 128-token run (${r.runMs} ms)`,
        );
      }
      assert(reports['Qwen2.5-0.5B'].params > 494e6, JSON.stringify(reports['Qwen2.5-0.5B']));
    } finally {
      await page.close();
      server.close();
    }
  },
);

await downloadChecks(browser, site);
await browser.close();
finish();
