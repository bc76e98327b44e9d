import { defineConfig } from 'vitest/config';

// The documentation's own tests (.ci/test's "docs" stage): docs/api.md's snippets run against the built package,
// every link and anchor in README.md and docs/ resolves, and the bench's plot draws what it is given.
export default defineConfig({
  test: {
    include: ['tests/docs/**/*.test.ts'],
    root: new URL('../..', import.meta.url).pathname,
    testTimeout: 120_000,
    maxWorkers: 2,
  },
});
