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

/** What the JavaScript engine offers: `threads` is true, or the reason threads cannot be had. */
export interface Available {
  threads: true | string;
  relaxedSimd: boolean;
}

/** The build an engine loads, its thread count, and why (as `info().reason` reports it). */
export interface Choice {
  build: BuildName;
  threads: number;
  reason: string;
  /** Threads asked for with `threads` that cannot be had, for a one-time warning. */
  refused?: number;
  /**
   * Threads the default would have run (neither `threads` nor `build` given) that cannot be had, for a one-time
   * note: a page served without cross-origin isolation runs on one thread without being asked to.
   */
  defaultRefused?: number;
}

/** Resolves the thread count and the build, saying why; throws naming what is wrong. */
export function chooseBuild(
  options: { threads?: number; build?: BuildName },
  defaultThreads: number,
  available: Available,
): Choice {
  const { threads, build } = options;
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1 && threads <= MAX_THREADS))
    throw new Error(`createEngine: threads must be an integer from 1 to ${MAX_THREADS}, got ${String(threads)}`);
  if (build !== undefined && !Object.hasOwn(BUILD_FILES, build))
    throw new Error(`createEngine: build must be one of ${BUILD_NAMES.join(', ')}, got ${String(build)}`);
  if (build?.endsWith('-threads') && available.threads !== true)
    throw new Error(`createEngine: build '${build}' cannot run here: ${available.threads}`);
  if (build?.startsWith('relaxed-') && !available.relaxedSimd)
    throw new Error(
      `createEngine: build '${build}' needs relaxed SIMD, which this JavaScript engine lacks (Chrome and Edge 114+, Node 22+, or Node 20 with --experimental-wasm-relaxed-simd)`,
    );
  if (build !== undefined && !build.endsWith('-threads') && threads !== undefined && threads > 1)
    throw new Error(`createEngine: build '${build}' runs on one thread, got threads: ${threads}`);
  if (build !== undefined) {
    const n = build.endsWith('-threads') ? (threads ?? defaultThreads) : 1;
    return { build, threads: n, reason: `build '${build}' was asked for, on ${n} thread${n > 1 ? 's' : ''}` };
  }
  const wanted = threads ?? defaultThreads;
  const asked = threads === undefined ? 'by default (the cores, at most 4)' : 'asked for';
  const many = wanted > 1 && available.threads === true;
  const why =
    wanted === 1
      ? `one thread ${asked}${available.threads === true ? '' : ` (more could not be had: ${available.threads})`}`
      : many
        ? `${wanted} threads ${asked}, and SharedArrayBuffer is available`
        : `one thread, not ${wanted} ${asked}: ${available.threads}`;
  const simd = available.relaxedSimd
    ? 'relaxed SIMD validates in this JavaScript engine'
    : 'no relaxed SIMD in this JavaScript engine (Chrome and Edge 114+, Node 22+ have it)';
  return {
    build: `${available.relaxedSimd ? 'relaxed-' : ''}${many ? 'simd-threads' : 'simd'}`,
    threads: many ? wanted : 1,
    reason: `${why}; ${simd}`,
    refused: threads !== undefined && threads > 1 && !many ? threads : undefined,
    defaultRefused: threads === undefined && wanted > 1 && !many ? wanted : undefined,
  };
}

const warned = new Set<string>();

/** `console.warn` once per message key for the life of the page or process. */
export function warnOnce(key: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  console.warn(`attnscope: ${message}`);
}

/** `console.info` once per message key, as {@link warnOnce}: for what is worth knowing, but not wrong. */
export function infoOnce(key: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  console.info(`attnscope: ${message}`);
}
