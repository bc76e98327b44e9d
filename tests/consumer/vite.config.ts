// vite.config.ts: pages served cross-origin isolated in dev and preview, so that they have SharedArrayBuffer (threads)
import { defineConfig } from 'vite';

const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  server: { headers },
  preview: { headers },
  optimizeDeps: { exclude: ['attnscope'] }, // pre-bundling would move the package away from its .wasm files
  worker: { format: 'es' }, // the worker is an ES module (it imports, and awaits at the top level)
});
