// The little of a WebAssembly binary's layout the build and its tests read:
// LEB128 numbers and the module's sections.

/** The unsigned LEB128 number in `bytes` at `at`: [value, offset after it]. */
export function readLeb(bytes, at) {
  let value = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    if (!(byte & 0x80)) return [value, at];
  }
}

/** The module's sections in order: their id, and where their contents start and end. */
export function* sections(bytes) {
  for (let at = 8; at < bytes.length;) {
    const [size, start] = readLeb(bytes, at + 1);
    yield { id: bytes[at], start, end: start + size };
    at = start + size;
  }
}
