// The one SIMD helper every kernel shares: a multiply-add that is fused where the build has relaxed SIMD.
#pragma once

#ifdef __wasm_simd128__
#include <wasm_simd128.h>

namespace attnscope::kernels {

// acc + x·b, four lanes at a time.
inline v128_t multiply_add(v128_t x, v128_t b, v128_t acc) {
#ifdef __wasm_relaxed_simd__
  // Relaxed SIMD's f32x4.relaxed_madd(x, b, acc) = x·b + acc, one fused instruction where the CPU has FMA. Clang 14
  // emits its prototype opcode instead, which the build rewrites to the shipped one (cpp/tools/relaxed-simd.mjs):
  // the arguments are in the shipped instruction's order.
  return __builtin_wasm_fma_f32x4(x, b, acc);
#else
  return wasm_f32x4_add(acc, wasm_f32x4_mul(x, b));  // SIMD128 has no fused multiply-add
#endif
}

}  // namespace attnscope::kernels
#endif
