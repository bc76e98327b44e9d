// Which of the four builds an engine loads, from what the JavaScript engine offers.
import { BUILD_FILES } from './raw.js';
import type { BuildName } from './types.js';

export const MAX_THREADS = 64;

// (module (func (param v128 v128 v128) (result v128) local.get 0 local.get 1 local.get 2 f32x4.relaxed_madd))
// prettier-ignore
const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x08, 0x01, 0x60, 0x03, 0x7b, 0x7b, 0x7b, 0x01, 0x7b, // type: (v128 v128 v128) -> v128
  0x03, 0x02, 0x01, 0x00, // one function of that type
  0x0a, 0x0d, 0x01, 0x0b, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0xfd, 0x85, 0x02, 0x0b, // its body
]);

/** Whether this JS engine runs relaxed SIMD (the shipped opcodes): Chrome and Edge 114+, Node 22+. */
export function relaxedSimdAvailable(): boolean {
  return WebAssembly.validate(RELAXED_SIMD_PROBE);
}

const BUILD_NAMES = Object.keys(BUILD_FILES).map((b) => `'${b}'`);

/** Resolves the thread count and the build, or throws naming what is wrong. */
export function chooseBuild(
  options: { threads?: number; build?: BuildName },
  defaultThreads: number,
  available: { threads: boolean; relaxedSimd: boolean },
): { build: BuildName; threads: number } {
  const { threads, build } = options;
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1 && threads <= MAX_THREADS))
    throw new Error(`createEngine: threads must be an integer from 1 to ${MAX_THREADS}, got ${String(threads)}`);
  if (build !== undefined && !Object.hasOwn(BUILD_FILES, build))
    throw new Error(`createEngine: build must be one of ${BUILD_NAMES.join(', ')}, got ${String(build)}`);
  if (build?.endsWith('-threads') && !available.threads)
    throw new Error(
      `createEngine: build '${build}' needs SharedArrayBuffer (and, in a page, cross-origin isolation via COOP/COEP headers)`,
    );
  if (build?.startsWith('relaxed-') && !available.relaxedSimd)
    throw new Error(
      `createEngine: build '${build}' needs relaxed SIMD, which this JavaScript engine lacks (Chrome and Edge 114+, Node 22+, or Node 20 with --experimental-wasm-relaxed-simd)`,
    );
  const single = build !== undefined && !build.endsWith('-threads');
  const wanted = threads ?? (single ? 1 : defaultThreads);
  const chosen: BuildName =
    build ?? `${available.relaxedSimd ? 'relaxed-' : ''}${available.threads && wanted > 1 ? 'simd-threads' : 'simd'}`;
  return { build: chosen, threads: chosen.endsWith('-threads') ? wanted : 1 };
}
