// The GEMM micro-kernel's GFLOPS on one thread, operands in L1 cache: the ceiling the bench holds GEMMs
// and attention to. Built with the wasm builds from each of the single-threaded libraries
// (build/wasm/bench/kernel_peak_st.js, SIMD128; kernel_peak_st-relaxed.js, relaxed SIMD) and loaded by
// bench/engines/attnscope.mjs, so that each engine process measures its own build's kernel right after
// its timed calls. Not part of the engine: an app has no use for it.
#include <emscripten/emscripten.h>

#include "kernels/gemm.hpp"

extern "C" EMSCRIPTEN_KEEPALIVE double kernel_peak(double seconds) {
  return attnscope::kernels::micro_kernel_gflops(seconds);
}
