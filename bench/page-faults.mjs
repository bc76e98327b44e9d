// What returning a large array costs on this machine: copying 201 MB (the weights of 12 heads at n = 2048)
// into a new JavaScript array, whose pages are touched for the first time, against copying it again into
// the same array.
//   node bench/page-faults.mjs
const N = 12 * 2048 * 2048;
const src = new Float32Array(N).fill(1);
for (let round = 0; round < 3; round++) {
  let start = performance.now();
  const fresh = new Float32Array(src);
  const first = performance.now() - start;
  start = performance.now();
  fresh.set(src);
  const again = performance.now() - start;
  console.log(
    `copy of ${((N * 4) / 1e6).toFixed(0)} MB into a new array ${first.toFixed(0)} ms, into the same array again ` +
      `${again.toFixed(0)} ms: ${(((first - again) / ((N * 4) / 4096)) * 1e3).toFixed(1)} µs per first-touched 4 KiB page`,
  );
}
