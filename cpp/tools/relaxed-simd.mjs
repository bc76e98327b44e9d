// Rewrites clang 14's relaxed-SIMD multiply-add to the opcode that shipped.
//
//   node --experimental-wasm-relaxed-simd cpp/tools/relaxed-simd.mjs <llvm-objdump> <file.wasm>
//
// Clang 14 (Emscripten 3.1.6) knows relaxed SIMD only as the proposal's prototype:
// __builtin_wasm_fma_f32x4 is encoded as 0xfd 0xaf 0x01 (then "f32x4.qfma", a + b·c), which
// no shipping engine accepts. The final f32x4.relaxed_madd is 0xfd 0x85 0x02 (a·b + c), the
// same length, so each such instruction is rewritten in place; the C++ passes its arguments
// in the final order (cpp/src/gemm.cpp, multiply_add). LLVM's own disassembler finds the
// instructions, so no byte of an immediate or a data segment is ever taken for one. The
// result must validate as WebAssembly with relaxed SIMD, or the build fails.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

import { sections } from './wasm-binary.mjs';

const [objdump, file] = process.argv.slice(2);
if (!objdump || !file) throw new Error('usage: relaxed-simd.mjs <llvm-objdump> <file.wasm>');
const bytes = readFileSync(file);

// llvm-objdump prints instruction offsets from the start of the code section's contents.
const code = [...sections(bytes)].find((s) => s.id === 10)?.start;
if (code === undefined) throw new Error(`${file}: no code section`);

const listing = execFileSync(objdump, ['-d', file], { maxBuffer: 1 << 30, encoding: 'utf8' });
let rewritten = 0;
for (const [, offset] of listing.matchAll(/^\s*([0-9a-f]+):\s+fd af 01\s+f32x4\.fma\s*$/gm)) {
  const at = code + parseInt(offset, 16);
  if (bytes[at] !== 0xfd || bytes[at + 1] !== 0xaf || bytes[at + 2] !== 0x01)
    throw new Error(`${file}: the disassembly puts f32x4.fma at ${at}, but the bytes there are not its opcode`);
  bytes[at + 1] = 0x85;
  bytes[at + 2] = 0x02;
  rewritten++;
}
if (rewritten === 0)
  throw new Error(`${file}: no f32x4.fma to rewrite (not built with -mrelaxed-simd, or rewritten already)`);
if (!WebAssembly.validate(bytes))
  throw new Error(`${file}: not valid WebAssembly after the rewrite (run node with --experimental-wasm-relaxed-simd)`);
writeFileSync(file, bytes);
console.log(`${file}: ${rewritten} f32x4.fma rewritten to f32x4.relaxed_madd`);
