// Checks of what JS types can get wrong, shared by the engine and the analysis calls; C++ checks shapes and
// values. Both sides word their messages from one table, C++'s (cpp/src/runtime/messages.cpp), which the module
// hands over when it loads.

let table: Record<string, string> = {};

/** Takes the message table of a loaded module (every build holds the same). */
export function useMessages(messages: Record<string, string>): void {
  table = messages;
}

/** The table's message of `kind`, each {name} filled in from `values`. */
export function message(kind: string, values: Record<string, string | number>): string {
  const text = table[kind];
  if (text === undefined) throw new Error(`attnscope: the wasm module has no message of kind '${kind}'`);
  return text.replace(/\{(\w+)\}/g, (whole: string, name: string) => (name in values ? String(values[name]) : whole));
}

export function typeName(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'Array';
  if (typeof x === 'object') return (x as object).constructor?.name ?? 'object';
  return typeof x;
}

export function checkTensor(op: string, name: string, t: unknown, optional = false): void {
  if (t === undefined && optional) return;
  if (typeof t !== 'object' || t === null || !('data' in t) || !('shape' in t))
    throw new Error(message('tensor', { op, name, got: typeName(t) }));
  const { data, shape } = t as { data: unknown; shape: unknown };
  if (!(data instanceof Float32Array)) throw new Error(message('tensor_data', { op, name, got: typeName(data) }));
  checkShapeList(op, name, shape);
}

export function checkShapeList(op: string, name: string, shape: unknown): void {
  if (!Array.isArray(shape) || !shape.every((d) => typeof d === 'number'))
    throw new Error(message('shape_list', { op, name, got: typeName(shape) }));
}

export function checkMask(op: string, mask: unknown): void {
  if (mask === undefined) return;
  if (typeof mask !== 'object' || mask === null || !('data' in mask) || !('shape' in mask))
    throw new Error(message('mask', { op, got: typeName(mask) }));
  const { data, shape } = mask as { data: unknown; shape: unknown };
  if (!(data instanceof Uint8Array) && !(data instanceof Float32Array))
    throw new Error(message('mask_data', { op, got: typeName(data) }));
  checkShapeList(op, 'mask', shape);
}

/** The results a call can write into the caller's arrays (options.into). */
const RESULT_ARRAYS: readonly string[] = ['output', 'weights'];
/** A model run's: its maps (RunOptions.into). */
export const MAP_ARRAYS: readonly string[] = ['attentions'];

/** Whether two arrays' bytes overlap: views of one buffer whose ranges meet. */
function overlaps(a: ArrayBufferView, b: ArrayBufferView): boolean {
  return (
    a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength
  );
}

/**
 * options.into: an object whose present keys are results, each a Float32Array (C++ checks their lengths), none
 * sharing memory with another or with the call's `inputs` (by name, each a tensor or mask or absent): the engine
 * writes a result while it may still read the inputs (one thread writes the weights as it computes them, before a
 * one-shot call reads `wo`).
 */
export function checkInto(
  op: string,
  into: unknown,
  inputs: Record<string, unknown> = {},
  names: readonly string[] = RESULT_ARRAYS,
): void {
  if (into === undefined) return;
  const known = names.map((n) => `${n}?`).join(', ');
  if (typeof into !== 'object' || into === null || ArrayBuffer.isView(into) || Array.isArray(into))
    throw new Error(message('into', { op, known, got: typeName(into) }));
  const given: Array<[string, Float32Array]> = [];
  for (const [name, array] of Object.entries(into)) {
    if (!names.includes(name))
      throw new Error(message('unknown_option', { op, name: `into.${name}`, known: names.join(', ') }));
    if (array !== undefined && !(array instanceof Float32Array))
      throw new Error(message('into_array', { op, name, got: typeName(array) }));
    if (array !== undefined) given.push([name, array]);
  }
  given.forEach(([name, array], i) => {
    for (const [other, earlier] of given.slice(0, i))
      if (overlaps(array, earlier))
        throw new Error(message('into_shared', { op, name, other: `options.into.${other}` }));
    for (const [input, value] of Object.entries(inputs)) {
      const data = (value as { data?: unknown } | undefined)?.data;
      if (ArrayBuffer.isView(data) && overlaps(array, data))
        throw new Error(message('into_shared', { op, name, other: input }));
    }
  });
}

export function checkOption(
  op: string,
  options: Record<string, unknown>,
  name: string,
  type: 'boolean' | 'number',
): void {
  const v = options[name];
  if (v !== undefined && typeof v !== type)
    throw new Error(message('option_type', { op, name, type, got: typeName(v) }));
}

export function checkOptions(
  op: string,
  options: unknown,
  known: Record<string, 'boolean' | 'number' | 'other'>,
): Record<string, unknown> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null)
    throw new Error(message('options', { op, got: typeName(options) }));
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    const kind = known[key];
    if (!kind) throw new Error(message('unknown_option', { op, name: key, known: Object.keys(known).join(', ') }));
    if (kind !== 'other') checkOption(op, o, key, kind);
  }
  return o;
}
