// Every shipped build, so that every suite runs against each (the relaxed-simd ones
// need Node's --experimental-wasm-relaxed-simd, which tests/vitest.config.ts passes).
import { createEngine, type BuildName, type Engine } from '../../dist/node.js';

export const BUILDS: Array<{ build: BuildName; threads: number }> = [
  { build: 'relaxed-simd-threads', threads: 2 },
  { build: 'relaxed-simd', threads: 1 },
  { build: 'simd-threads', threads: 2 },
  { build: 'simd', threads: 1 },
];

export function engineFor(build: BuildName, threads: number): Promise<Engine> {
  return createEngine({ build, threads });
}
