// A new user's path, as the README's "Use it in your app" gives it: Vite's vanilla-ts template (create-vite's own
// files, as `npm create vite` writes them), the README's rm line run in it, and the snippets here at the template's
// paths (each checked verbatim against the README). The project is packed (npm pack), the tarball installed into the
// app, which is built with its own `npm run build` (tsc, then vite build), served with `vite preview` (and the dev
// server) and opened in Chromium: every map drawn must be the library's own values, computed here in Node from the
// installed package. Then once more without COOP/COEP (one thread, info().reason says why, and the console says so
// once), once with the default model opted in, and a page that creates engines on its main thread for the one-time
// warnings and note.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createServer, preview } from 'vite';

import { assert, check, finish, launch, serve } from '../e2e/harness.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const here = fileURLToPath(new URL('.', import.meta.url));
const read = (file) => readFileSync(join(here, file), 'utf8');
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const MB = 1e6;
const MiB = 2 ** 20;

// The README holds each file verbatim under "Use it in your app"; its first code block is the project's two commands,
// after at most the title, one sentence and a screenshot.
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const SNIPPETS = {
  'src/worker.ts': 'ts',
  'src/main.ts': 'ts',
  'vite.config.ts': 'ts',
  'worker-model.ts': 'ts',
  _headers: 'text',
  'nginx.conf': 'nginx',
  'node.mjs': 'js',
};
await check(
  'README: the two project commands first, then "Use it in your app" with every file of tests/consumer',
  () => {
    const opening = readme.match(
      /^# AttnScope\n\n(?:((?:[^\n#!`][^\n]*\n)+)\n)?(?:!\[[^\]\n]*\]\(https:\/\/[^)\s]+\)\n\n)?```sh\n[^\n`]+\n[^\n`]+\n```\n/,
    );
    assert(
      opening,
      'README opening: the title, at most one sentence and a screenshot, then a block of the two commands',
    );
    const sentence = opening[1]?.trim().replace(/\s+/g, ' ') ?? '';
    assert(!sentence || (sentence.endsWith('.') && !/[.!?] /.test(sentence)), `more than one sentence: ${sentence}`);
    const quickStart = readme.indexOf('\n## Use it in your app\n');
    assert(quickStart > 0, 'README has no "Use it in your app"');
    const relative = readme.match(/\]\((?!https:\/\/|#)[^)]*\)/g);
    assert(!relative, `links that do not resolve on npmjs.com: ${relative}`);
    for (const [file, lang] of Object.entries(SNIPPETS))
      assert(
        readme.indexOf('```' + lang + '\n' + read(file) + '```\n') > quickStart,
        `README lacks tests/consumer/${file} verbatim under "Use it in your app"`,
      );
  },
);
const keepSingleThreaded = readme.match(/^rm dist\/assets\/attnscope-mt\*.*$/m)?.[0];
const quickStart = readme
  .slice(readme.indexOf('\n## Use it in your app\n'))
  .match(/```sh\n([^`]*)```/)?.[1]
  .split('\n');
const TEMPLATE = 'npm create vite@latest my-app -- --template vanilla-ts';
await check("README: the app starts from Vite's vanilla-ts template, installs the package, deletes the demo", () => {
  assert(quickStart?.[0] === TEMPLATE, `its first command is not "${TEMPLATE}": ${quickStart?.[0]}`);
  assert(quickStart[1] === 'cd my-app && npm install && npm install attnscope', quickStart[1]);
  assert(quickStart[2].startsWith('rm '), `no rm line: ${quickStart[2]}`);
});

/** Whether version satisfies a range as package.json writes it: ~x.y.z or ^x.y.z (x > 0). */
function satisfies(version, range) {
  const [want, have] = [range.slice(1), version].map((v) => v.split('.').map(Number));
  const same = range[0] === '~' ? 2 : 1;
  if (!'~^'.includes(range[0]) || want.slice(0, same).join() !== have.slice(0, same).join()) return false;
  return have[1] > want[1] || (have[1] === want[1] && have[2] >= want[2]);
}

// The template as `npm create vite` writes it, the README's rm line, the snippets; npm pack, the tarball installed
// offline; vite and typescript are the repository's, at versions the template's ranges allow.
const work = mkdtempSync(join(tmpdir(), 'attnscope-consumer-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
const app = join(work, 'my-app');
const template = join(root, 'node_modules/create-vite/template-vanilla-ts');
cpSync(template, app, { recursive: true });
renameSync(join(app, '_gitignore'), join(app, '.gitignore'));
const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
writeFileSync(join(app, 'package.json'), JSON.stringify({ ...manifest, name: 'my-app' }, null, 2) + '\n');
run('bash', ['-c', quickStart[2]], app);
for (const file of ['src/worker.ts', 'src/main.ts', 'vite.config.ts', 'node.mjs'])
  cpSync(join(here, file), join(app, file));
await check("the template's files, less the demo the README deletes, with the snippets", () => {
  const left = readdirSync(app, { recursive: true }).filter((f) => statSync(join(app, f)).isFile());
  const want = ['.gitignore', 'index.html', 'node.mjs', 'package.json', 'public/favicon.svg', 'src/main.ts'];
  want.push('src/worker.ts', 'tsconfig.json', 'vite.config.ts');
  assert(left.sort().join() === want.join(), left.sort().join());
  assert(readFileSync(join(app, 'index.html'), 'utf8').includes('src="/src/main.ts"'), "the template's index.html");
});
const tarball = run('npm', ['pack', '--silent', '--pack-destination', work], root).trim().split('\n').pop();
const { devDependencies } = manifest;
const tools = { typescript: 'bin/tsc', vite: 'bin/vite.js' };
await check("the template develops with typescript and vite, at versions the repository's satisfy", () => {
  assert(Object.keys(devDependencies).sort().join() === Object.keys(tools).join(), Object.keys(devDependencies).join());
  for (const [name, range] of Object.entries(devDependencies)) {
    const { version } = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8'));
    assert(satisfies(version, range), `${name} ${version} is not ${range}`);
  }
});
writeFileSync(join(app, 'package.json'), JSON.stringify({ ...manifest, name: 'my-app', devDependencies: {} }));
run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', join(work, tarball)], app);
const installed = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
writeFileSync(join(app, 'package.json'), JSON.stringify({ ...installed, devDependencies }, null, 2) + '\n');
mkdirSync(join(app, 'node_modules/.bin'), { recursive: true });
for (const [name, bin] of Object.entries(tools)) {
  symlinkSync(join(root, 'node_modules', name), join(app, 'node_modules', name));
  symlinkSync(join('..', name, bin), join(app, 'node_modules/.bin', bin.split('/').pop().replace('.js', '')));
}

// The same app with the default model opted in: worker-model.ts appended to worker.ts.
const withModel = join(work, 'with-model');
mkdirSync(withModel);
for (const file of readdirSync(app).filter((f) => f !== 'node_modules'))
  cpSync(join(app, file), join(withModel, file), { recursive: true });
writeFileSync(join(withModel, 'src/worker.ts'), read('src/worker.ts') + '\n' + read('worker-model.ts'));
symlinkSync(join(app, 'node_modules'), join(withModel, 'node_modules'));

/** Every file under dir with its size. */
function files(dir) {
  return readdirSync(dir, { recursive: true })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile())
    .map((f) => ({ name: relative(dir, f), bytes: statSync(f).size }));
}
const sum = (list) => list.reduce((total, f) => total + f.bytes, 0);
const isModel = (f) => /safetensors|vocab/.test(f.name);

for (const [name, dir] of [
  ['the app', app],
  ['with the default model', withModel],
]) {
  await check(`${name}: tsc --strict`, () => run(join(root, 'node_modules/.bin/tsc'), ['--strict', '-p', dir], root));
  await check(`${name}: npm run build (the template's: tsc, then vite build)`, () => run('npm', ['run', 'build'], dir));
}
const emitted = files(join(app, 'dist'));
const emittedWithModel = files(join(withModel, 'dist'));
await check('the app emits under 5.5 MB and no model bytes; with the model, shards of at most 20 MiB', () => {
  const wasm = emitted.filter((f) => f.name.endsWith('.wasm'));
  const model = emittedWithModel.filter(isModel);
  console.log(
    `     emitted: ${(sum(emitted) / MB).toFixed(2)} MB (${wasm.length} .wasm, ${(sum(wasm) / MB).toFixed(2)} MB); ` +
      `with the default model ${(sum(emittedWithModel) / MB).toFixed(2)} MB, its files: ` +
      model.map((f) => `${f.name} ${(f.bytes / MiB).toFixed(1)} MiB`).join(', '),
  );
  assert(sum(emitted) < 5.5 * MB, `${sum(emitted)} bytes`);
  assert(wasm.length === 4 && emitted.filter((f) => /attnscope-.*\.js$/.test(f.name)).length === 2, 'four builds');
  assert(!emitted.some(isModel), `model files: ${emitted.map((f) => f.name)}`);
  assert(model.filter((f) => f.name.endsWith('.safetensors')).length === 2, 'two shards');
  assert(
    model.every((f) => f.bytes <= 20 * MiB),
    'a shard over 20 MiB',
  );
  assert(sum(emittedWithModel) - sum(emitted) > 27 * MB, 'the model adds its weights');
});

// What the library computes, in Node, from the installed package.
const attnscope = await import(pathToFileURL(join(app, 'node_modules/attnscope/dist/node.js')).href);
const engine = await attnscope.createEngine({ threads: 1 });
const N = 12;
const x = { data: Float32Array.from({ length: N * 8 }, (_, i) => Math.sin(i * 0.7)), shape: [N, 8] };
const toy = engine.attention(x, x, x, { causal: true }).weights.data;
const SENTENCE = read('worker-model.ts').match(/model\.run\('([^']+)'\)/)[1];
const modelRun = (await engine.loadModel('default')).run(SENTENCE);
const T = modelRun.tokens.length;

await check('node.mjs: the default model in Node, from the installed package', () => {
  const out = run('node', ['node.mjs'], app);
  assert(out.includes(`'▁The', '▁cat'`) && out.includes(`[ 2, 4, ${T}, ${T} ]`), out);
});

/** The maps a page drew, with what it says, the .wasm it fetched, its headers, errors, warnings and notes. */
async function open(browser, url, figures) {
  const page = await browser.newPage();
  const seen = { errors: [], warnings: [], notes: [], wasm: [] };
  // A dedicated worker's console lands here too (the app's engine is in one).
  page.on('console', (m) => {
    if (m.type() === 'warning') seen.warnings.push(m.text());
    if (m.type() === 'info' && m.text().startsWith('attnscope:')) seen.notes.push(m.text());
    if (m.type() === 'error') seen.errors.push(m.text());
  });
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('response', (r) => {
    if (r.status() >= 400) seen.errors.push(`${r.status()} ${r.url()}`);
    if (r.url().endsWith('.wasm')) seen.wasm.push(r.url());
  });
  const response = await page.goto(url);
  await page.waitForFunction((k) => document.querySelectorAll('figure').length >= k, figures, { timeout: 60_000 });
  const maps = await page.evaluate(() =>
    [...document.querySelectorAll('figure')].map((figure) => {
      const canvas = figure.querySelector('canvas');
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      const [, title, build, threads, reason] = figure.textContent.match(/^(.*)\. (\S+), (\d+) thread\(s\): (.*)$/);
      return { title, build, threads: Number(threads), reason, n: canvas.width, pixels: Array.from(data) };
    }),
  );
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  await page.close();
  return { ...seen, maps, cores, headers: response.headers() };
}

/** Each drawn pixel is the library's weight w as 255 · (1 − w) in red and green, within rounding. */
function assertDrawn(map, weights, n) {
  assert(map.n === n, `a ${map.n} × ${map.n} map, expected ${n} × ${n}`);
  let worst = 0;
  for (let i = 0; i < n * n; i++) {
    const [r, g, b, a] = map.pixels.slice(i * 4, i * 4 + 4);
    const want = 255 * (1 - weights[i]);
    worst = Math.max(worst, Math.abs(r - want), Math.abs(g - want));
    assert(b === 255 && a === 255, `pixel ${i} is not blue`);
  }
  assert(worst <= 0.501, `a pixel is ${worst} levels from the library's weight`);
}

const COOP_COEP = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
};
function productionHeaders() {
  const fromHeadersFile = Object.fromEntries(
    [...read('_headers').matchAll(/^ +([\w-]+): (\S+)$/gm)].map(([, k, v]) => [k.toLowerCase(), v]),
  );
  const fromNginx = Object.fromEntries(
    [...read('nginx.conf').matchAll(/add_header ([\w-]+) (\S+) always;/g)].map(([, k, v]) => [k.toLowerCase(), v]),
  );
  return { fromHeadersFile, fromNginx };
}

const browser = await launch();
const servers = [];
const NOT_ISOLATED = 'SharedArrayBuffer unavailable: the page is not cross-origin isolated';
/** The note a page without COOP/COEP gets once, when the default wanted its threads (the cores, at most 4). */
const DEFAULT_THREADS = (cores) =>
  new RegExp(
    `^attnscope: engines here run on one thread, not the ${Math.min(cores, 4)} they would by default: ${NOT_ISOLATED} ` +
      '\\(it needs the headers Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp\\)',
  );
const plain = join(work, 'plain');
cpSync(join(app, 'dist'), join(plain, 'dist'), { recursive: true });
const targets = [
  ['dev server', true, () => createServer({ root: app, server: { port: 0, host: '127.0.0.1' }, logLevel: 'warn' })],
  ['vite preview', true, () => preview({ root: app, preview: { port: 0, host: '127.0.0.1' }, logLevel: 'warn' })],
  [
    'without COOP/COEP, threaded builds removed',
    false,
    () => {
      assert(keepSingleThreaded, "README's rm line for hosts without COOP/COEP");
      run('bash', ['-c', keepSingleThreaded], plain);
      const left = files(join(plain, 'dist')).filter((f) => f.name.endsWith('.wasm'));
      assert(left.length === 2 && !left.some((f) => f.name.includes('-mt')), left.map((f) => f.name).join());
      return preview({ root: plain, configFile: false, preview: { port: 0, host: '127.0.0.1' }, logLevel: 'warn' });
    },
  ],
  [
    'with the default model',
    true,
    () => preview({ root: withModel, preview: { port: 0, host: '127.0.0.1' }, logLevel: 'warn' }),
  ],
];
for (const [name, isolated, start] of targets) {
  await check(`${name}: the drawn maps are the library's, on the build it should pick`, async () => {
    const server = await start();
    servers.push(server);
    if (server.listen) await server.listen();
    const page = await open(browser, server.resolvedUrls.local[0], name.includes('model') ? 2 : 1);
    assert(page.errors.length === 0, page.errors.join('\n'));
    assert(page.wasm.length === 1, `fetched ${page.wasm.length} .wasm: ${page.wasm.join(', ')}`);
    const [map, model] = page.maps;
    console.log(`     ${map.build}, ${map.threads} thread(s): ${map.reason}`);
    assertDrawn(map, toy, N);
    if (name.includes('model')) assertDrawn(model, modelRun.attentions.slice(0, T * T), T);
    const threaded = isolated && page.cores > 1;
    assert(map.build === (threaded ? 'relaxed-simd-threads' : 'relaxed-simd'), map.build);
    assert(map.threads === (threaded ? Math.min(page.cores, 4) : 1), `${map.threads} threads`);
    if (!isolated && page.cores > 1)
      assert(map.reason.startsWith(`one thread, not ${page.cores} by default`), map.reason);
    if (!isolated) assert(map.reason.includes(NOT_ISOLATED), map.reason);
    // The default's threads refused by the page's headers: said once on the console, naming the headers.
    if (!isolated && page.cores > 1)
      assert(page.notes.length === 1 && DEFAULT_THREADS(page.cores).test(page.notes[0]), page.notes.join('\n'));
    else assert(page.notes.length === 0, `notes: ${page.notes.join('\n')}`);
    if (isolated)
      for (const [k, v] of Object.entries(COOP_COEP)) assert(page.headers[k] === v, `${k}: ${page.headers[k]}`);
  });
}

await check('_headers and nginx.conf send the headers vite.config.ts sends', () => {
  const { fromHeadersFile, fromNginx } = productionHeaders();
  assert(JSON.stringify(fromHeadersFile) === JSON.stringify(COOP_COEP), JSON.stringify(fromHeadersFile));
  assert(JSON.stringify(fromNginx) === JSON.stringify(COOP_COEP), JSON.stringify(fromNginx));
});

// Engines created on a page's main thread, from the installed package's browser entry.
const site = join(work, 'site');
mkdirSync(site);
writeFileSync(join(site, 'index.html'), '<!doctype html><title>main thread</title>');
symlinkSync(join(app, 'node_modules/attnscope/dist'), join(site, 'attnscope'));
for (const isolated of [true, false]) {
  const name = isolated ? 'main thread, cross-origin isolated' : 'main thread, not isolated';
  await check(
    `${name}: one warning (and, not isolated, one note) however many engines; the default model only when imported`,
    async () => {
      const server = await serve(isolated, site);
      servers.push(server);
      const page = await browser.newPage();
      const warnings = [];
      const notes = [];
      page.on('console', (m) => {
        if (!m.text().startsWith('attnscope:')) return;
        if (m.type() === 'warning') warnings.push(m.text());
        if (m.type() === 'info') notes.push(m.text());
      });
      await page.goto(`http://127.0.0.1:${server.address().port}/`);
      const cores = await page.evaluate(() => navigator.hardwareConcurrency);
      const result = await page.evaluate(async () => {
        const { createEngine } = await import('/attnscope/browser.js');
        // Two with threads asked for, two with the default.
        const engines = [await createEngine({ threads: 2 }), await createEngine({ threads: 2 })];
        engines.push(await createEngine(), await createEngine());
        const info = engines[0].info();
        const refused = await engines[0].loadModel('default').catch((e) => e.message);
        await import('/attnscope/models/default.js');
        const tokens = (await engines[0].loadModel('default')).run('The cat sat on the mat.').tokens;
        for (const e of engines) e.dispose();
        return { info, refused, tokens };
      });
      await page.close();
      const expected = isolated
        ? /^attnscope: the threaded build 'relaxed-simd-threads' was created on the page's main thread/
        : new RegExp(`^attnscope: 2 threads were asked for, but this engine runs on one: ${NOT_ISOLATED}`);
      assert(warnings.length === 1 && expected.test(warnings[0]), warnings.join('\n'));
      if (!isolated && cores > 1) assert(notes.length === 1 && DEFAULT_THREADS(cores).test(notes[0]), notes.join('\n'));
      else assert(notes.length === 0, `notes: ${notes.join('\n')}`);
      assert(result.info.build === (isolated ? 'relaxed-simd-threads' : 'relaxed-simd'), result.info.build);
      if (!isolated)
        assert(result.info.reason.startsWith(`one thread, not 2 asked for: ${NOT_ISOLATED}`), result.info.reason);
      assert(/the default model is opt-in.*import 'attnscope\/models\/default'/.test(result.refused), result.refused);
      assert(result.tokens.join(' ') === modelRun.tokens.join(' '), result.tokens.join(' '));
    },
  );
}

await browser.close();
for (const server of servers) await (server.httpServer ? server.close() : new Promise((r) => server.close(r)));
engine.dispose();
finish();
