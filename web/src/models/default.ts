/**
 * `attnscope/models/default`: the opt-in for the embedded default model, Universal Sentence Encoder lite
 * (2 layers × 4 heads), in browsers. Import it once, anywhere in the app, and `engine.loadModel('default')`
 * works; bundlers then reference its files (28 MB: config, vocabulary and two weight shards of at most 20 MiB),
 * emitting them as files or, for the two small JSON files, inlining them as `data:` URLs (Vite does so under its
 * 4 KiB `assetsInlineLimit`). In Node, `loadModel('default')` reads the files from the package without it.
 *
 * ```ts
 * import 'attnscope/models/default';
 * ```
 * @packageDocumentation
 */
import { registerDefaultModel } from '../default-model.js';

/**
 * The default model's files, by name, at the URLs the bundler gave them. Exported by `attnscope/models/default`,
 * whose import is what lets `engine.loadModel('default')` run in a browser.
 */
export const defaultModelFiles: Readonly<Record<string, URL>> = Object.freeze({
  'config.json': new URL('./default/config.json', import.meta.url),
  'model.safetensors.index.json': new URL('./default/model.safetensors.index.json', import.meta.url),
  'model-00001-of-00002.safetensors': new URL('./default/model-00001-of-00002.safetensors', import.meta.url),
  'model-00002-of-00002.safetensors': new URL('./default/model-00002-of-00002.safetensors', import.meta.url),
  'vocab.json': new URL('./default/vocab.json', import.meta.url),
});

registerDefaultModel(defaultModelFiles);
