// exp(x) for x ≤ 0, four lanes at a time: the softmax's inner loop. libm's expf
// in wasm is a scalar call per element; this is a range reduction
// x = k·ln2 + r (|r| ≤ ln2/2) and a degree-6 polynomial for e^r, then 2^k put
// into the exponent bits. Relative error below 2e-7 over [-87, 0]; below that it
// returns 0, as a softmax wants. Native builds use std::exp.
#pragma once

#include <cmath>

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace attnscope::kernels {

#ifdef __wasm_simd128__
inline v128_t exp4(v128_t x) {
  const v128_t lo = wasm_f32x4_splat(-87.3f);
  const v128_t clamped = wasm_f32x4_max(x, lo);
  const v128_t k = wasm_f32x4_nearest(wasm_f32x4_mul(clamped, wasm_f32x4_splat(1.44269504088896341f)));
  // r = x − k·ln2, with ln2 split in two for precision
  v128_t r = wasm_f32x4_sub(clamped, wasm_f32x4_mul(k, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(k, wasm_f32x4_splat(-2.12194440e-4f)));
  v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
  p = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(p, r), r), wasm_f32x4_add(r, wasm_f32x4_splat(1.0f)));
  const v128_t pow2k = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(k), wasm_i32x4_splat(127)), 23);
  const v128_t result = wasm_f32x4_mul(p, pow2k);
  return wasm_v128_and(result, wasm_f32x4_gt(x, lo));  // e^x underflows to 0 below the clamp (and for -inf)
}
#endif

// s[j] = exp(s[j] - max) for j < n; returns their sum.
inline float exp_shifted(float* s, std::int64_t n, float max) {
  float sum = 0.0f;
  std::int64_t j = 0;
#ifdef __wasm_simd128__
  v128_t acc = wasm_f32x4_splat(0.0f);
  const v128_t m = wasm_f32x4_splat(max);
  for (; j + 4 <= n; j += 4) {
    const v128_t e = exp4(wasm_f32x4_sub(wasm_v128_load(s + j), m));
    wasm_v128_store(s + j, e);
    acc = wasm_f32x4_add(acc, e);
  }
  sum = wasm_f32x4_extract_lane(acc, 0) + wasm_f32x4_extract_lane(acc, 1) + wasm_f32x4_extract_lane(acc, 2) +
        wasm_f32x4_extract_lane(acc, 3);
#endif
  for (; j < n; ++j) sum += s[j] = std::exp(s[j] - max);
  return sum;
}

}  // namespace attnscope::kernels
