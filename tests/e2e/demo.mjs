// The demo in real headless Chromium (Debian's, driven by playwright-core),
// served three ways from loopback: Vite's dev server (what `npm run demo`
// starts), the production build cross-origin isolated (threads), and the same
// build without those headers (the single-threaded fallback). Each is typed
// into, hovered and screenshotted.
import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createServer as createViteServer } from 'vite';

const root = fileURLToPath(new URL('../..', import.meta.url));
const site = join(root, 'web/demo/dist');
const shots = join(root, 'test-output/e2e');
mkdirSync(shots, { recursive: true });

execFileSync('npx', ['vite', 'build', '--config', 'web/demo/vite.config.ts', '--logLevel', 'warn'], {
  cwd: root,
  stdio: 'inherit',
});

const TYPES = {
  '.svg': 'image/svg+xml',
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.wasm': 'application/wasm',
};
function serve(isolated) {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    let file = join(site, path);
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!file.startsWith(site) || !existsSync(file)) {
      res.writeHead(404).end('not found');
      return;
    }
    const headers = { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' };
    if (isolated) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    res.writeHead(200, headers);
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
  ],
});

let failures = 0;
let passes = 0;
async function check(name, fn) {
  try {
    await fn();
    passes++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failures++;
    console.log(`FAIL ${name}\n     ${err.stack ?? err}`);
  }
}
const assert = (cond, msg) => {
  if (!cond) throw new Error(msg);
};

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
  const server = await serve(isolated);
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

const targets = [
  { name: 'dev', isolated: true, start: devServer },
  { name: 'isolated', isolated: true, start: () => staticServer(true) },
  { name: 'plain', isolated: false, start: () => staticServer(false) },
];

for (const { name, isolated, start } of targets) {
  const server = await start();
  const url = server.url;
  const page = await browser.newPage({ viewport: { width: 900, height: 1100 } });
  const consoleErrors = [];
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('response', (r) => r.status() >= 400 && consoleErrors.push(`${r.status()} ${r.url()}`));
  const label = name;

  await check(`${label}: loads the ${isolated ? 'simd-threads' : 'simd'} build in a worker`, async () => {
    await page.goto(url);
    await page.waitForSelector('#engine-info[data-build]', { timeout: 30_000 });
    const build = await page.getAttribute('#engine-info', 'data-build');
    const info = await page.textContent('#engine-info');
    assert(build === (isolated ? 'simd-threads' : 'simd'), `build ${build}`);
    if (!isolated) assert(info.includes('not cross-origin isolated'), `no single-thread notice: ${info}`);
    else assert(/2 threads/.test(info) || /\d threads/.test(info), `threads not shown: ${info}`);
  });

  await check(`${label}: typing updates the map with the typed tokens`, async () => {
    await page.fill('#text', '');
    await page.type('#text', 'Attention is all you need.', { delay: 10 });
    const expected = ['Attention', 'is', 'all', 'you', 'need', '.'];
    await page.waitForFunction(
      (want) => document.getElementById('map').dataset.tokens === JSON.stringify(want),
      expected,
      { timeout: 15_000 },
    );
    const status = await page.textContent('#status');
    assert(/^6 tokens · [\d.]+ ms$/.test(status), `status: ${status}`);
  });

  await check(`${label}: hovering a cell shows its weight`, async () => {
    const box = await page.locator('#map').boundingBox();
    const scale = box.width / 640;
    const cellSize = (640 - 110) / 6;
    // Row 1 ("is"), column 4 ("need"): the centre of that cell, in page pixels.
    await page.mouse.move(box.x + (110 + 4.5 * cellSize) * scale, box.y + (110 + 1.5 * cellSize) * scale);
    const cell = page.locator('#cell');
    assert(
      (await cell.getAttribute('data-row')) === '1' && (await cell.getAttribute('data-col')) === '4',
      'wrong cell',
    );
    const weight = Number(await cell.getAttribute('data-weight'));
    assert(weight > 0 && weight < 1, `weight ${weight}`);
    const text = await cell.textContent();
    assert(text.startsWith('“is” → “need”: ') && text.endsWith(weight.toFixed(6)), `readout: ${text}`);
  });

  await check(`${label}: no console errors`, async () => {
    await page.screenshot({ path: join(shots, `demo-${name}.png`) });
    assert(consoleErrors.length === 0, consoleErrors.join('\n'));
  });
  await page.close();
  await server.close();
}

await browser.close();
console.log(`${passes} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
