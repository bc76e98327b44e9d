import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/js/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Each file loads its own wasm instances; two at a time fits two cores.
    maxWorkers: 2,
  },
});
