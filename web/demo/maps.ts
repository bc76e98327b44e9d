// The one place that indexes a run's attention maps, [layers, heads, n, n] row-major: row i of
// a head's n×n block is how query token i spreads its attention over the key tokens.
import type { Shape } from './protocol.js';

export interface Maps {
  attentions: Float32Array;
  shape: Shape | readonly number[];
}

/** Where (layer, head)'s n×n block starts. */
export function headOffset(shape: Maps['shape'], layer: number, head: number): number {
  const [, heads, n] = shape;
  return (layer * heads + head) * n * n;
}

/** (layer, head)'s n×n block, as a view into the maps (no copy). */
export function headMap(maps: Maps, layer: number, head: number): Float32Array {
  const n = maps.shape[2];
  const at = headOffset(maps.shape, layer, head);
  return maps.attentions.subarray(at, at + n * n);
}

/** The weight query token i gives key token j in (layer, head). */
export function weightAt(maps: Maps, layer: number, head: number, i: number, j: number): number {
  return maps.attentions[headOffset(maps.shape, layer, head) + i * maps.shape[3] + j];
}

/** The same (layer, head) in maps with fewer layers or heads: the nearest one they have. */
export function clampHead(shape: Maps['shape'], layer: number, head: number): [number, number] {
  return [Math.min(layer, shape[0] - 1), Math.min(head, shape[1] - 1)];
}

/** The maps nested as [layer][head][query][key] arrays, for JSON. */
export function nested(maps: Maps): number[][][][] {
  const [layers, heads, n] = maps.shape;
  return Array.from({ length: layers }, (_, l) =>
    Array.from({ length: heads }, (_, h) => {
      const map = headMap(maps, l, h);
      return Array.from({ length: n }, (_, i) => Array.from(map.subarray(i * n, (i + 1) * n)));
    }),
  );
}
