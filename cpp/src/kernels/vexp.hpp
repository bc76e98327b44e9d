// exp(x) for x ≤ 0, four lanes at a time: the softmax's inner loop. libm's expf
// in wasm is a scalar call per element; this is a range reduction
// x = k·ln2 + r (|r| ≤ ln2/2) and a degree-7 polynomial for e^r, then 2^k put
// into the exponent bits. Relative error below 2e-7 over [-87, 0]; below that it
// returns 0, as a softmax wants. Native builds use std::exp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "kernels/simd.hpp"

namespace attnscope::kernels {

#ifdef __wasm_simd128__
// Every step is one x64 instruction in V8: pmax rather than max (whose NaN and ±0 rules
// take a sequence), and k rounded by adding 1.5·2²³ + 127, which leaves k + 127 in the low
// mantissa bits (so a shift makes 2^k), rather than nearest and a saturating conversion.
// The dependency chain decides the speed, not the count of operations: one exp is ~25
// operations each waiting on the last, and the CPU holds only a few exps in flight. So the
// polynomial is evaluated in Estrin's form (three independent pairs beside r², then three
// steps in r²: four multiply-adds deep instead of Horner's seven), with fused multiply-adds
// in the relaxed builds, and exp_shifted runs two exps side by side.
inline v128_t exp4(v128_t x) {
  const v128_t lo = wasm_f32x4_splat(-87.3f);
  const v128_t clamped = wasm_f32x4_pmax(lo, x);  // lo < x ? x : lo
  const v128_t magic = wasm_f32x4_splat(12582912.0f + 127.0f);
  const v128_t shifted = multiply_add(clamped, wasm_f32x4_splat(1.44269504088896341f), magic);
  const v128_t k = wasm_f32x4_sub(shifted, magic);  // round(x / ln2), to nearest even, exactly
  // r = x − k·ln2, with ln2 split in two for precision
  v128_t r = multiply_add(k, wasm_f32x4_splat(-0.693359375f), clamped);
  r = multiply_add(k, wasm_f32x4_splat(2.12194440e-4f), r);
  // e^r = 1 + r + r²·(c2 + c3·r + r²·(c4 + c5·r + r²·(c6 + c7·r)))
  const v128_t r2 = wasm_f32x4_mul(r, r);
  const v128_t c23 = multiply_add(wasm_f32x4_splat(1.6666665459e-1f), r, wasm_f32x4_splat(5.0000001201e-1f));
  const v128_t c45 = multiply_add(wasm_f32x4_splat(8.3334519073e-3f), r, wasm_f32x4_splat(4.1665795894e-2f));
  const v128_t c67 = multiply_add(wasm_f32x4_splat(1.9875691500e-4f), r, wasm_f32x4_splat(1.3981999507e-3f));
  const v128_t tail = multiply_add(multiply_add(c67, r2, c45), r2, c23);
  const v128_t p = multiply_add(tail, r2, wasm_f32x4_add(r, wasm_f32x4_splat(1.0f)));
  const v128_t pow2k = wasm_i32x4_shl(shifted, 23);  // (k + 127) << 23: the bits of 2^k
  const v128_t result = wasm_f32x4_mul(p, pow2k);
  return wasm_v128_and(result, wasm_f32x4_gt(x, lo));  // e^x underflows to 0 below the clamp (and for -inf)
}
#endif

// The largest of x[0 .. n) (-inf when n is 0), four lanes at a time in wasm. No NaN: values are checked.
inline float max_of(const float* x, std::int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  std::int64_t i = 0;
#ifdef __wasm_simd128__
  v128_t m0 = wasm_f32x4_splat(max), m1 = m0;
  for (; i + 8 <= n; i += 8) {
    m0 = wasm_f32x4_pmax(m0, wasm_v128_load(x + i));
    m1 = wasm_f32x4_pmax(m1, wasm_v128_load(x + i + 4));
  }
  alignas(16) float lanes[4];
  wasm_v128_store(lanes, wasm_f32x4_pmax(m0, m1));
  for (const float l : lanes) max = std::max(max, l);
#endif
  for (; i < n; ++i) max = std::max(max, x[i]);
  return max;
}

// s[j] = exp(s[j] - max) for j < n, or with Scaled exp(s[j]·scale - max) (a row of scores scaled on the way:
// the product rounded, then the difference, as when the row was scaled first); returns their sum. In wasm
// eight at a time, two exps side by side: their chains overlap.
template <bool Scaled = false>
inline float exp_shifted(float* s, std::int64_t n, float max, float scale = 1.0f) {
  float sum = 0.0f;
  std::int64_t j = 0;
#ifdef __wasm_simd128__
  v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0;
  const v128_t m = wasm_f32x4_splat(max), factor = wasm_f32x4_splat(scale);
  const auto load = [&](std::int64_t at) {
    const v128_t x = wasm_v128_load(s + at);
    return Scaled ? wasm_f32x4_mul(x, factor) : x;
  };
  for (; j + 8 <= n; j += 8) {
    const v128_t e0 = exp4(wasm_f32x4_sub(load(j), m));
    const v128_t e1 = exp4(wasm_f32x4_sub(load(j + 4), m));
    wasm_v128_store(s + j, e0);
    wasm_v128_store(s + j + 4, e1);
    acc0 = wasm_f32x4_add(acc0, e0);
    acc1 = wasm_f32x4_add(acc1, e1);
  }
  for (; j + 4 <= n; j += 4) {
    const v128_t e = exp4(wasm_f32x4_sub(load(j), m));
    wasm_v128_store(s + j, e);
    acc0 = wasm_f32x4_add(acc0, e);
  }
  const v128_t acc = wasm_f32x4_add(acc0, acc1);
  sum = wasm_f32x4_extract_lane(acc, 0) + wasm_f32x4_extract_lane(acc, 1) + wasm_f32x4_extract_lane(acc, 2) +
        wasm_f32x4_extract_lane(acc, 3);
#endif
  for (; j < n; ++j) {
    const float x = Scaled ? s[j] * scale : s[j];  // rounded before the difference, never fused with it
    sum += s[j] = std::exp(x - max);
  }
  return sum;
}

// GELU, exact form, in place: x·Φ(x) = x/2 · (1 + erf(x/√2)). In wasm four lanes at a time, erf(u) as
// u·P(u²)/Q(u²) with P and Q of degree 5 (cpp/tools/fit_erf.py fits them to erf on [0, 4]: within 2.1e-8 in exact
// arithmetic), u clamped to ±4, and erf = ±1 beyond, as float32's erf is. Ten multiply-adds and a division, no
// exponential; float32's roundings keep GELU within 2.3e-7·max(1, |x|) (tests/wasm/kernels_test.cpp), x for large
// x and 0 for large −x. libm's erff is a scalar call per element. Elsewhere, and for the last few, std::erf.
inline void gelu(float* x, std::int64_t n) {
  std::int64_t j = 0;
#ifdef __wasm_simd128__
  const auto horner = [](v128_t s, std::initializer_list<float> c) {  // c[0] + s·(c[1] + s·(…))
    const float* k = c.end() - 1;
    v128_t r = wasm_f32x4_splat(*k);
    while (k-- != c.begin()) r = multiply_add(r, s, wasm_f32x4_splat(*k));
    return r;
  };
  const v128_t four = wasm_f32x4_splat(4.0f), one = wasm_f32x4_splat(1.0f);
  for (; j + 4 <= n; j += 4) {
    const v128_t v = wasm_v128_load(x + j);
    const v128_t u = wasm_f32x4_mul(v, wasm_f32x4_splat(0.70710678118654752f));
    const v128_t c = wasm_f32x4_pmin(four, wasm_f32x4_pmax(wasm_f32x4_neg(four), u));  // (-0 stays -0)
    const v128_t s = wasm_f32x4_mul(c, c);
    const v128_t p = horner(s, {1.128378987e+00f, 1.962409467e-01f, 5.346611515e-02f, 4.003199283e-03f,
                                2.880143002e-04f, 1.974681936e-06f});
    const v128_t q =
        horner(s, {1.0f, 5.072451830e-01f, 1.164728254e-01f, 1.544356812e-02f, 1.216217992e-03f, 3.747787559e-05f});
    const v128_t sign_one = wasm_v128_or(wasm_v128_and(u, wasm_f32x4_splat(-0.0f)), one);  // ±1, u's sign
    const v128_t erf =
        wasm_v128_bitselect(sign_one, wasm_f32x4_div(wasm_f32x4_mul(c, p), q), wasm_f32x4_ge(wasm_f32x4_abs(u), four));
    const v128_t half = wasm_f32x4_mul(v, wasm_f32x4_splat(0.5f));
    wasm_v128_store(x + j, multiply_add(half, erf, half));  // x/2 + x/2 · erf
  }
#endif
  for (; j < n; ++j) x[j] = 0.5f * x[j] * (1.0f + std::erf(x[j] * 0.70710678118654752f));
}

// x·σ(k·x) = x / (1 + e^(−k·x)) in place. In wasm four lanes at a time with t = e^(−|k·x|) from exp4 (so the
// exponent never grows): x / (1 + t) where k·x ≥ 0, x·t / (1 + t) below. libm's expf is a scalar call per
// element. Elsewhere, and for the last few, std::exp.
inline void times_sigmoid(float* x, std::int64_t n, float k) {
  std::int64_t j = 0;
#ifdef __wasm_simd128__
  const v128_t one = wasm_f32x4_splat(1.0f), scale = wasm_f32x4_splat(k);
  for (; j + 4 <= n; j += 4) {
    const v128_t v = wasm_v128_load(x + j);
    const v128_t y = wasm_f32x4_mul(v, scale);
    const v128_t t = exp4(wasm_f32x4_neg(wasm_f32x4_abs(y)));
    const v128_t top = wasm_v128_bitselect(wasm_f32x4_mul(v, t), v, wasm_f32x4_lt(y, wasm_f32x4_splat(0.0f)));
    wasm_v128_store(x + j, wasm_f32x4_div(top, wasm_f32x4_add(one, t)));
  }
#endif
  for (; j < n; ++j) x[j] = x[j] / (1.0f + std::exp(-k * x[j]));
}

// SiLU in place: x·σ(x). A SwiGLU decoder (Llama, Qwen, SmolLM) applies it to every row of its widest layer.
inline void silu(float* x, std::int64_t n) { times_sigmoid(x, n, 1.0f); }

// Quick GELU (CLIP) in place: x·σ(1.702·x).
inline void quick_gelu(float* x, std::int64_t n) { times_sigmoid(x, n, 1.702f); }

// GELU, tanh form (Gemma, GPT-2), in place: x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³))). In wasm four lanes
// at a time, tanh(|y|) = (1 − e)/(1 + e) with e = e^(−2|y|) from exp4, its sign then restored.
inline void gelu_tanh(float* x, std::int64_t n) {
  std::int64_t j = 0;
#ifdef __wasm_simd128__
  const v128_t half = wasm_f32x4_splat(0.5f), one = wasm_f32x4_splat(1.0f);
  for (; j + 4 <= n; j += 4) {
    const v128_t v = wasm_v128_load(x + j);
    const v128_t cube = wasm_f32x4_mul(wasm_f32x4_mul(v, v), v);
    const v128_t y = wasm_f32x4_mul(wasm_f32x4_splat(0.79788456080286536f),
                                    wasm_f32x4_add(v, wasm_f32x4_mul(wasm_f32x4_splat(0.044715f), cube)));
    const v128_t e = exp4(wasm_f32x4_mul(wasm_f32x4_splat(-2.0f), wasm_f32x4_abs(y)));
    const v128_t magnitude = wasm_f32x4_div(wasm_f32x4_sub(one, e), wasm_f32x4_add(one, e));
    const v128_t th =
        wasm_v128_bitselect(wasm_f32x4_neg(magnitude), magnitude, wasm_f32x4_lt(y, wasm_f32x4_splat(0.0f)));
    wasm_v128_store(x + j, wasm_f32x4_mul(wasm_f32x4_mul(half, v), wasm_f32x4_add(one, th)));
  }
#endif
  for (; j < n; ++j)
    x[j] = 0.5f * x[j] * (1.0f + std::tanh(0.79788456080286536f * (x[j] + 0.044715f * x[j] * x[j] * x[j])));
}

}  // namespace attnscope::kernels
