// Hub downloads in the production page, with https://huggingface.co answered by
// the test (Playwright routes the worker's requests too): a tiny BERT loads; then
// offline, a missing model, a truncated file and a corrupted file are each a clear
// message, and the model loaded before keeps working.
import { goldenModelFiles, hubListing, TINY_BERT_VOCAB } from '../golden-models.mjs';
import { assert, check, serve } from './harness.mjs';

const HUB = 'https://huggingface.co';
const bert = { ...goldenModelFiles('bert'), 'vocab.txt': new TextEncoder().encode(TINY_BERT_VOCAB.join('\n')) };
const corrupt = bert['model.safetensors'].slice();
corrupt[corrupt.length - 1] ^= 1;

// id → [the files the list describes, the bytes actually served].
const REPOS = {
  'org/tiny-bert': [bert, bert],
  'org/corrupt': [bert, { ...bert, 'model.safetensors': corrupt }],
  'org/short': [bert, { ...bert, 'model.safetensors': bert['model.safetensors'].subarray(0, 1000) }],
};

async function route(route) {
  const url = new URL(route.request().url());
  const cors = { 'access-control-allow-origin': '*' };
  const api = /^\/api\/models\/(.+)\/revision\/main$/.exec(url.pathname);
  const file = /^\/(.+)\/resolve\/main\/([^/]+)$/.exec(url.pathname);
  const id = api?.[1] ?? file?.[1];
  if (id === 'org/offline') return route.abort('internetdisconnected');
  const repo = REPOS[id];
  if (!repo) return route.fulfill({ status: 404, headers: cors, body: '{"error":"Repository not found"}' });
  if (api)
    return route.fulfill({ status: 200, headers: cors, contentType: 'application/json', body: hubListing(repo[0]) });
  const body = repo[1][file[2]];
  if (!body) return route.fulfill({ status: 404, headers: cors, body: 'Entry not found' });
  return route.fulfill({ status: 200, headers: cors, body: Buffer.from(body) });
}

export async function downloadChecks(browser, site) {
  const server = await serve(true, site);
  const context = await browser.newContext();
  await context.route(`${HUB}/**`, route);
  const page = await context.newPage();
  const loadFromHub = async (id) => {
    await page.fill('#hub-id', id);
    await page.click('#load-hub');
    await page.waitForFunction(() => document.getElementById('load-status').dataset.state !== 'loading', null, {
      timeout: 30_000,
    });
    return {
      state: await page.getAttribute('#load-status', 'data-state'),
      message: await page.textContent('#load-status'),
    };
  };
  const tokensOf = async (text, want) => {
    await page.fill('#text', text);
    await page.waitForFunction((w) => document.getElementById('map').dataset.tokens === w, JSON.stringify(want), {
      timeout: 15_000,
    });
  };
  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => document.getElementById('model-name').dataset.architecture, null, {
      timeout: 60_000,
    });

    await check('downloads: a Hub model downloads, is verified and replaces the default', async () => {
      const { state, message } = await loadFromHub('org/tiny-bert');
      assert(state === 'ok' && message === 'Loaded.', message);
      assert((await page.getAttribute('#model-name', 'data-architecture')) === 'BertModel', 'not BERT');
      await tokensOf('the cat sat', ['[CLS]', 'the', 'cat', 'sat', '[SEP]']);
    });

    await check('downloads: a shared link naming a Hub model loads it and restores the layer and head', async () => {
      const fresh = await context.newPage();
      try {
        await fresh.goto(
          `http://127.0.0.1:${server.address().port}/#model=org%2Ftiny-bert&text=the+cat&layer=2&head=4`,
        );
        await fresh.waitForFunction(
          () =>
            document.getElementById('model-name').dataset.architecture === 'BertModel' &&
            document.getElementById('map').dataset.tokens === '["[CLS]","the","cat","[SEP]"]',
          null,
          { timeout: 60_000 },
        );
        const at = [await fresh.getAttribute('#map', 'data-layer'), await fresh.getAttribute('#map', 'data-head')];
        assert(at.join() === '1,3', `layer and head ${at}`);
        assert((await fresh.inputValue('#hub-id')) === 'org/tiny-bert', 'hub id not shown');
      } finally {
        await fresh.close();
      }
    });

    const failures = [
      ['offline', 'org/offline', 'could not reach https://huggingface.co to list the files of org/offline'],
      ['a 404', 'org/missing', 'org/missing (revision main) is not on the Hub, or is private (HTTP 404'],
      ['a truncated file', 'org/short', 'the download of model.safetensors is truncated: 1000 bytes of the'],
      ['a wrong checksum', 'org/corrupt', 'model.safetensors has the wrong checksum: sha256'],
    ];
    for (const [what, id, want] of failures) {
      await check(`downloads: ${what} is a clear message, and the previous model keeps working`, async () => {
        const { state, message } = await loadFromHub(id);
        assert(state === 'error', `state ${state}: ${message}`);
        assert(message.includes(want) && message.endsWith('The previous model is still loaded.'), message);
        assert((await page.getAttribute('#model-name', 'data-architecture')) === 'BertModel', 'model replaced');
        await tokensOf('the mat', ['[CLS]', 'the', 'mat', '[SEP]']);
        await tokensOf('the cat', ['[CLS]', 'the', 'cat', '[SEP]']);
      });
    }
  } finally {
    await context.close();
    server.close();
  }
}
