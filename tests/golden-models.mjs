// The small checkpoints in tests/golden/models (made by tests/golden/make_model_goldens.py),
// as model files. Plain JS: Vitest and the browser test (Node) both import it.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

const root = new URL('./golden/models/', import.meta.url);

/** The checkpoints' names: bert, bert-sharded, distilbert-bf16, gpt2-f16. */
export const GOLDEN_MODELS = readdirSync(root).sort();

/**
 * A checkpoint's files (config.json and weights), without its golden.json.
 * @param {string} name
 * @returns {Record<string, Uint8Array>}
 */
export function goldenModelFiles(name) {
  const dir = new URL(`${name}/`, root);
  return Object.fromEntries(
    readdirSync(dir)
      .filter((f) => f !== 'golden.json')
      .map((f) => [f, new Uint8Array(readFileSync(new URL(f, dir)))]),
  );
}

/** A vocab.txt for the 64-token BERT checkpoints: a few real words, then fillers. */
export const TINY_BERT_VOCAB = [
  ...['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'cat', 'sat', 'on', 'mat', '.', '##s'],
  ...Array.from({ length: 52 }, (_, i) => `w${i}`),
];

/**
 * The Hub's file list for a repository, as `api/models/<id>/revision/<rev>?blobs=true`
 * gives it: every file's size, LFS files (weights) with their SHA-256, others with
 * their git blob id (SHA-1 of "blob <size>\0" + bytes).
 * @param {Record<string, Uint8Array>} files
 * @returns {string} JSON
 */
export function hubListing(files) {
  const siblings = Object.entries(files).map(([rfilename, bytes]) => {
    if (rfilename.endsWith('.safetensors'))
      return {
        rfilename,
        size: bytes.length,
        blobId: createHash('sha1').update('an LFS pointer, not the file').digest('hex'),
        lfs: { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length, pointerSize: 134 },
      };
    return {
      rfilename,
      size: bytes.length,
      blobId: createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex'),
    };
  });
  return JSON.stringify({ id: 'test', sha: '0'.repeat(40), siblings });
}
