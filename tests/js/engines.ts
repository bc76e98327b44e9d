// Both shipped builds, so that every suite runs against each.
import { createEngine, type BuildName, type Engine } from '../../dist/node.js';

export const BUILDS: Array<{ build: BuildName; threads: number }> = [
  { build: 'simd-threads', threads: 2 },
  { build: 'simd', threads: 1 },
];

export function engineFor(build: BuildName, threads: number): Promise<Engine> {
  return createEngine({ build, threads });
}
