import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/js/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Each file loads its own wasm instances; two at a time fits two cores.
    maxWorkers: 2,
    // Node 20 runs relaxed SIMD behind this flag (Node 22 and browsers without): with it every
    // suite also covers the relaxed-simd builds.
    execArgv: ['--experimental-wasm-relaxed-simd'],
  },
});
