// Vision transformers in the page (image mode): random DINOv2 checkpoints at 224² (16 × 16 patches, with and without
// registers) loaded from files; images chosen, dropped and pasted: PNGs of odd sizes, grey and with alpha, 1 × 1, a
// JPEG with an EXIF orientation (made by Debian's python3-pil), 10,000 × 10,000 (scaled down with a notice), one
// whose header claims 400 megapixels (refused), and bytes that are no image. What the image pane lays over the
// picture (each head's [CLS] row, DINO's per-head masks, rollout, token norms and their outliers, a hovered patch's
// row and column, the second model beside the first) is held to the library's own run here in Node on the very
// RGBA pixels the page decoded; the drawn canvas's colours to the values; the PNG export and the link read back.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';

import { hubListing } from '../golden-models.mjs';
import { dinov2Files, testImage } from '../vision.mjs';
import { assert, check, clickCell, why, serve } from './harness.mjs';

const asFiles = (files) =>
  Object.entries(files).map(([name, bytes]) => ({
    name,
    mimeType: 'application/octet-stream',
    buffer: Buffer.from(bytes),
  }));

const CRC = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes) => {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC[(c ^ b) & 255] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};

/** A PNG of 8-bit samples: 1 channel (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA), rows from the top. */
export function png(width, height, channels, pixel) {
  const stride = 1 + width * channels;
  const raw = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) raw.set(pixel(x, y), y * stride + 1 + x * channels);
  return encodePng(width, height, channels, raw);
}

/** A PNG of rows already filtered (each row's filter byte, then its samples). */
function encodePng(width, height, channels, raw) {
  const type = { 1: 0, 2: 4, 3: 2, 4: 6 }[channels];
  const chunk = (name, data) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(name, 4, 'latin1');
    data.copy(out, 8);
    out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, type, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw, { level: 1 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A JPEG with an EXIF Orientation tag, written by Pillow: red on the left third, blue elsewhere, as stored. */
function exifJpeg(width, height, orientation) {
  const script = `
import io, sys
from PIL import Image
im = Image.new('RGB', (${width}, ${height}), (20, 60, 230))
im.paste((230, 30, 30), (0, 0, ${Math.floor(width / 3)}, ${height}))
exif = Image.Exif()
exif[0x0112] = ${orientation}
out = io.BytesIO()
im.save(out, 'JPEG', quality=95, exif=exif.tobytes())
sys.stdout.buffer.write(out.getvalue())
`;
  return execFileSync('/usr/bin/python3', ['-c', script]);
}

/** DINO's mask of a head (visualize_attention.py, threshold 0.6): patches where the sorted cumulative mass passes 0.4. */
function keptMass(values) {
  const order = [...values.keys()].sort((a, b) => values[a] - values[b]);
  const total = values.reduce((s, x) => s + x, 0);
  let cumulative = 0;
  const kept = [];
  for (const k of order) {
    cumulative += values[k] / total;
    if (cumulative > 0.4) kept.push(k);
  }
  return kept.sort((a, b) => a - b);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const close = (a, b, tol = 1e-6) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) <= tol);
const worst = (a, b) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));

export async function visionChecks(browser, site, engine, shots) {
  const plainFiles = dinov2Files({ registers: 0, seed: 1 });
  const registersFiles = dinov2Files({ registers: 4, seed: 2 });
  const plain = await engine.loadModel({ files: plainFiles });
  const registers = await engine.loadModel({ files: registersFiles });
  const server = await serve(true, site);
  const origin = `http://127.0.0.1:${server.address().port}/`;
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));

  /** Waits until the shown run is of the page's current image, and returns what the overlay draws. */
  const settled = async () => {
    await page.waitForFunction(
      () => {
        const s = window.__attnscope.state();
        const figures = document.getElementById('overlay').dataset.figures;
        return s.image && s.result?.vision?.image === s.image.id && s.imageNotice?.state !== 'busy' && figures;
      },
      null,
      { timeout: 60_000 },
    );
    return figures();
  };
  const figures = async () => JSON.parse(await page.getAttribute('#overlay', 'data-figures'));
  /** The page's image as it decoded it, and the library's run of a model on the same RGBA. */
  const libraryRun = async (model = plain) => {
    const pixels = await page.evaluate(() => window.__attnscope.imagePixels());
    const image = { data: Uint8ClampedArray.from(pixels.data), width: pixels.width, height: pixels.height };
    return { pixels, r: model.run({ image }) };
  };
  const row = (r, l, h, i) => {
    const n = r.tokens.length;
    const at = ((l * r.shape[1] + h) * n + i) * n;
    return Array.from(r.attentions.subarray(at, at + n));
  };
  const column = (r, l, h, j) => {
    const n = r.tokens.length;
    return Array.from({ length: n }, (_, i) => r.attentions[((l * r.shape[1] + h) * n + i) * n + j]);
  };
  const choose = async (name, buffer, mimeType = 'image/png') => {
    const before = await page.evaluate(() => window.__attnscope.state().image?.id ?? 0);
    await page.setInputFiles('#image-file', { name, mimeType, buffer });
    await page.waitForFunction(
      (b) => {
        const s = window.__attnscope.state();
        return (s.image && s.image.id !== b) || s.imageNotice?.state === 'error';
      },
      before,
      { timeout: 120_000 },
    );
  };
  const overlay = async (value) => {
    await page.check(`input[name=overlay][value=${value}]`);
    await page.waitForFunction((v) => window.__attnscope.state().overlay === v, value);
  };
  /** Hovers patch (r, c) of a figure. */
  const hoverPatch = async (figure, r, c) => {
    const box = await page.locator('#overlay').boundingBox();
    const [x, y, w, h] = JSON.parse(await page.getAttribute('#overlay', 'data-boxes'))[figure];
    const [rows, cols] = (await figures())[figure].grid;
    await page.mouse.move(box.x + x + ((c + 0.5) * w) / cols, box.y + y + ((r + 0.5) * h) / rows);
  };

  try {
    await page.goto(origin);
    await page.waitForFunction(() => document.getElementById('model-name').dataset.architecture !== undefined, null, {
      timeout: 60_000,
    });

    await check(
      'vision: a DINOv2 from files opens the image mode: image controls, the Image pane, a sample',
      async () => {
        await page.setInputFiles('#files', asFiles(plainFiles));
        await page.waitForFunction(
          () => document.getElementById('model-name').dataset.architecture === 'Dinov2Model',
          null,
          {
            timeout: 30_000,
          },
        );
        const shown = await settled();
        const ui = await page.evaluate(() => ({
          input: !document.getElementById('image-input').hidden,
          text: getComputedStyle(document.getElementById('texts')).display,
          tab: document.getElementById('tab-image').getAttribute('aria-selected'),
          sample: window.__attnscope.state().image.sample,
        }));
        assert(ui.input && ui.text === 'none' && ui.tab === 'true' && ui.sample === 'shapes', JSON.stringify(ui));
        assert(shown.length === 1 && shown[0].grid.join() === '16,16' && shown[0].values.length === 256, 'grid');
        const { r } = await libraryRun();
        const want = row(r, 0, 0, 0).slice(1);
        assert(close(shown[0].values, want), `sample, L1 H1: worst ${worst(shown[0].values, want)}`);
      },
    );

    // A PNG of odd size: 301 × 217 of noise and a gradient, RGB.
    const odd = testImage(301, 217, 'noise', 3);
    await check(
      "vision: an odd-sized PNG: decoded exactly; each head's [CLS] overlay is the library's map",
      async () => {
        await choose(
          'odd.png',
          png(301, 217, 3, (x, y) => odd.data.subarray((y * 301 + x) * 4, (y * 301 + x) * 4 + 3)),
        );
        let shown = await settled();
        const { pixels, r } = await libraryRun();
        assert(pixels.width === 301 && pixels.height === 217, `${pixels.width} × ${pixels.height}`);
        assert(
          pixels.data.every((v, i) => v === odd.data[i]),
          'the decoded pixels differ from the PNG',
        );
        for (const [l, h] of [
          [0, 0],
          [1, 3],
          [2, 5],
        ]) {
          await page.selectOption('#layer', { value: String(l) });
          await page.selectOption('#head', { value: String(h) });
          await page.waitForFunction(
            ([l, h]) => {
              const f = JSON.parse(document.getElementById('overlay').dataset.figures)[0];
              return f.layer === l && f.head === h;
            },
            [l, h],
          );
          shown = (await figures())[0];
          const want = row(r, l, h, 0).slice(1);
          assert(
            shown.what === 'head' && close(shown.values, want),
            `L${l + 1} H${h + 1}: worst ${worst(shown.values, want)}`,
          );
          assert(
            shown.extras[0][0] === '[CLS]' && Math.abs(shown.extras[0][1] - row(r, l, h, 0)[0]) < 1e-6,
            'the [CLS] chip',
          );
        }
        // The drawn colours follow the values: at full opacity the largest patch is viridis' top, the smallest its bottom.
        await page.locator('#opacity').fill('1');
        await page.waitForFunction(() => window.__attnscope.state().opacity === 1);
        await page.waitForTimeout(100);
        const [hi, lo] = [
          shown.values.indexOf(Math.max(...shown.values)),
          shown.values.indexOf(Math.min(...shown.values)),
        ];
        const colours = await page.evaluate(
          ([hi, lo]) => {
            const c = document.getElementById('overlay');
            const [x, y, w, h] = JSON.parse(c.dataset.boxes)[0];
            const dpr = c.width / c.getBoundingClientRect().width;
            const at = (k) => {
              const px = Math.round((x + ((k % 16) + 0.5) * (w / 16)) * dpr);
              const py = Math.round((y + (Math.floor(k / 16) + 0.5) * (h / 16)) * dpr);
              return Array.from(c.getContext('2d').getImageData(px, py, 1, 1).data.slice(0, 3));
            };
            return [at(hi), at(lo)];
          },
          [hi, lo],
        );
        const near = (a, b) => a.every((v, i) => Math.abs(v - b[i]) <= 3);
        assert(near(colours[0], [0xfd, 0xe7, 0x25]) && near(colours[1], [0x44, 0x01, 0x54]), JSON.stringify(colours));
        await page.locator('#opacity').fill('0.6');
        await page.screenshot({ path: join(shots, 'vision-head.png') });
      },
    );

    await check(
      "vision: all heads at once: each head's DINO mask (60% of its [CLS] mass) from the library's maps",
      async () => {
        await page.selectOption('#layer', { value: '2' });
        await overlay('heads');
        const shown = (await figures())[0];
        const { r } = await libraryRun();
        for (let h = 0; h < 6; h++) {
          const want = keptMass(row(r, 2, h, 0).slice(1));
          assert(
            JSON.stringify(shown.masks[h]) === JSON.stringify(want),
            `head ${h + 1}: ${shown.masks[h]} vs ${want}`,
          );
        }
        // A head switched off leaves the picture.
        await page.click('#overlay-heads button[data-head="2"]');
        await page.waitForFunction(
          () => JSON.parse(document.getElementById('overlay').dataset.figures)[0].masks[2] === null,
        );
        await page.screenshot({ path: join(shots, 'vision-heads.png') });
        await page.click('#overlay-heads button[data-head="2"]');
      },
    );

    await check(
      "vision: rollout over the image is the library's rollout of [CLS]; so are the rollout pane's bars",
      async () => {
        await overlay('rollout');
        const shown = (await figures())[0];
        const { r } = await libraryRun();
        const n = r.tokens.length;
        const rolled = engine.rollout(r, { residual: true }).data.slice(2 * n * n);
        const want = Array.from(rolled.subarray(1, n));
        assert(close(shown.values, want, 1e-5), `rollout: worst ${worst(shown.values, want)}`);
        // The map's own rollout view, on the same patch tokens: the bars of [CLS].
        await page.check('input[name=view][value=rollout]');
        await page.waitForFunction(
          (w) => {
            const v = document.getElementById('bars').dataset.values;
            return v && JSON.parse(v).every((x, i) => Math.abs(x - w[i]) < 1e-5);
          },
          Array.from(rolled.subarray(0, n)),
          { timeout: 15_000 },
        );
        await page.screenshot({ path: join(shots, 'vision-rollout.png') });
        // Flow, where defined: 257 tokens are too many for every row's max-flows, so the bars are [CLS]'s alone.
        const flow = engine.attentionFlow(r, { residual: true, rows: [0] }).data;
        await page.check('input[name=view][value=flow]');
        await page.waitForFunction(
          (w) => {
            const v = document.getElementById('bars').dataset.values;
            return v && JSON.parse(v).every((x, i) => Math.abs(x - w[i]) < 1e-5);
          },
          Array.from(flow),
          { timeout: 60_000 },
        );
        const note = await page.textContent('#across-note');
        assert(note.includes('for the chosen token only'), note);
        await page.check('input[name=view][value=head]');
      },
    );

    await check(
      'vision: token norms, per layer, with the high-norm outliers above median + 5 MAD flagged',
      async () => {
        // A dark 256² image with one bright patch: after the centre crop (16 px a side), exactly patch (5, 9).
        const bright = (x, y) => x >= 16 + 9 * 14 && x < 16 + 10 * 14 && y >= 16 + 5 * 14 && y < 16 + 6 * 14;
        await choose(
          'bright.png',
          png(256, 256, 3, (x, y) => (bright(x, y) ? [255, 255, 250] : [20 + (x % 7), 24, 30])),
        );
        await overlay('norms');
        await settled();
        const { r } = await libraryRun();
        const n = r.tokens.length;
        for (const layer of [0, 1, 3]) {
          await page.selectOption('#norm-layer', { value: layer === 3 ? 'last' : String(layer) });
          await page.waitForFunction(
            (want) => JSON.parse(document.getElementById('overlay').dataset.figures)[0].values[0] === want,
            r.tokenNorms.data[layer * n + 1],
          );
          const shown = (await figures())[0];
          const norms = Array.from(r.tokenNorms.data.subarray(layer * n + 1, (layer + 1) * n));
          assert(close(shown.values, norms, 1e-4), `layer ${layer}: worst ${worst(shown.values, norms)}`);
          const m = median(norms);
          const mad = median(norms.map((x) => Math.abs(x - m)));
          const want = norms.flatMap((x, k) => (x > m + 5 * mad ? [k] : []));
          assert(
            JSON.stringify(shown.outliers) === JSON.stringify(want),
            `layer ${layer}: ${shown.outliers} vs ${want}`,
          );
          if (layer === 0) assert(want.includes(5 * 16 + 9), `the bright patch is no outlier at the input: ${want}`);
        }
        const note = await page.textContent('#overlay-note');
        assert(note.includes('median + 5 × MAD'), note);
        // This model has no registers: the note does not speak of its registers.
        assert(note.includes('[CLS] stands apart') && !note.includes('registers and [CLS]'), note);
        await page.screenshot({ path: join(shots, 'vision-norms.png') });
      },
    );

    await check(
      'vision: hovering a patch shows what it attends to, then what attends to it; a click focuses it',
      async () => {
        await overlay('head');
        await page.selectOption('#layer', { value: '1' });
        await page.selectOption('#head', { value: '4' });
        const { r } = await libraryRun();
        await hoverPatch(0, 7, 3);
        const k = 7 * 16 + 3;
        await page.waitForFunction((k) => document.getElementById('overlay').dataset.hover === `0:${k}`, k);
        let shown = (await figures())[0];
        let want = row(r, 1, 4, 1 + k).slice(1);
        assert(shown.what === 'from' && close(shown.values, want), `from: worst ${worst(shown.values, want)}`);
        const readout = await page.textContent('#overlay-readout');
        // Row and column said as such, counted from 1 (the token is "patch 7,3", from 0).
        assert(
          readout.includes('the patch at row 8, column 4') && readout.includes('attends most to the patch at row'),
          readout,
        );
        await page.selectOption('#hover-shows', 'to');
        await hoverPatch(0, 7, 4);
        await hoverPatch(0, 7, 3);
        await page.waitForFunction(
          () => JSON.parse(document.getElementById('overlay').dataset.figures)[0].what === 'to',
        );
        shown = (await figures())[0];
        want = column(r, 1, 4, 1 + k).slice(1);
        assert(close(shown.values, want), `to: worst ${worst(shown.values, want)}`);
        await page.screenshot({ path: join(shots, 'vision-hover.png') });
        // The keyboard walks the patches from the one in view.
        await page.focus('#overlay');
        await page.keyboard.press('ArrowRight');
        await page.waitForFunction((k) => document.getElementById('overlay').dataset.hover === `0:${k}`, k + 1);
        await page.keyboard.press('ArrowUp');
        await page.waitForFunction((k) => document.getElementById('overlay').dataset.hover === `0:${k}`, k + 1 - 16);
        await hoverPatch(0, 7, 4);
        await hoverPatch(0, 7, 3);
        await page.waitForFunction((k) => document.getElementById('overlay').dataset.hover === `0:${k}`, k);
        await page.mouse.down();
        await page.mouse.up();
        await page.waitForFunction((t) => window.__attnscope.state().token === t, 1 + k);
        await page.selectOption('#hover-shows', 'from');
        await page.mouse.move(5, 5);
      },
    );

    await check('vision: the layer × head grid and the heads table work on the patch tokens', async () => {
      const g = await page.$eval('#grid', (c) => ({ width: c.width, ...c.dataset }));
      const box = await page.locator('#grid').boundingBox();
      const scale = box.width / g.width;
      const middle = +g.thumb / 2;
      // Layer 3, head 6.
      await page.mouse.click(
        box.x + (+g.x0 + 5 * +g.step + middle) * scale,
        box.y + (+g.y0 + 2 * +g.step + middle) * scale,
      );
      await page.waitForFunction(() => {
        const f = JSON.parse(document.getElementById('overlay').dataset.figures)[0];
        return f.layer === 2 && f.head === 5;
      });
      const tokens = JSON.parse(await page.getAttribute('#map', 'data-tokens'));
      assert(
        tokens.length === 257 && tokens[0] === '[CLS]' && tokens[256] === 'patch 15,15',
        tokens.slice(0, 3).join(),
      );
      // The heads table of this run (it renders while its pane shows).
      await page.click('#tab-heads');
      await page.waitForFunction(
        () => document.getElementById('summaries').dataset.run === String(window.__attnscope.state().result.run),
      );
      const rows = await page.$$eval('#summaries tbody tr', (trs) => trs.length);
      assert(rows === 18, `${rows} heads in the table`);
      // Measured over the image, not as a text: its columns, and head 6 of layer 3 as the library's maps give it.
      const columns = await page.$$eval('#summaries thead button[data-sort]', (bs) => bs.map((b) => b.dataset.sort));
      assert(
        columns.join() === 'spread,distance,self,neighbourhood,cls,registers',
        `the heads table measures ${columns.join()} on an image`,
      );
      const note = await page.textContent('#heads-note');
      assert(note.includes('on this image') && !note.includes('text'), note);
      const cell = async (key) =>
        page.getAttribute(`#summaries tbody tr[data-layer="2"][data-head="5"] td[data-measure="${key}"]`, 'data-value');
      const { r } = await libraryRun();
      const n = r.tokens.length;
      let self = 0,
        cls = 0;
      for (let q = 0; q < n; q++) {
        const map = row(r, 2, 5, q);
        cls += map[0] / n;
        if (q > 0) self += map[q] / (n - 1);
      }
      assert(Math.abs(Number(await cell('self')) - self) < 1e-5, `self: page ${await cell('self')}, library ${self}`);
      assert(Math.abs(Number(await cell('cls')) - cls) < 1e-5, `[CLS]: page ${await cell('cls')}, library ${cls}`);
      assert((await cell('registers')) === 'NaN', `registers of a model without them: ${await cell('registers')}`);
    });

    await check(
      "vision: a cell of the [CLS] row takes its score apart, as the library's run of the image",
      async () => {
        // The Image tab again, whatever happens: the next checks read it.
        try {
          const { r } = await libraryRun();
          await clickCell(page, 0, 17);
          const got = await why(page, { what: 'score', layer: 2, head: 5, query: 0, key: 17 });
          const want = plain.explainScore(r, { layer: 2, head: 5, query: 0, key: 17 });
          const near = (a, b) => Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b));
          assert(near(+got.score, want.score) && near(+got.sum, want.score), `${got.score}, ${got.sum}: ${want.score}`);
          assert(want.keySources[0].kind === 'patch' && want.querySources[0].kind === 'prefix', 'the first sources');
          assert(got.title.includes('“[CLS]”') && got.title.includes('“patch 1,0”'), got.title);
          await page.screenshot({ path: join(shots, 'vision-why.png') });
        } finally {
          await page.click('#tab-image');
        }
      },
    );

    await check(
      'vision: head ablation runs the image again without the head; the panes that need a text are not offered',
      async () => {
        await page.click('#tab-ablate');
        await page.click('#ablate-run');
        await page.waitForFunction(() => document.getElementById('ablate-note').dataset.mean, null, {
          timeout: 15_000,
        });
        const { pixels, r } = await libraryRun();
        const image = { data: Uint8ClampedArray.from(pixels.data), width: pixels.width, height: pixels.height };
        const ablated = plain.run({ image }, { ablateHeads: [[2, 5]] });
        const cosines = engine.cosineSimilarity(r.hidden, ablated.hidden);
        const mean = cosines.reduce((a, b) => a + b, 0) / cosines.length;
        const shown = Number(await page.getAttribute('#ablate-note', 'data-mean'));
        assert(Math.abs(shown - mean) < 1e-5, `ablation: page ${shown}, library ${mean}`);
        // The panes that need a text (the math view, the next token, the logit lens, induction, compare, intervene)
        // are not offered on an image.
        const tabs = await page.$$eval('[role=tablist] [role=tab]', (ts) =>
          ts.filter((t) => t.dataset.pane && !t.hidden).map((t) => t.dataset.pane),
        );
        assert(tabs.join() === 'image,lines,why,heads,across,ablate,cost', `panes offered on an image: ${tabs}`);
        await page.click('#tab-heads');
      },
    );

    await check(
      "vision: DINOv2 with registers beside it, on the same image: its registers apart, its maps the library's",
      async () => {
        await page.setInputFiles('#beside-files', asFiles(registersFiles));
        await page.waitForFunction(
          () => JSON.parse(document.getElementById('overlay').dataset.figures).length === 2,
          null,
          {
            timeout: 30_000,
          },
        );
        const shown = await figures();
        const { r } = await libraryRun(registers);
        assert(shown[1].title === 'Dinov2WithRegistersModel', shown[1].title);
        assert(
          JSON.stringify(shown[1].extras.map((e) => e[0])) ===
            JSON.stringify(['[CLS]', 'register 1', 'register 2', 'register 3', 'register 4']),
          JSON.stringify(shown[1].extras),
        );
        const want = row(r, 2, 5, 0).slice(5);
        assert(close(shown[1].values, want), `beside: worst ${worst(shown[1].values, want)}`);
        await overlay('norms');
        const norms = (await figures())[1];
        const n = r.tokens.length;
        const wantNorms = Array.from(r.tokenNorms.data.subarray(3 * n + 5, 4 * n));
        assert(close(norms.values, wantNorms, 1e-4), `beside norms: worst ${worst(norms.values, wantNorms)}`);
        await page.screenshot({ path: join(shots, 'vision-beside.png') });
        await overlay('head');
      },
    );

    await check('vision: the overlays export as a PNG of the pane as drawn', async () => {
      const [download] = await Promise.all([
        page.waitForEvent('download', { timeout: 15_000 }),
        page.click('button[data-export=image][data-format=png]'),
      ]);
      const path = join(shots, 'vision-export.png');
      await download.saveAs(path);
      const bytes = readFileSync(path);
      const size = await page.$eval('#overlay', (c) => [c.width, c.height]);
      assert(bytes.subarray(1, 4).toString() === 'PNG', 'not a PNG');
      assert(
        bytes.readUInt32BE(16) === size[0] && bytes.readUInt32BE(20) === size[1],
        `size ${bytes.readUInt32BE(16)}`,
      );
      assert(download.suggestedFilename().startsWith('attnscope-image-'), download.suggestedFilename());
      // The SVG: the same drawing recorded, the picture embedded, a rect per patch, the caption and the model's name.
      await page.waitForTimeout(300);
      const [svg] = await Promise.all([
        page.waitForEvent('download', { timeout: 15_000 }),
        page.click('button[data-export=image][data-format=svg]'),
      ]);
      const svgPath = join(shots, 'vision-export.svg');
      await svg.saveAs(svgPath);
      const text = readFileSync(svgPath, 'utf8');
      const rects = (text.match(/<rect /g) ?? []).length;
      assert(text.includes('<image ') && rects >= 256 && text.includes('Dinov2WithRegistersModel'), `${rects} rects`);
    });

    await check(
      "vision: a grey PNG and one with alpha: RGB as decoded, alpha dropped, the library's maps",
      async () => {
        const grey = testImage(97, 131, 'grey', 5);
        await choose(
          'grey.png',
          png(97, 131, 1, (x, y) => [grey.data[(y * 97 + x) * 4]]),
        );
        let shown = await settled();
        let { pixels, r } = await libraryRun();
        assert(
          pixels.data.every((v, i) => v === (i % 4 === 3 ? 255 : grey.data[i - (i % 4)])),
          'grey pixels',
        );
        assert(close(shown[0].values, row(r, 2, 5, 0).slice(1)), 'grey: overlay');
        // RGBA with alpha from 64 to 255: the page runs on the colour as the browser decodes it; opaque pixels exact.
        const alpha = testImage(83, 59, 'noise', 9);
        const a = (x, y) => 64 + ((x * 7 + y * 3) % 192);
        await choose(
          'alpha.png',
          png(83, 59, 4, (x, y) => [...alpha.data.subarray((y * 83 + x) * 4, (y * 83 + x) * 4 + 3), a(x, y)]),
        );
        shown = await settled();
        ({ pixels, r } = await libraryRun());
        for (let y = 0; y < 59; y++)
          for (let x = 0; x < 83; x++)
            if (a(x, y) === 255)
              for (let c = 0; c < 3; c++)
                assert(pixels.data[(y * 83 + x) * 4 + c] === alpha.data[(y * 83 + x) * 4 + c], `opaque (${x}, ${y})`);
        assert(close(shown[0].values, row(r, 2, 5, 0).slice(1)), 'alpha: overlay');
        const opaque = { ...pixels, data: Uint8ClampedArray.from(pixels.data, (v, i) => (i % 4 === 3 ? 255 : v)) };
        const same = plain.run({ image: opaque });
        assert(close(row(same, 2, 5, 0), row(r, 2, 5, 0), 0), 'alpha changes the run: it is not dropped');
      },
    );

    await check('vision: a JPEG with EXIF orientation 6 is turned as the browser shows it', async () => {
      // Stored 60 × 36, red on the left third; orientation 6 turns it a quarter clockwise: 36 × 60, red on top.
      await choose('turned.jpg', exifJpeg(60, 36, 6), 'image/jpeg');
      const shown = await settled();
      const { pixels, r } = await libraryRun();
      assert(pixels.width === 36 && pixels.height === 60, `${pixels.width} × ${pixels.height}`);
      const at = (x, y) => pixels.data.slice((y * 36 + x) * 4, (y * 36 + x) * 4 + 3);
      const [top, bottom] = [at(18, 5), at(18, 55)];
      assert(top[0] > 180 && top[2] < 90 && bottom[2] > 180 && bottom[0] < 90, `top ${top}, bottom ${bottom}`);
      assert(close(shown[0].values, row(r, 2, 5, 0).slice(1)), 'turned: overlay');
      const status = await page.textContent('#image-status');
      assert(status.includes('36 × 60'), status);
    });

    await check('vision: a turned 18-megapixel JPEG (a phone photo) is scaled down and still turned', async () => {
      // Stored 6000 × 3000 with orientation 6: shown 3000 × 6000, red on top; scaled to within 16 megapixels.
      await choose('photo.jpg', exifJpeg(6000, 3000, 6), 'image/jpeg');
      await settled();
      const notice = await page.textContent('#image-status');
      const size = await page.evaluate(() => {
        const b = window.__attnscope.state().image.bitmap;
        const ctx = new OffscreenCanvas(b.width, b.height).getContext('2d');
        ctx.drawImage(b, 0, 0);
        const at = (x, y) => Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3));
        return { w: b.width, h: b.height, top: at(b.width >> 1, 20), bottom: at(b.width >> 1, b.height - 20) };
      });
      assert(notice.includes('3000 × 6000') && notice.includes(`scaled it to ${size.w} × ${size.h}`), notice);
      assert(size.w < size.h && size.w * size.h <= 16e6 && Math.abs(size.h / size.w - 2) < 0.01, JSON.stringify(size));
      assert(size.top[0] > 180 && size.top[2] < 90 && size.bottom[2] > 180, JSON.stringify(size));
    });

    await check("vision: a 1 × 1 image runs: one colour over every patch, the library's maps", async () => {
      await choose(
        'dot.png',
        png(1, 1, 3, () => [200, 40, 90]),
      );
      const shown = await settled();
      const { pixels, r } = await libraryRun();
      assert(pixels.width === 1 && pixels.height === 1, 'size');
      assert(close(shown[0].values, row(r, 2, 5, 0).slice(1)), '1 × 1: overlay');
    });

    await check('vision: a 10,000 × 10,000 PNG is scaled down with a notice; the page goes on', async () => {
      // Grey checks of 32 px, its rows filled straight into the buffer (100 million samples).
      const raw = Buffer.alloc(10_000 * 10_001);
      for (let y = 0; y < 10_000; y++)
        for (let x = 0; x < 10_000; x++) raw[y * 10_001 + 1 + x] = ((x >> 5) ^ (y >> 5)) & 1 ? 230 : 25;
      const big = encodePng(10_000, 10_000, 1, raw);
      // The page's thread stays free while the image decodes, scales and runs (off its thread): the longest a timer
      // of 20 ms waits past its time there (a task that held the thread), and the longest gap between frames.
      await page.evaluate(() => {
        const g = (window.__gaps = { task: 0, frame: 0, on: true });
        let due = performance.now() + 20;
        const timer = () => {
          const now = performance.now();
          g.task = Math.max(g.task, now - due);
          due = now + 20;
          if (g.on) setTimeout(timer, 20);
        };
        setTimeout(timer, 20);
        let last = performance.now();
        const tick = (t) => {
          g.frame = Math.max(g.frame, t - last);
          last = t;
          if (g.on) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      });
      const start = Date.now();
      // Playwright hands the file to the page on its thread (setInputFiles): the watch starts once the page has it.
      const chosen = page.setInputFiles('#image-file', { name: 'huge.png', mimeType: 'image/png', buffer: big });
      await page.waitForFunction(() => document.getElementById('image-status').textContent.startsWith('Reading'));
      const handed = await page.evaluate(() => ({ ...window.__gaps }));
      await page.evaluate(() => Object.assign(window.__gaps, { task: 0, frame: 0 }));
      await chosen;
      const shown = await settled();
      const gaps = await page.evaluate(() => ((window.__gaps.on = false), window.__gaps));
      const notice = await page.textContent('#image-status');
      assert(notice.includes('10000 × 10000') && notice.includes('scaled it to 4000 × 4000'), notice);
      const size = await page.evaluate(() => {
        const b = window.__attnscope.state().image.bitmap;
        return [b.width, b.height];
      });
      assert(size.join() === '4000,4000', size.join());
      assert(shown[0].values.length === 256, 'no overlay');
      const ms = (x) => `${x.toFixed(0)} ms`;
      console.log(
        `     handing the file over held the page's thread ${ms(handed.task)}; ` +
          `decoded, scaled and run in ${Date.now() - start} ms; the page's thread held at most ${ms(gaps.task)} ` +
          `at a time, frames ${ms(gaps.frame)} apart at most`,
      );
      assert(gaps.task < 250, `a task held the page's thread for ${ms(gaps.task)} while the image decoded`);
    });

    await check(
      'vision: a header claiming 400 megapixels is refused unread; bad bytes are refused; the image stays',
      async () => {
        const header = png(1, 1, 3, () => [0, 0, 0]);
        header.writeUInt32BE(20_000, 16);
        header.writeUInt32BE(20_000, 20);
        const before = await page.evaluate(() => window.__attnscope.state().image.id);
        await choose('claims.png', header);
        let notice = await page.textContent('#image-status');
        assert(notice.includes('20000 × 20000') && notice.includes('more than the 250'), notice);
        await choose('text.png', Buffer.from('this is not an image'));
        notice = await page.textContent('#image-status');
        assert(notice.includes('could not be read as an image') && notice.includes('The last image stays'), notice);
        assert((await page.evaluate(() => window.__attnscope.state().image.id)) === before, 'the image changed');
        await page.click('#image-samples button[data-sample=street]');
        await settled();
      },
    );

    await check('vision: an image dropped or pasted anywhere on the page is the image', async () => {
      const bytes = [...png(40, 30, 3, (x, y) => [x * 6, y * 8, 100])];
      for (const type of ['drop', 'paste']) {
        const before = await page.evaluate(() => window.__attnscope.state().image.id);
        await page.evaluate(
          ([type, bytes]) => {
            const data = new DataTransfer();
            data.items.add(new File([new Uint8Array(bytes)], `${type}.png`, { type: 'image/png' }));
            const event =
              type === 'drop'
                ? new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true })
                : new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true });
            document.getElementById('overlay').dispatchEvent(event);
          },
          [type, bytes],
        );
        await page.waitForFunction((b) => window.__attnscope.state().image.id !== b, before);
        const s = await page.evaluate(() => window.__attnscope.state().image.name);
        assert(s === `${type}.png`, s);
        await settled();
      }
      assert(
        (await page.getAttribute('#model-name', 'data-architecture')) === 'Dinov2Model',
        'a dropped image was taken for a model',
      );
    });

    await check('vision: the link carries the view and a sample image; the model from files it asks for', async () => {
      await page.click('#image-samples button[data-sample=fruit]');
      await settled();
      await overlay('norms');
      await page.locator('#opacity').fill('0.3');
      await page.click('#copy-link');
      const link = await page.inputValue('#share-link');
      const hash = new URLSearchParams(new URL(link).hash.slice(1));
      assert(hash.get('ov') === 'norms' && hash.get('op') === '0.3' && hash.get('img') === 'fruit', link);
      assert(!(await page.isHidden('#share-note')), 'no note that the model came from files');
      const fresh = await context.newPage();
      try {
        await fresh.goto(link);
        await fresh.waitForFunction(() => window.__attnscope.state().loading.state === 'waiting', null, {
          timeout: 60_000,
        });
        await fresh.setInputFiles('#files', asFiles(plainFiles));
        await fresh.waitForFunction(
          () => {
            const s = window.__attnscope.state();
            return s.image?.sample === 'fruit' && s.result?.vision?.image === s.image.id;
          },
          null,
          { timeout: 30_000 },
        );
        const s = await fresh.evaluate(() => {
          const s = window.__attnscope.state();
          return [s.overlay, s.opacity, s.main];
        });
        assert(s.join() === 'norms,0.3,image', s.join());
      } finally {
        await fresh.close();
      }
      // A file's image cannot travel: the note says so.
      await choose(
        'odd.png',
        png(31, 17, 3, () => [1, 2, 3]),
      );
      await settled();
      await page.click('#copy-link');
      const note = await page.textContent('#share-note');
      assert(note.includes('The image came from your computer'), note);
      await overlay('head');
    });

    await check('vision: screenshots at 1400 × 900 and at 390 × 844 (no sideways scrolling)', async () => {
      await page.click('#image-samples button[data-sample=shapes]');
      await settled();
      await page.screenshot({ path: join(shots, 'vision-desktop.png') });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.waitForTimeout(300);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      await page.locator('#pane-image').scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(shots, 'vision-phone.png') });
      await page.screenshot({ path: join(shots, 'vision-phone-full.png'), fullPage: true });
      // The image, the reason to be here, comes before the map of its hundreds of patches.
      const [image, map] = [
        await page.locator('#pane-image').boundingBox(),
        await page.locator('#map-pane').boundingBox(),
      ];
      await page.setViewportSize({ width: 1400, height: 900 });
      assert(width <= 390, `the page is ${width} px wide at a 390 px viewport`);
      assert(
        image.y + image.height <= map.y + 1,
        `the image pane (${JSON.stringify(image)}) is not above the map (${JSON.stringify(map)})`,
      );
    });

    await check(
      "vision: from the Hub: its preprocessor_config.json undoes the normalization, the picture's colours are the image's",
      async () => {
        const cors = { 'access-control-allow-origin': '*' };
        await context.route('https://huggingface.co/**', (route) => {
          const url = new URL(route.request().url());
          if (url.pathname === '/api/models/test/dinov2-registers/revision/main')
            return route.fulfill({
              status: 200,
              headers: cors,
              contentType: 'application/json',
              body: hubListing(registersFiles),
            });
          const file = /^\/test\/dinov2-registers\/resolve\/main\/([^/]+)$/.exec(url.pathname);
          const body = file && registersFiles[file[1]];
          return body
            ? route.fulfill({ status: 200, headers: cors, body: Buffer.from(body) })
            : route.fulfill({ status: 404, headers: cors, body: 'Entry not found' });
        });
        await page.fill('#hub-id', 'test/dinov2-registers');
        await page.click('#load-hub');
        await page.waitForFunction(
          () => document.getElementById('model-name').dataset.architecture === 'Dinov2WithRegistersModel',
          null,
          { timeout: 30_000 },
        );
        await choose(
          'flat.png',
          png(45, 31, 3, () => [200, 40, 90]),
        );
        const shown = await settled();
        const { r } = await libraryRun(registers);
        assert(close(shown[0].values, row(r, 2, 5, 0).slice(5)), 'hub: overlay');
        const picture = await page.evaluate(() => {
          const p = window.__attnscope.state().result.vision.picture;
          let worst = 0;
          for (let i = 0; i < p.data.length; i += 4)
            worst = Math.max(
              worst,
              Math.abs(p.data[i] - 200),
              Math.abs(p.data[i + 1] - 40),
              Math.abs(p.data[i + 2] - 90),
            );
          return {
            worst,
            width: p.width,
            height: p.height,
            from: window.__attnscope.state().result.vision.normalization,
          };
        });
        assert(
          picture.worst <= 1 && picture.width === 224 && picture.from === 'preprocessor_config.json',
          JSON.stringify(picture),
        );
      },
    );

    await check('vision: a text model after it gives the text back', async () => {
      await page.click('#load-default');
      await page.waitForFunction(
        () => document.getElementById('model-name').dataset.architecture === 'UniversalSentenceEncoderLite',
        null,
        {
          timeout: 60_000,
        },
      );
      await page.waitForFunction(
        () => JSON.parse(document.getElementById('map').dataset.tokens)[0] !== '[CLS]' || true,
      );
      const ui = await page.evaluate(() => ({
        input: document.getElementById('image-input').hidden,
        text: getComputedStyle(document.getElementById('texts')).display,
        tab: document.getElementById('tab-image').hidden,
        main: window.__attnscope.state().main,
      }));
      assert(ui.input && ui.text !== 'none' && ui.tab && ui.main === 'lines', JSON.stringify(ui));
    });
  } finally {
    await context.close();
    server.close();
  }
  await check('vision: no console errors', async () => assert(errors.length === 0, errors.join('\n')));
}
