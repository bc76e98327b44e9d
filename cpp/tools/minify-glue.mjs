// Shortens the browser glue's local names (Emscripten's -O3 without Closure only drops whitespace): an app ships the
// two glues beside the four .wasm, and together they must stay under 5 MB. Names are mangled and nothing else is
// changed (no compression passes), so the glue does what Emscripten wrote; its exports and Module's properties are
// strings and keep their names. Vite's own minifier (oxc, through rolldown) does it, so nothing new is installed.
//
//   node cpp/tools/minify-glue.mjs dist/wasm/web/attnscope-st.js ...
import { readFileSync, writeFileSync } from 'node:fs';
import { minifySync } from 'rolldown/utils';

for (const file of process.argv.slice(2)) {
  const code = readFileSync(file, 'utf8');
  const out = minifySync(file, code, { compress: false, mangle: true, module: true });
  if (out.errors?.length) throw new Error(`${file}: ${out.errors.map((e) => e.message).join('; ')}`);
  writeFileSync(file, out.code);
}
