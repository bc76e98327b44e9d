// Checks that the shipped binaries really use what the build flags promise:
// SIMD128 instructions in both builds, shared memory in the threaded one only.
// Reads the disassembly from binaryen's wasm-dis (installed with emscripten).
import { execFileSync } from 'node:child_process';

const builds = [
  { file: 'attnscope-mt.wasm', shared: true },
  { file: 'attnscope-st.wasm', shared: false },
];
let failures = 0;
for (const env of ['web', 'node']) {
  for (const { file, shared } of builds) {
    const path = `dist/wasm/${env}/${file}`;
    const text = execFileSync('wasm-dis', [path], { maxBuffer: 1 << 28, encoding: 'utf8' });
    const simd = (text.match(/\((?:v128|f32x4|i32x4|i8x16|i16x8|i64x2|f64x2)\.[a-z_0-9]+/g) ?? []).length;
    const memory = text.match(/\(memory [^\n]*/)?.[0] ?? '';
    const isShared = memory.includes('(shared');
    const ok = simd > 100 && isShared === shared;
    if (!ok) failures++;
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} ${path}: ${simd} SIMD128 instructions, memory ${isShared ? 'shared' : 'not shared'}`,
    );
  }
}
process.exit(failures ? 1 : 0);
