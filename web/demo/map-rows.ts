// The one place that indexes a run's attention maps, [layers, heads, n, n_k] row-major: row i of
// a head's block is how query token i spreads its attention over the key tokens (n_k = n but in cross-attention,
// where the keys are another text's tokens). A run of a long text may
// hold only some of the model's layers (`mapLayers`, in the order of the blocks); layers count from 0 in the model.
// While a language model generates, the maps grow a row per token without being copied: the run's square blocks
// stay as they are, and each new token's rows are kept beside them (`grown`).
import type { MapRows } from './draw/pooled.js';
import type { RunResult, Shape } from './protocol.js';

export interface Maps {
  /** [held, heads, base, base]: the run's blocks, base = n − grown.length. */
  attentions: Float32Array;
  /** [held, heads, n, n_k] */
  shape: Shape | readonly number[];
  /** The model's layers the maps hold, in their order; absent: every layer, in order. */
  mapLayers?: readonly number[];
  /** Rows added since the run: row base + t of every held map, `[held, heads, base + t + 1]`. */
  grown?: readonly Float32Array[];
}

/** Tokens in the run's square blocks, before any grown rows. */
export const baseTokens = (maps: Maps) => maps.shape[2] - (maps.grown?.length ?? 0);

/** Columns of the run's blocks: the keys (a growing map's blocks are square, base × base). */
const baseColumns = (maps: Maps) => (maps.grown?.length ? baseTokens(maps) : maps.shape[3]);

/**
 * Whether a run's maps are a decoder's own heads on its own ids, row i depending on ids 0 … i alone: two such runs
 * of one model share the rows of the ids they begin with (sharedRows). Not an encoder-decoder's decoder rows,
 * which see the whole source too, nor the parameter-free or cross-attention maps.
 */
export const ownRows = (r: RunResult) =>
  r.causal && r.mode === 'model' && r.set === 'self' && r.ids.length === r.shape[2];

/** The slot of `layer` among the layers the maps hold, or -1. */
export function slotOf(maps: Maps, layer: number): number {
  return maps.mapLayers ? maps.mapLayers.indexOf(layer) : layer < maps.shape[0] ? layer : -1;
}

/** Row i of the head in `slot`: n weights for the run's rows (causal ones end in zeros), i + 1 for grown ones. */
export function rowOf(maps: Maps, slot: number, head: number, i: number): Float32Array {
  const heads = maps.shape[1];
  const base = baseTokens(maps);
  if (i < base) {
    const m = baseColumns(maps);
    const at = ((slot * heads + head) * base + i) * m;
    return maps.attentions.subarray(at, at + m);
  }
  const width = i + 1;
  const at = (slot * heads + head) * width;
  return maps.grown![i - base].subarray(at, at + width);
}

/** Column j of the head in `slot` over the run's rows: how much each query token gives key token j. */
export function columnOf(maps: Maps, slot: number, head: number, j: number): Float32Array {
  const n = baseTokens(maps);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = rowOf(maps, slot, head, i)[j];
  return out;
}

/** (layer, head)'s map as rows, or null when the maps do not hold that layer. */
export function headRows(maps: Maps, layer: number, head: number): MapRows | null {
  const slot = slotOf(maps, layer);
  return slot < 0 ? null : { n: maps.shape[2], cols: maps.shape[3], row: (i) => rowOf(maps, slot, head, i) };
}

/** A row-major n × n matrix (rollout, flow) as rows. */
export const matrixRows = (values: Float32Array, n: number): MapRows => ({
  n,
  cols: n,
  row: (i) => values.subarray(i * n, (i + 1) * n),
});

/** The weight query token i gives key token j in (layer, head); NaN when the maps do not hold that layer. */
export function weightAt(maps: Maps, layer: number, head: number, i: number, j: number): number {
  const slot = slotOf(maps, layer);
  return slot < 0 ? NaN : (rowOf(maps, slot, head, i)[j] ?? 0);
}

/**
 * (layer, head)'s n×n block, as a view into the maps (no copy); null when the maps do not hold that layer.
 * Only for maps without grown rows (a run's, not a generation's in progress).
 */
export function headMap(maps: Maps, layer: number, head: number): Float32Array | null {
  const slot = slotOf(maps, layer);
  return slot < 0 ? null : heldMap(maps, slot, head);
}

/** The n × n_k block of `head` in the maps' `slot`-th layer (counting the layers they hold, in their order). */
export function heldMap(maps: Maps, slot: number, head: number): Float32Array {
  const [, heads, n, m] = maps.shape;
  if (maps.grown?.length) throw new Error('heldMap: these maps are still growing (generation); read them by rows');
  const at = (slot * heads + head) * n * m;
  return maps.attentions.subarray(at, at + n * m);
}

/** Every head's map of the layer in `slot`, `[heads, n, n_k]` (a view of the run's blocks). */
export function layerMaps(maps: Maps, slot: number): Float32Array {
  const [, heads, n, m] = maps.shape;
  if (maps.grown?.length) throw new Error('layerMaps: these maps are still growing (generation); read them by rows');
  return maps.attentions.subarray(slot * heads * n * m, (slot + 1) * heads * n * m);
}

/** The same (layer, head) in maps with fewer layers or heads: the nearest one they have. */
export function clampHead(shape: Maps['shape'], layer: number, head: number): [number, number] {
  return [Math.min(layer, shape[0] - 1), Math.min(head, shape[1] - 1)];
}

/** The maps nested as [layer][head][query][key] arrays, for JSON: the layers they hold, in their order. */
export function nested(maps: Maps): number[][][][] {
  const [held, heads, n, m] = maps.shape;
  return Array.from({ length: held }, (_, slot) =>
    Array.from({ length: heads }, (_, h) =>
      Array.from({ length: n }, (_, i) => {
        const row = Array.from(rowOf(maps, slot, h, i));
        while (row.length < m) row.push(0);
        return row;
      }),
    ),
  );
}
