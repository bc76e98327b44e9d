// Checks that the shipped binaries really use what the build flags promise: SIMD128
// instructions and bulk memory (memset and memcpy as memory.fill and memory.copy) in every
// build, shared memory in the threaded ones only, and relaxed SIMD in the relaxed ones only
// (they must not validate without it, and must with it).
// Reads SIMD128 from binaryen's wasm-dis (installed with emscripten), which predates the
// shipped relaxed-SIMD opcodes; memory limits straight from the binary.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import { readLeb, sections } from '../cpp/tools/wasm-binary.mjs';

const builds = [
  { file: 'attnscope-mt', shared: true, relaxed: false },
  { file: 'attnscope-st', shared: false, relaxed: false },
  { file: 'attnscope-mt-relaxed', shared: true, relaxed: true },
  { file: 'attnscope-st-relaxed', shared: false, relaxed: true },
];

/** Whether the module's memory (defined or imported) is shared: bit 1 of its limits flags. */
function sharedMemory(bytes) {
  let at;
  const leb = () => {
    const [value, next] = readLeb(bytes, at);
    at = next;
    return value;
  };
  const name = () => {
    const length = leb();
    at += length;
  };
  const limits = () => {
    const flags = bytes[at++];
    leb();
    if (flags & 1) leb();
    return flags;
  };
  for (const { id, start } of sections(bytes)) {
    at = start;
    if (id === 5 && leb() > 0) return (limits() & 2) !== 0; // the memory section's first memory
    if (id === 2) {
      for (let count = leb(); count > 0; count--) {
        name();
        name();
        const kind = bytes[at++];
        if (kind === 2) return (limits() & 2) !== 0;
        if (kind === 0)
          leb(); // function: type index
        else if (kind === 1)
          (at++, limits()); // table: element type, limits
        else if (kind === 3)
          at += 2; // global: type, mutability
        else if (kind === 4) (at++, leb()); // tag: attribute, type index
      }
    }
  }
  return false;
}

/** SIMD128 and bulk-memory instructions in a binary's disassembly, counted once per file. */
const counts = new Map();
function instructions(path) {
  if (!counts.has(path)) {
    const text = execFileSync('wasm-dis', [path], { maxBuffer: 1 << 28, encoding: 'utf8' });
    counts.set(path, {
      simd: (text.match(/\((?:v128|f32x4|i32x4|i8x16|i16x8|i64x2|f64x2)\.[a-z_0-9]+/g) ?? []).length,
      bulk: (text.match(/\(memory\.(?:fill|copy)\b/g) ?? []).length,
    });
  }
  return counts.get(path);
}

const validates = (path, flags) =>
  execFileSync(
    process.execPath,
    [...flags, '-e', `process.stdout.write(String(WebAssembly.validate(require('fs').readFileSync('${path}'))))`],
    { encoding: 'utf8' },
  ) === 'true';

let failures = 0;
for (const env of ['web', 'node']) {
  for (const { file, shared, relaxed } of builds) {
    const path = `dist/wasm/${env}/${file}.wasm`;
    const isShared = sharedMemory(readFileSync(path));
    const plain = validates(path, []);
    const withRelaxed = validates(path, ['--experimental-wasm-relaxed-simd']);
    // The relaxed build is its twin with -mrelaxed-simd: its SIMD128 is counted on the twin.
    const { simd, bulk } = instructions(path.replace('-relaxed', ''));
    const ok = simd > 100 && bulk > 100 && isShared === shared && withRelaxed && plain === !relaxed;
    if (!ok) failures++;
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} ${path}: ${simd} SIMD128 and ${bulk} bulk-memory instructions, ` +
        `memory ${isShared ? 'shared' : 'not shared'}, ` +
        `validates ${plain ? 'with or without relaxed SIMD' : withRelaxed ? 'only with relaxed SIMD' : 'never'}`,
    );
  }
}
process.exit(failures ? 1 : 0);
