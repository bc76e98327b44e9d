// Language models in the production page, downloaded through routed Hub requests (llm-hub.mjs): the picker,
// the next-token bars against the engine's predictions and against softmax(logits / T) computed here,
// appending a candidate, generation (streaming, stopping, the grown maps against a fresh run, the seed),
// the logit lens, the heads' measures, grouped-query heads, the induction test on a checkpoint with a planted
// induction head, and the hostile cases: a download that fails mid-generation, typing during generation,
// a paste longer than the model. Exports (llm-exports.mjs) and screenshots follow.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { T } from '../llm/gguf.mjs';
import { realShapeGguf } from '../llm/real-gguf.mjs';
import { sendFile, sha256InPieces, writeInPieces } from '../llm/write-file.mjs';
import { assert, browserMemory, check, launchProfile, loadFiles, serve } from './harness.mjs';
import { exportChecks } from './llm-exports.mjs';
import { fluidChecks } from './llm-fluid.mjs';
import { generateChecks } from './llm-generate.mjs';
import { headChecks } from './llm-heads.mjs';
import { longChecks } from './llm-long.mjs';
import { bart, HUB, planted, qwenGguf, routeHub } from './llm-hub.mjs';
import { barsAt, bars, load, loadDefault, same, set, settled, softmax, state, TEXT, top } from './llm-page.mjs';

export async function llmChecks(browser, site, engine, shots) {
  const server = await serve(true, site);
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const asked = await routeHub(context);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  const model = await engine.loadModel({ files: planted.files });
  const origin = `http://127.0.0.1:${server.address().port}/`;
  // A seed under which the planted model writes 60 tokens before any end-of-text: generation then runs long enough to stop.
  let seed = 1;
  const promptIds = model.tokenize(TEXT).ids;
  while ((await model.generate(promptIds, { seed, maxNewTokens: 60 })).stopReason !== 'maxNewTokens') seed++;
  try {
    await page.goto(origin);
    await page.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 60_000 });
    await page.click('#hints-close');

    await check(
      'llm: the planted checkpoint has its induction head (checked here, before the page relies on it)',
      async () => {
        const L = 50;
        const ids = Array.from({ length: L }, (_, t) => (t * 37 + 11) % 300); // distinct tokens
        const r = model.run([...ids, ...ids], { reusePrefix: false });
        const [layers, heads, n] = r.shape;
        const score = (l, h) => {
          let sum = 0;
          for (let t = 0; t < L; t++) sum += r.attentions[((l * heads + h) * n + L + t) * n + t + 1];
          return sum / L;
        };
        const { layer, head } = planted.induction;
        assert(score(layer, head) > 0.95, `the planted head scores ${score(layer, head)}`);
        for (let l = 0; l < layers; l++)
          for (let h = 0; h < heads; h++)
            if (l !== layer || h !== head) assert(score(l, h) < 0.2, `L${l + 1} H${h + 1} scores ${score(l, h)}`);
      },
    );

    await check(
      'llm: the picker names each model with its download and heap (a 1.1B in BF16 fits); one too large downloads nothing',
      async () => {
        const options = await page.$$eval('#model-pick option', (os) => os.slice(1).map((o) => o.textContent));
        for (const name of ['SmolLM2-135M', 'SmolLM2-360M', 'Qwen2.5-0.5B', 'Gemma 3 270M', 'TinyLlama 1.1B'])
          assert(
            options.some((o) => o.startsWith(name) && /\d (MB|GB), needs \d\.\d\d GiB/.test(o)),
            `${name}: ${options.join(' | ')}`,
          );
        assert(!options.find((o) => o.startsWith('TinyLlama')).endsWith('(too large)'), options.join(' | '));
        await page.selectOption('#model-pick', 'TinyLlama/TinyLlama-1.1B-Chat-v1.0');
        assert((await page.getAttribute('#pick-fit', 'data-fits')) === 'true', 'TinyLlama does not fit 4 GiB?');
        await load(page, 'test/huge');
        const huge = await page.textContent('#load-status');
        assert(huge.includes('too large') && huge.includes('nothing was downloaded'), huge);
        assert(!asked.some((u) => u.includes('TinyLlama')), `asked for TinyLlama: ${asked}`);
        assert(!asked.some((u) => u.startsWith('/test/huge/resolve/main/model')), `downloaded weights: ${asked}`);
        assert(
          (await page.getAttribute('#model-name', 'data-architecture')) === 'UniversalSentenceEncoderLite',
          'model',
        );
      },
    );

    await check(
      "llm: the picker lists every family; another family's sizes come from the Hub's list, and it loads",
      async () => {
        const groups = await page.$$eval('#model-pick optgroup', (gs) =>
          gs.map((g) => [g.label, [...g.querySelectorAll('option')].map((o) => o.value)]),
        );
        const ids = Object.fromEntries(groups);
        assert(
          JSON.stringify(Object.keys(ids)) ===
            JSON.stringify(['Language models', 'Encoder-decoders', 'Vision', 'Speech']),
          JSON.stringify(groups),
        );
        for (const id of [
          'facebook/bart-base',
          'Helsinki-NLP/opus-mt-en-de',
          'google-t5/t5-small',
          'google/vit-base-patch16-224',
          'facebook/deit-small-distilled-patch16-224',
          'facebook/dinov2-small',
          'facebook/dinov2-with-registers-small',
          'openai/clip-vit-base-patch32',
          'openai/whisper-tiny',
        ])
          assert(Object.values(ids).flat().includes(id), `${id} is not offered: ${JSON.stringify(groups)}`);
        // A model the routed Hub does not have: the page says the Hub could not size it, in its own words.
        await page.selectOption('#model-pick', 'google-t5/t5-small');
        await page.waitForFunction(() =>
          /could not say its size/.test(document.getElementById('pick-fit').textContent),
        );
        const unknown = await page.textContent('#pick-fit');
        assert(/not on the Hub, or is private/.test(unknown) && /checks that it fits/.test(unknown), unknown);
        // BART: the download and the weights the listing gives, before anything but the list is asked for.
        const before = asked.length;
        await page.selectOption('#model-pick', 'facebook/bart-base');
        await page.waitForFunction(() => /to download once/.test(document.getElementById('pick-fit').textContent));
        const download = Object.values(bart).reduce((a, b) => a + b.length, 0);
        const mb = `${Math.round(download / 1e6)} MB to download once`;
        const note = await page.textContent('#pick-fit');
        assert(note.startsWith(`facebook/bart-base (BART · 6 + 6 layers × 12 heads): ${mb}`), note);
        assert(note.endsWith("(Sizes from the Hub's file list.)"), note);
        const option = await page.$eval('#model-pick option[value="facebook/bart-base"]', (o) => o.textContent);
        assert(/^BART base: \d+ MB, needs \d\.\d\d GiB$/.test(option), option);
        assert(
          asked.slice(before).every((u) => u.startsWith('/api/')),
          `downloaded before Load: ${asked.slice(before)}`,
        );
        await page.click('#load-pick');
        await page.waitForFunction(
          () => document.getElementById('model-name').dataset.architecture === 'BartForConditionalGeneration',
          null,
          { timeout: 30_000 },
        );
        await loadDefault(page);
      },
    );

    await check(
      "llm: a GGUF, dropped or from a Hub repository, loads as a language model: its tokens and bars the library's",
      async () => {
        const library = await engine.loadModel({ files: { 'qwen3-twin.gguf': qwenGguf } });
        const want = library.run(TEXT, { topK: 10 });
        const n = want.tokens.length;
        const p = want.predictions;
        const last = Array.from({ length: 10 }, (_, k) => ({
          id: p.ids[(n - 1) * 10 + k],
          p: p.probs[(n - 1) * 10 + k],
        }));
        const shows = async (how) => {
          await page.fill('#text', TEXT);
          await page.waitForFunction(
            (n) => window.__attnscope.answered() && window.__attnscope.state().result.tokens.length === n,
            n,
          );
          const tokens = await state(page, () => window.__attnscope.state().result.tokens);
          const labels = library.labels(want.ids);
          assert(JSON.stringify(tokens) === JSON.stringify(labels), `${how}: tokens ${tokens} vs ${labels}`);
          same(await barsAt(page), last, `the GGUF model (${how}), last position`);
        };
        await loadFiles(page, { 'qwen3-twin.gguf': qwenGguf }, 'Qwen3ForCausalLM');
        await shows('dropped');
        await loadDefault(page);
        // From the Hub: the repository, then the file's path in it, as one types it.
        await load(page, 'test/qwen3-GGUF/qwen3-f32.gguf', 'Qwen3ForCausalLM');
        assert(asked.includes('/test/qwen3-GGUF/resolve/main/qwen3-f32.gguf'), `asked: ${asked.slice(-4)}`);
        await shows('from the Hub');
        library.dispose();
        await loadDefault(page);
      },
    );

    await check(
      'llm: a GGUF over 2 GiB dropped on the page loads and runs (Llama-3.2-1B in BF16: its worker reads the File in pieces)',
      async () => {
        const { path, size } = bigGguf();
        // Chromium refuses to read a File this large whole (NotReadableError): the page must not try.
        assert(size > 2 ** 31, `the file is ${size} bytes`);
        await page.setInputFiles('#files', path);
        await runsBig(page);
        await loadDefault(page);
      },
    );

    await check(
      "llm: a GGUF over 2 GiB downloads from the Hub on the page and loads, then again from its copy (checked as it arrives, read back in pieces), and on a page's main thread (held in memory)",
      async () => {
        const { path, size, sha256, dir } = bigGguf();
        const [repo, name] = ['test/Llama-3.2-1B-GGUF', 'Llama-3.2-1B-BF16.gguf'];
        // The file streams from a loopback HTTPS server the Hub's requests are sent on to (a routed response would be
        // one buffer of 2.5 GB); its list, with the file's SHA-256 as an LFS file's, is answered here. A browser on a
        // profile on disk, as a person's is, keeps the download.
        const files = await serveFile(dir, path);
        const profile = mkdtempSync(join(dir, 'profile-'));
        const own = await launchProfile(profile, { viewport: { width: 1400, height: 900 }, ignoreHTTPSErrors: true });
        // The browser's memory while the file is sent: the download goes to disk as it arrives, never whole in memory.
        const during = [];
        const sampling = new Set();
        files.on('request', (req, res) => {
          if (req.headers.range) return;
          const sample = setInterval(() => {
            try {
              during.push(browserMemory(profile));
            } catch {
              clearInterval(sample); // the browser has closed (a check that failed mid-download)
            }
          }, 250);
          sampling.add(sample);
          res.on('close', () => clearInterval(sample));
        });
        const downloads = [];
        const cors = { 'access-control-allow-origin': '*' };
        await own.route(`${HUB}/**`, (route) => {
          const { pathname } = new URL(route.request().url());
          if (pathname === `/api/models/${repo}/revision/main`) {
            const sibling = { rfilename: name, size, blobId: '0'.repeat(40), lfs: { sha256, size, pointerSize: 134 } };
            return route.fulfill({ status: 200, headers: cors, json: { siblings: [sibling] } });
          }
          if (pathname !== `/${repo}/resolve/main/${name}`) return route.fulfill({ status: 404, headers: cors });
          if (!route.request().headers().range) downloads.push(pathname);
          return route.continue({ url: `https://127.0.0.1:${files.address().port}/${name}` });
        });
        try {
          const tab = await own.newPage();
          tab.on('pageerror', (e) => errors.push(String(e)));
          await tab.goto(origin);
          await tab.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 60_000 });
          const before = browserMemory(profile);
          for (const time of ['first', 'again']) {
            await tab.fill('#hub-id', `${repo}/${name}`);
            await tab.click('#load-hub');
            await runsBig(tab);
            assert(downloads.length === 1, `${time}: ${downloads.length} downloads`);
            await loadDefault(tab);
          }
          const grew = Math.max(...during) - before;
          console.log(`     the browser's memory while it downloaded ${size} bytes: +${MiB(grew)} MiB`);
          assert(during.length >= 4 && grew < size / 4, `+${MiB(grew)} MiB over ${during.length} samples`);
          // The package on a page's main thread (no file system to write to there): the download is held in memory
          // while it loads, and loads, though a Response of over 2 GiB, which the Cache API would need, cannot be made.
          const repository = await serve(true, fileURLToPath(new URL('../..', import.meta.url)));
          try {
            await tab.goto(`http://127.0.0.1:${repository.address().port}/tests/e2e/main-thread.html`);
            const loaded = await tab.evaluate(
              async ({ repo, name }) => {
                const { createEngine } = await import('/dist/browser.js');
                const engine = await createEngine();
                try {
                  const model = await engine.loadModel({ hub: repo, file: name });
                  const r = model.run('The keys to the cabinet', { topK: 5 });
                  return { ...model.info, top: r.predictions.ids.length };
                } catch (err) {
                  return { error: String(err) };
                } finally {
                  engine.dispose();
                }
              },
              { repo, name },
            );
            assert(loaded.weights === 'BF16' && loaded.top > 0, JSON.stringify(loaded));
            assert(downloads.length === 2, `main thread: ${downloads.length} downloads`);
          } finally {
            repository.close();
          }
        } finally {
          sampling.forEach(clearInterval);
          await own.close();
          files.close();
        }
      },
    );

    await check(
      'llm: with the embedded encoder, the panes say they need a language model; it has no induction heads',
      async () => {
        for (const pane of ['next', 'lens']) {
          await page.click(`#tab-${pane}`);
          assert(await page.isVisible(`#${pane}-empty`), `${pane}: no empty state`);
        }
        await page.click('#tab-induction');
        await page.click('#induction-run');
        await page.waitForFunction(() => document.getElementById('induction-note').dataset.found, null, {
          timeout: 20_000,
        });
        const note = await page.textContent('#induction-note');
        assert(note.includes('Universal Sentence Encoder lite has no induction heads'), note);
        await page.click('#induction-back');
        await settled(page);
      },
    );

    await check('llm: a language model loads from the Hub and opens on its next-token pane', async () => {
      await load(page, 'test/planted-llama', 'LlamaForCausalLM');
      assert((await state(page, () => window.__attnscope.state().tools)) === 'next', 'next-token pane not open');
      await set(page, 'seed', seed);
    });

    await check("llm: the bars are the engine's predictions at the selected position (< 1e-6)", async () => {
      await page.fill('#text', TEXT);
      const n = promptIds.length;
      await page.waitForFunction(
        (n) => window.__attnscope.answered() && window.__attnscope.state().result.tokens.length === n,
        n,
      );
      const want = (at) => {
        const p = model.run(TEXT, { topK: 10 }).predictions;
        return Array.from({ length: 10 }, (_, k) => ({ id: p.ids[at * 10 + k], p: p.probs[at * 10 + k] }));
      };
      same(await barsAt(page), want(n - 1), 'last position');
      await page.click('#token-3');
      same(await barsAt(page, 3), want(3), 'position 4');
      await page.click('#token-3'); // lets go of it
    });

    await check('llm: temperature, top-k and top-p re-rank live, as softmax(logits / T) computed here', async () => {
      const r = model.run(TEXT, { returnLogits: true });
      const vocab = model.info.vocabSize;
      const row = Array.from(r.logits.data.subarray((promptIds.length - 1) * vocab, promptIds.length * vocab));
      await barsAt(page);
      for (const t of [0.5, 1.7]) {
        await page.fill('#temperature', String(t));
        same(await bars(page), top(softmax(row, t), 10), `T = ${t}`);
      }
      await page.fill('#temperature', '1');
      await page.fill('#top-k', '3');
      const three = top(softmax(row), 3);
      const mass = three.reduce((a, b) => a + b.p, 0);
      same(
        await bars(page),
        three.map((b) => ({ ...b, p: b.p / mass })),
        'top-k 3',
      );
      await page.fill('#top-k', '0');
      await page.fill('#top-p', '0.5');
      // As the engine: drop the least likely while what they hold stays within 1 − top-p.
      const p = softmax(row);
      const ascending = p.map((x, id) => ({ id, p: x })).sort((a, b) => a.p - b.p || a.id - b.id);
      let dropped = 0;
      const kept = new Set(p.map((_, id) => id));
      for (const x of ascending.slice(0, -1)) {
        if ((dropped += Math.fround(x.p)) > 0.5) break;
        kept.delete(x.id);
      }
      const keptMass = [...kept].reduce((a, id) => a + p[id], 0);
      same(
        await bars(page),
        top(
          p.map((x, id) => (kept.has(id) ? x / keptMass : 0)),
          10,
        ),
        'top-p 0.5',
      );
      await page.fill('#top-p', '1');
      await page.fill('#temperature', '0');
      const greedy = await bars(page);
      assert(greedy.length === 1 && greedy[0].p === 1 && greedy[0].id === top(p, 1)[0].id, JSON.stringify(greedy));
      await page.fill('#temperature', '1');
    });

    await check('llm: clicking a candidate appends its token', async () => {
      const [, second] = await barsAt(page);
      await page.click(`#candidates button[data-id="${second.id}"]`);
      const want = [...promptIds, second.id];
      await page.waitForFunction((w) => window.__attnscope.state().result.ids.join() === w, want.join());
      await settled(page);
      const text = await page.inputValue('#text');
      assert(text === model.decode(want, { skipSpecialTokens: true }), `text ${JSON.stringify(text)}`);
      const tokens = JSON.parse(await page.getAttribute('#map', 'data-tokens'));
      assert(tokens.at(-1) === model.labels(want).at(-1), `last token ${tokens.at(-1)}`);
    });

    await generateChecks({ page, context, model, seed, origin, shots });
    await headChecks({ page, model, shots });

    await exportChecks(page, context, engine, shots);
    await longChecks({ page, engine, shots });
    await fluidChecks({ page, context, engine, model, origin, shots });
    await check('llm: no page errors', async () => assert(errors.length === 0, errors.join('\n')));
  } finally {
    await context.close();
    server.close();
    if (big) rmSync(big.dir, { recursive: true, force: true });
  }
}

const MiB = (bytes) => Math.round(bytes / 2 ** 20);

/** Llama-3.2-1B's shape in BF16 (2.5 GB, with a tokenizer), written once for the checks of a GGUF over 2 GiB. */
let big;
function bigGguf() {
  if (big) return big;
  const dir = mkdtempSync(join(tmpdir(), 'attnscope-big-gguf-'));
  const { bytes } = realShapeGguf('Llama-3.2-1B', () => 'BF16', [['general.file_type', T.UINT32, 32]], {
    tokenizer: true,
  });
  const path = join(dir, 'Llama-3.2-1B-BF16.gguf');
  writeInPieces(path, bytes);
  return (big = { dir, path, size: bytes.length, sha256: sha256InPieces(bytes) });
}

/** Serves one file over HTTPS on loopback (a certificate made here), with ranges, to any origin. */
function serveFile(dir, path) {
  const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
  if (!existsSync(cert))
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'].concat([
        '-keyout',
        key,
        '-out',
        cert,
      ]),
      { stdio: 'ignore' },
    );
  const size = statSync(path).size;
  const server = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    sendFile(req, res, path, size, { 'access-control-allow-origin': '*' });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** Waits for the big Llama to load, then runs it on the text and checks the next-token bars. */
async function runsBig(page) {
  await page.waitForFunction(
    () =>
      document.getElementById('model-name').dataset.architecture === 'LlamaForCausalLM' ||
      window.__attnscope.state().loading.state === 'error',
    null,
    { timeout: 400_000 },
  );
  const loading = await state(page, () => window.__attnscope.state().loading);
  assert(loading.state !== 'error', loading.message);
  const info = await state(page, () => window.__attnscope.state().model);
  assert(info.weights === 'BF16' && info.layers === 16 && info.heads === 32, JSON.stringify(info));
  await page.fill('#text', TEXT);
  await page.waitForFunction(
    () => window.__attnscope.answered() && window.__attnscope.state().result?.tokens.length > 5,
    null,
    { timeout: 60_000 },
  );
  const shown = await barsAt(page);
  const sum = shown.reduce((a, b) => a + b.p, 0);
  assert(shown.length === 10 && shown.every((b) => b.p > 0) && sum <= 1 + 1e-6, JSON.stringify(shown));
}
