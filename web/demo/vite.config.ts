// The demo app. It imports 'attnscope' as a user would: the package's built browser entry.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// Cross-origin isolation: SharedArrayBuffer, hence the threaded build, needs both.
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

// The production page's Content-Security-Policy: no inline scripts, no eval beyond
// compiling WebAssembly ('wasm-unsafe-eval'), workers from the site or from blob:
// (the engine's pthreads), connections to the site and the Hugging Face Hub only.
// Vite's dev server injects styles inline, so dev runs without it.
export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self' blob:",
  "connect-src 'self' https://huggingface.co https://*.huggingface.co https://*.hf.co",
  "img-src 'self' data: blob:",
  "style-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

export default defineConfig({
  plugins: [
    {
      name: 'attnscope-csp',
      apply: 'build',
      transformIndexHtml: (html) =>
        html.replace('<head>', `<head>\n    <meta http-equiv="Content-Security-Policy" content="${CSP}" />`),
    },
  ],
  root: fileURLToPath(new URL('.', import.meta.url)),
  publicDir: `${repo}/public`,
  resolve: {
    alias: [
      { find: /^attnscope$/, replacement: `${repo}/dist/browser.js` },
      { find: /^attnscope\/models\/default$/, replacement: `${repo}/dist/models/default.js` },
    ],
  },
  // Pre-bundling would move the package away from its wasm files (new URL(..., import.meta.url)).
  optimizeDeps: { exclude: ['attnscope'] },
  worker: { format: 'es' },
  server: { headers: isolation, host: '127.0.0.1', port: 5173, fs: { allow: [repo] } },
  preview: { headers: isolation, host: '127.0.0.1', port: 4173 },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
});
