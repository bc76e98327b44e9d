// One row of attention scores made ready for the softmax, in place: scaled, the hidden
// keys set to -inf (causal mask, sliding window, keep mask), the additive mask added; and the row's
// largest value found. In wasm four lanes at a time: written as a plain loop, the
// running maximum is one long dependency chain that clang cannot vectorize (float max
// is not associative to it), and at n = 128 this loop took a fifth of an attention
// call. The lanes compute exactly what the scalar loop does, bit for bit
// (tests/wasm/kernels_test.cpp holds them together).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace attnscope::kernels {

// The keys one query may see, by position: first ≤ j ≤ last. Causal attention ends the
// range at the query's own position; a sliding window also starts it there − window + 1.
struct KeyRange {
  std::int64_t first = 0, last = std::numeric_limits<std::int64_t>::max();
};

// Scores s[0 .. count) of one query against keys key0 .. key0+count: s[j] · scale; -inf
// where the key is hidden (key0 + j outside `range`, or keep[j] == 0); + additive[j].
// keep and additive are null when absent, else already offset to key0. Returns the
// largest value written (-inf when every key is hidden). The plain loop: the reference,
// and what mask_scores runs natively and on the last count % 4 keys.
inline float mask_scores_plain(float* s, std::int64_t count, std::int64_t key0, KeyRange range, float scale,
                               const std::uint8_t* keep, const float* additive) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float max = kNegInf;
  for (std::int64_t j = 0; j < count; ++j) {
    float x = s[j] * scale;
    if (key0 + j > range.last || key0 + j < range.first || (keep && !keep[j])) x = kNegInf;
    if (additive) x += additive[j];
    s[j] = x;
    max = std::max(max, x);
  }
  return max;
}

// The same, four keys at a time in wasm.
inline float mask_scores(float* s, std::int64_t count, std::int64_t key0, KeyRange range, float scale,
                         const std::uint8_t* keep, const float* additive) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float max = kNegInf;
  std::int64_t j = 0;
#ifdef __wasm_simd128__
  // Keys j outside [first, last] (relative to key0) are hidden; clamped, as they are compared as 32-bit lanes.
  const std::int64_t last = std::clamp<std::int64_t>(range.last - key0, -1, count);
  const std::int64_t first = std::clamp<std::int64_t>(range.first - key0, 0, count + 1);
  const v128_t neg_inf = wasm_f32x4_splat(kNegInf), factor = wasm_f32x4_splat(scale);
  const v128_t last4 = wasm_i32x4_splat(static_cast<std::int32_t>(last));
  const v128_t first4 = wasm_i32x4_splat(static_cast<std::int32_t>(first));
  const v128_t byte_lanes = wasm_i32x4_make(0xff, 0xff00, 0xff0000, static_cast<std::int32_t>(0xff000000u));
  v128_t index = wasm_i32x4_make(0, 1, 2, 3), max4 = neg_inf;
  for (; j + 4 <= count; j += 4, index = wasm_i32x4_add(index, wasm_i32x4_splat(4))) {
    const v128_t x = wasm_f32x4_mul(wasm_v128_load(s + j), factor);
    v128_t hidden = wasm_v128_or(wasm_i32x4_gt(index, last4), wasm_i32x4_lt(index, first4));
    if (keep) {
      std::uint32_t bytes;  // keep[j .. j+4), one byte to a lane: hidden where the byte is 0
      std::memcpy(&bytes, keep + j, sizeof bytes);
      const v128_t lanes = wasm_v128_and(wasm_i32x4_splat(static_cast<std::int32_t>(bytes)), byte_lanes);
      hidden = wasm_v128_or(hidden, wasm_i32x4_eq(lanes, wasm_i32x4_splat(0)));
    }
    v128_t y = wasm_v128_bitselect(neg_inf, x, hidden);
    if (additive) y = wasm_f32x4_add(y, wasm_v128_load(additive + j));
    wasm_v128_store(s + j, y);
    max4 = wasm_f32x4_pmax(max4, y);  // pmax(a, b) = a < b ? b : a, as std::max(a, b) is
  }
  alignas(16) float lanes[4];
  wasm_v128_store(lanes, max4);
  for (float lane : lanes) max = std::max(max, lane);
#endif
  return std::max(max, mask_scores_plain(s + j, count - j, key0 + j, range, scale, keep ? keep + j : nullptr,
                                         additive ? additive + j : nullptr));
}

}  // namespace attnscope::kernels
