// A Hub answered where the package runs (a Web Worker, or a page's main thread), its fetch replaced: each repository
// of `repos` holds one file, q.gguf, listed with the SHA-256 and size of `listed` as an LFS file, its bytes streamed in
// 64 KiB chunks, ranges answered. Requests to other origins go to the real fetch.

/** @param {Uint8Array} bytes */
export async function sha256Hex(bytes) {
  const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(sum, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Answers `baseUrl`'s requests until `restore()`; `downloads` names the repositories whose file was downloaded whole.
 * @param {string} baseUrl @param {Record<string, Uint8Array>} repos @param {Uint8Array} listed
 */
export async function fakeHub(baseUrl, repos, listed) {
  const sha256 = await sha256Hex(listed);
  const sibling = {
    rfilename: 'q.gguf',
    size: listed.length,
    blobId: '0'.repeat(40),
    lfs: { sha256, size: listed.length },
  };
  const realFetch = globalThis.fetch;
  const downloads = [];
  globalThis.fetch = async (url, init) => {
    const { origin, pathname } = new URL(String(url));
    if (origin !== baseUrl) return realFetch(url, init);
    if (/^\/api\/models\/(test\/\w+)\/revision\/main$/.test(pathname))
      return new Response(JSON.stringify({ siblings: [sibling] }));
    const file = /^\/(test\/\w+)\/resolve\/main\/q\.gguf$/.exec(pathname);
    const body = file && repos[file[1]];
    if (!body) return new Response('', { status: 404 });
    const range = /^bytes=(\d+)-(\d+)$/.exec(new Headers(init?.headers).get('range') ?? '');
    const part = range ? body.subarray(Number(range[1]), Number(range[2]) + 1) : body;
    if (!range) downloads.push(file[1]);
    let at = 0;
    const stream = new ReadableStream({
      pull: (c) => (at < part.length ? c.enqueue(part.slice(at, (at += 65536))) : c.close()),
    });
    return new Response(stream, { status: range ? 206 : 200, headers: { 'content-length': String(part.length) } });
  };
  return { sha256, downloads, restore: () => (globalThis.fetch = realFetch) };
}
