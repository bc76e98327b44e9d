// The demo app. It imports 'attnscope' as a user would: the package's built browser entry.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// Cross-origin isolation: SharedArrayBuffer, hence the threaded build, needs both.
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  publicDir: `${repo}/public`,
  resolve: { alias: { attnscope: `${repo}/dist/browser.js` } },
  // Pre-bundling would move the package away from its wasm files (new URL(..., import.meta.url)).
  optimizeDeps: { exclude: ['attnscope'] },
  worker: { format: 'es' },
  server: { headers: isolation, host: '127.0.0.1', port: 5173, fs: { allow: [repo] } },
  preview: { headers: isolation, host: '127.0.0.1', port: 4173 },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
});
