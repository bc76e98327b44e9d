// The Hugging Face Hub as the language-model browser tests see it: https://huggingface.co answered by the
// test (Playwright routes the page's and the worker's requests), with small checkpoints of every decoder
// family the page shows, a model too large to fit, and one whose weights stop short. Every request is
// recorded, so a test can say which files were (and were not) downloaded.
import { hubListing } from '../golden-models.mjs';
import { decoderCheckpoint } from '../llm/checkpoints.mjs';
import { gpt2Checkpoint } from '../llm/gpt2.mjs';
import { inductionCheckpoint } from '../llm/planted.mjs';
import { bartWithTokenizer } from '../seq2seq.mjs';

export const HUB = 'https://huggingface.co';

/** The planted-induction Llama, with 2,048 positions: the page's longest input. */
export const planted = inductionCheckpoint({ maxPositions: 2048 });
const gemma = decoderCheckpoint({
  arch: 'gemma3',
  layerTypes: ['sliding_attention', 'full_attention'],
  window: 4,
  tokenizer: true,
});
/** Twelve layers of eight heads, 2,048 positions: past about 1,590 tokens every layer's maps do not fit one call. */
export const deep = decoderCheckpoint({
  arch: 'llama',
  layers: 12,
  heads: 8,
  kvHeads: 2,
  maxPositions: 2048,
  tokenizer: true,
});
/** The planted checkpoint with no end-of-text token: a generation runs as long as it is asked to. */
const endless = (() => {
  const config = JSON.parse(new TextDecoder().decode(planted.files['config.json']));
  delete config.eos_token_id;
  return { ...planted.files, 'config.json': new TextEncoder().encode(JSON.stringify(config)) };
})();
/** Two layers and 4,096 positions: the model reads more tokens than the page runs (2,048). */
const long = decoderCheckpoint({ arch: 'llama', maxPositions: 4096, tokenizer: true });
const weights = planted.files['model.safetensors'];
/** A Qwen 3 as a GGUF with its own tokenizer (the converter's twin of the checkpoint). */
export const qwenGguf = decoderCheckpoint({ arch: 'qwen3', tokenizer: true }).gguf();
/** A BART in the Hub's layout with a byte-level tokenizer.json (tests/seq2seq.mjs). */
export const bart = bartWithTokenizer();

/** id → [the files the listing describes, the bytes served]. */
export const REPOS = {
  'test/planted-llama': [planted.files, planted.files],
  'test/planted-endless': [endless, endless],
  'test/gemma3-local': [gemma.files, gemma.files],
  'test/gpt2': [gpt2Checkpoint(), gpt2Checkpoint()],
  'test/deep-llama': [deep.files, deep.files],
  'test/long-llama': [long.files, long.files],
  // The listing says 3 GB of weights: the page must refuse before asking for them.
  'test/huge': [{ ...planted.files, 'model.safetensors': { length: 5e9 } }, planted.files],
  // The weights stop a third of the way: a failed download.
  'test/cut-short': [planted.files, { ...planted.files, 'model.safetensors': weights.subarray(0, weights.length / 3) }],
  // A picker model of another family, under its real id: its sizes come from this listing.
  'facebook/bart-base': [bart, bart],
  // A GGUF repository (no config.json): the page loads `test/qwen3-GGUF/qwen3-f32.gguf` as typed.
  'test/qwen3-GGUF': [{ 'qwen3-f32.gguf': qwenGguf }, { 'qwen3-f32.gguf': qwenGguf }],
};

/** Routes the Hub for a browser context; returns the URLs asked for, in order. */
export async function routeHub(context) {
  const asked = [];
  await context.route(`${HUB}/**`, (route) => {
    const url = new URL(route.request().url());
    asked.push(url.pathname);
    const cors = { 'access-control-allow-origin': '*' };
    const api = /^\/api\/models\/(.+)\/revision\/main$/.exec(url.pathname);
    const file = /^\/(.+)\/resolve\/main\/([^/]+)$/.exec(url.pathname);
    const repo = REPOS[api?.[1] ?? file?.[1]];
    if (!repo) return route.fulfill({ status: 404, headers: cors, body: '{"error":"Repository not found"}' });
    if (api)
      return route.fulfill({ status: 200, headers: cors, contentType: 'application/json', body: listing(repo[0]) });
    const body = repo[1][file[2]];
    if (!body) return route.fulfill({ status: 404, headers: cors, body: 'Entry not found' });
    return route.fulfill({ status: 200, headers: cors, body: Buffer.from(body) });
  });
  return asked;
}

/** The listing, with a stated size for files that are only a size (the huge model's weights). */
function listing(files) {
  const real = Object.fromEntries(Object.entries(files).filter(([, v]) => v instanceof Uint8Array));
  const json = JSON.parse(hubListing(real));
  for (const [name, v] of Object.entries(files))
    if (!(v instanceof Uint8Array))
      json.siblings.push({
        rfilename: name,
        size: v.length,
        blobId: '0'.repeat(40),
        lfs: { sha256: '0'.repeat(64), size: v.length },
      });
  return JSON.stringify(json);
}
