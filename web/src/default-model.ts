// Where a page finds the embedded default model: nowhere until the app imports 'attnscope/models/default',
// whose `new URL(…, import.meta.url)` references make bundlers emit the files. An app that never imports it
// ships no model bytes.

let urls: Readonly<Record<string, URL>> | undefined;

/** Called by `attnscope/models/default` on import. */
export function registerDefaultModel(files: Readonly<Record<string, URL>>): void {
  urls = files;
}

/** The default model's file URLs, once `attnscope/models/default` was imported. */
export function defaultModelUrls(): Readonly<Record<string, URL>> | undefined {
  return urls;
}
