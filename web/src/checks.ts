// Checks of what JS types can get wrong, shared by the engine and the analysis calls;
// C++ checks shapes and values and names them in its own errors.

export function typeName(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'Array';
  if (typeof x === 'object') return (x as object).constructor?.name ?? 'object';
  return typeof x;
}

export function checkTensor(op: string, name: string, t: unknown, optional = false): void {
  if (t === undefined && optional) return;
  if (typeof t !== 'object' || t === null || !('data' in t) || !('shape' in t))
    throw new Error(`${op}: ${name} must be { data: Float32Array, shape: number[] }, got ${typeName(t)}`);
  const { data, shape } = t as { data: unknown; shape: unknown };
  if (!(data instanceof Float32Array))
    throw new Error(`${op}: ${name}.data must be a Float32Array, got ${typeName(data)}`);
  checkShapeList(op, name, shape);
}

export function checkShapeList(op: string, name: string, shape: unknown): void {
  if (!Array.isArray(shape) || !shape.every((d) => typeof d === 'number'))
    throw new Error(`${op}: ${name}.shape must be an array of numbers, got ${typeName(shape)}`);
}

export function checkMask(op: string, mask: unknown): void {
  if (mask === undefined) return;
  if (typeof mask !== 'object' || mask === null || !('data' in mask) || !('shape' in mask))
    throw new Error(`${op}: mask must be { data: Uint8Array | Float32Array, shape: number[] }, got ${typeName(mask)}`);
  const { data, shape } = mask as { data: unknown; shape: unknown };
  if (!(data instanceof Uint8Array) && !(data instanceof Float32Array))
    throw new Error(
      `${op}: mask.data must be a Uint8Array (1 = attend) or a Float32Array (additive), got ${typeName(data)}`,
    );
  checkShapeList(op, 'mask', shape);
}

export function checkOption(
  op: string,
  options: Record<string, unknown>,
  name: string,
  type: 'boolean' | 'number',
): void {
  const v = options[name];
  if (v !== undefined && typeof v !== type)
    throw new Error(`${op}: options.${name} must be a ${type}, got ${typeName(v)}`);
}

export function checkOptions(
  op: string,
  options: unknown,
  known: Record<string, 'boolean' | 'number' | 'other'>,
): Record<string, unknown> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null)
    throw new Error(`${op}: options must be an object, got ${typeName(options)}`);
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    const kind = known[key];
    if (!kind) throw new Error(`${op}: unknown option '${key}' (known: ${Object.keys(known).join(', ')})`);
    if (kind !== 'other') checkOption(op, o, key, kind);
  }
  return o;
}
