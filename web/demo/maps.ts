// The one place that indexes a run's attention maps, [layers, heads, n, n] row-major: row i of
// a head's n×n block is how query token i spreads its attention over the key tokens. A run of a long text may
// hold only some of the model's layers (`mapLayers`, in the order of the blocks); layers count from 0 in the model.
import type { Shape } from './protocol.js';

export interface Maps {
  attentions: Float32Array;
  shape: Shape | readonly number[];
  /** The model's layers the maps hold, in their order; absent: every layer, in order. */
  mapLayers?: readonly number[];
}

/** Where (layer, head)'s n×n block starts, or -1 when the maps do not hold that layer. */
export function headOffset(maps: Maps, layer: number, head: number): number {
  const [held, heads, n] = maps.shape;
  const slot = maps.mapLayers ? maps.mapLayers.indexOf(layer) : layer < held ? layer : -1;
  return slot < 0 ? -1 : (slot * heads + head) * n * n;
}

/** Whether the maps hold every one of `layers` layers. */
export function holdsEveryLayer(maps: Maps, layers: number): boolean {
  return maps.shape[0] === layers;
}

/** (layer, head)'s n×n block, as a view into the maps (no copy); null when the maps do not hold that layer. */
export function headMap(maps: Maps, layer: number, head: number): Float32Array | null {
  const n = maps.shape[2];
  const at = headOffset(maps, layer, head);
  return at < 0 ? null : maps.attentions.subarray(at, at + n * n);
}

/** The n×n block of `head` in the maps' `slot`-th layer (counting the layers they hold, in their order). */
export function heldMap(maps: Maps, slot: number, head: number): Float32Array {
  const [, heads, n] = maps.shape;
  const at = (slot * heads + head) * n * n;
  return maps.attentions.subarray(at, at + n * n);
}

/** The weight query token i gives key token j in (layer, head); NaN when the maps do not hold that layer. */
export function weightAt(maps: Maps, layer: number, head: number, i: number, j: number): number {
  const at = headOffset(maps, layer, head);
  return at < 0 ? NaN : maps.attentions[at + i * maps.shape[3] + j];
}

/** The same (layer, head) in maps with fewer layers or heads: the nearest one they have. */
export function clampHead(shape: Maps['shape'], layer: number, head: number): [number, number] {
  return [Math.min(layer, shape[0] - 1), Math.min(head, shape[1] - 1)];
}

/** The maps nested as [layer][head][query][key] arrays, for JSON: the layers they hold, in their order. */
export function nested(maps: Maps): number[][][][] {
  const [held, heads, n] = maps.shape;
  return Array.from({ length: held }, (_, slot) =>
    Array.from({ length: heads }, (_, h) => {
      const map = heldMap(maps, slot, h);
      return Array.from({ length: n }, (_, i) => Array.from(map.subarray(i * n, (i + 1) * n)));
    }),
  );
}
