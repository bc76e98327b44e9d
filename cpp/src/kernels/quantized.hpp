// Weights as llama.cpp quantizes them (ggml-common.h's blocks), held at the file's bits per value: each row of a
// Linear's [out, in] weight is blocks along `in`, and a panel (8 such rows: the GEMM's 8 columns) holds its columns'
// blocks together, one super-block of rows after another.
//
//   file block                                                 value                       panel super-block
//   Q8_0  32 values:  f16 d · int8 q[32]                       d·q                         d[8] · q[32][8]
//   Q4_0  32 values:  f16 d · 4-bit q[32]                      d·q − 8d                    d[8] · q[32][8]
//   Q4_K  256 values: f16 d, dmin · 6-bit sc, m[8] · 4-bit q   (d·sc)·q − dmin·m, per 32   d[8] · dmin[8] · sc[8][8] ·
//                                                                                          m[8][8] · q[256][8]
//   Q6_K  256 values: 6-bit q · int8 sc[16] · f16 d            (d·sc)·(q − 32), per 16     d[8] · sc[16][8] · q[256][8]
//
// In a panel, d (and dmin) are f16 in packed.hpp's 16-bit slot order, Q4_K's 6-bit sc and m one byte each (the panel
// takes 4.625 bits a value where the file takes 4.5; the other three formats take exactly the file's bits). Codes go
// 8 columns to a row: a byte each for Q8_0; 4-bit rows in pairs, 8 bytes a pair, the first row in the low nibbles;
// Q6_K's low nibbles so, and its top 2 bits for 8 rows in 16 bytes (below). Every product above is exact in float32
// (an 11-bit d by a code or scale of at most 8 bits), so scale · code − min is the value ggml's dequantize_row_*
// computes, to the bit.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/packed.hpp"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace attnscope::kernels {

struct FileBlock {
  const char* name;  // as ggml names the type
  std::int64_t values, bytes;
};
// ggml's block of a quantized precision.
const FileBlock& file_block(Precision p);
// The quantized precision of ggml type `name` ("Q8_0", ...), or f32 for another.
Precision quantized_named(const char* name);

// The first of `count` file blocks whose d (or dmin) is not finite, or -1: a weight's blocks are checked before
// packing.
std::int64_t first_bad_block(Precision p, const std::uint8_t* blocks, std::int64_t count);

// A row of k values (whole file blocks) as float32, as ggml dequantizes it. Its d must be finite.
void dequantize_row(Precision p, const std::uint8_t* row, std::int64_t k, float* out);

// B [k, n] from its n columns, each a row of k values in file blocks, one after another, into panels (panel_bytes(k)
// each, zero past the last column). Their d must be finite (first_bad_block).
void pack_quantized(Precision p, const std::uint8_t* rows, std::int64_t k, std::int64_t n, std::uint8_t* panels);

// Rows [first, first + count) of a quantized panel (whole super-blocks) as float32 rows of 8, in column order: the
// GEMM's panel for many rows of A (gemm.cpp), a column, or the whole matrix.
void dequantize_panel(const std::uint8_t* panel, Precision p, std::int64_t first, std::int64_t count, float* out);

// Rows of a super-block that share each column's scale (and min).
inline constexpr std::int64_t group_rows(Precision p) { return p == Precision::q6_k ? 16 : 32; }
// Where a super-block's codes start.
inline constexpr std::int64_t codes_offset(Precision p) {
  return p == Precision::q4_k ? 160 : p == Precision::q6_k ? 144 : 16;
}

#ifdef __wasm_simd128__
// Four int32 (extended from 8 or 16 bits) as float32: f32x4.convert_i32x4_s. The empty asm keeps clang 14 from
// folding the extend into the convert, a convert from 16 bits for which it has no wasm pattern: it then converts lane
// by lane, and the decoding step ran at a fifth of its speed.
inline v128_t small_to_float(v128_t x) {
  __asm__("" : "+X"(x));
  return wasm_f32x4_convert_i32x4(x);
}
// Eight f16 in packed.hpp's 16-bit slot order as float32: columns 0-3 into a, 4-7 into b.
inline void halves(const std::uint8_t* at, v128_t& a, v128_t& b) {
  widen_panel_row<Precision::f16>(reinterpret_cast<const std::uint16_t*>(at), a, b);
}
// Eight bytes as float32 (signed or not): columns 0-3 into a, 4-7 into b.
template <bool Signed>
inline void bytes_to_floats(const std::uint8_t* at, v128_t& a, v128_t& b) {
  const v128_t x = wasm_v128_load64_zero(at);
  const v128_t w = Signed ? wasm_i16x8_extend_low_i8x16(x) : wasm_u16x8_extend_low_u8x16(x);
  a = small_to_float(wasm_i32x4_extend_low_i16x8(w));
  b = small_to_float(wasm_i32x4_extend_high_i16x8(w));
}

// Group g of super-block `sb`: each column's scale (s0: columns 0-3, s1: 4-7) and min (m0, m1: zero but for the 4-bit
// formats, whose values are scale · code − min).
template <Precision P>
inline void group_scales(const std::uint8_t* sb, std::int64_t g, v128_t& s0, v128_t& s1, v128_t& m0, v128_t& m1) {
  halves(sb, s0, s1);
  m0 = m1 = wasm_f32x4_splat(0.0f);
  if constexpr (P == Precision::q4_0) {
    m0 = wasm_f32x4_mul(s0, wasm_f32x4_splat(8.0f)), m1 = wasm_f32x4_mul(s1, wasm_f32x4_splat(8.0f));
  } else if constexpr (P == Precision::q4_k) {
    v128_t dmin0, dmin1, a, b;
    halves(sb + 16, dmin0, dmin1);
    bytes_to_floats<false>(sb + 32 + 8 * g, a, b);
    s0 = wasm_f32x4_mul(s0, a), s1 = wasm_f32x4_mul(s1, b);
    bytes_to_floats<false>(sb + 96 + 8 * g, a, b);
    m0 = wasm_f32x4_mul(dmin0, a), m1 = wasm_f32x4_mul(dmin1, b);
  } else if constexpr (P == Precision::q6_k) {
    v128_t a, b;
    bytes_to_floats<true>(sb + 16 + 8 * g, a, b);
    s0 = wasm_f32x4_mul(s0, a), s1 = wasm_f32x4_mul(s1, b);
  }
}

// The codes of group g of super-block `sb` in a 4-bit panel or Q6_K's, four rows at a time: quad(r, x, y), x the
// codes of rows r and r + 2 (bytes 0-7 and 8-15, one per column), y of rows r + 1 and r + 3. Four rows per 16 bytes
// of 4-bit codes. Q6_K's top bits for rows 8u + {0, 1, 4, 5} in bytes 0-7 (2 bits each, from the low bits up) and
// 8u + {2, 3, 6, 7} in bytes 8-15 of 16, so that each pair of rows a nibble vector holds finds its top bits in place
// after one shift; its codes come less 32 (as int8) when `Centred`, else as stored (0-63).
template <Precision P, bool Centred, typename Quad>
inline void group_code_quads(const std::uint8_t* sb, std::int64_t g, Quad quad) {
  constexpr int G = static_cast<int>(group_rows(P));
  const std::uint8_t* low = sb + codes_offset(P) + g * G * 4;
  const v128_t nibble = wasm_i8x16_splat(0x0f);
  if constexpr (P == Precision::q4_0 || P == Precision::q4_k) {
    for (int r = 0; r < G; r += 4) {  // rows r, r + 2 in the low nibbles; r + 1, r + 3 in the high
      const v128_t v = wasm_v128_load(low + r * 4);
      quad(r, wasm_v128_and(v, nibble), wasm_u8x16_shr(v, 4));
    }
  } else {
    const std::uint8_t* top = sb + codes_offset(P) + 256 * 4 + g * G * 2;
    const v128_t two = wasm_i8x16_splat(0x30);
    for (int r = 0; r < G; r += 8) {
      const v128_t v0 = wasm_v128_load(low + r * 4), v1 = wasm_v128_load(low + r * 4 + 16);
      const v128_t h = wasm_v128_load(top + r * 2);
      // Rows r | r + 2, r + 1 | r + 3, r + 4 | r + 6 and r + 5 | r + 7: a nibble and its top bits.
      const v128_t q0 = wasm_v128_or(wasm_v128_and(v0, nibble), wasm_v128_and(wasm_i8x16_shl(h, 4), two));
      const v128_t q1 = wasm_v128_or(wasm_u8x16_shr(v0, 4), wasm_v128_and(wasm_i8x16_shl(h, 2), two));
      const v128_t q4 = wasm_v128_or(wasm_v128_and(v1, nibble), wasm_v128_and(h, two));
      const v128_t q5 = wasm_v128_or(wasm_u8x16_shr(v1, 4), wasm_v128_and(wasm_u8x16_shr(h, 2), two));
      if constexpr (Centred) {
        const v128_t bias = wasm_i8x16_splat(32);
        quad(r, wasm_i8x16_sub(q0, bias), wasm_i8x16_sub(q1, bias));
        quad(r + 4, wasm_i8x16_sub(q4, bias), wasm_i8x16_sub(q5, bias));
      } else {
        quad(r, q0, q1);
        quad(r + 4, q4, q5);
      }
    }
  }
}

// The codes of group g of super-block `sb`, a row at a time: row(r, codes), r the row in the group, the 8 codes
// (columns 0-7) as int16 in `codes`, Q6_K's less 32.
template <Precision P, typename Row>
inline void group_codes(const std::uint8_t* sb, std::int64_t g, Row row) {
  if constexpr (P == Precision::q8_0) {
    const std::uint8_t* codes = sb + codes_offset(P);
    for (int r = 0; r < 32; r += 2) {
      const v128_t v = wasm_v128_load(codes + r * 8);
      row(r, wasm_i16x8_extend_low_i8x16(v));
      row(r + 1, wasm_i16x8_extend_high_i8x16(v));
    }
  } else {
    group_code_quads<P, true>(sb, g, [&](int r, v128_t x, v128_t y) {
      row(r, wasm_i16x8_extend_low_i8x16(x)), row(r + 1, wasm_i16x8_extend_low_i8x16(y));
      row(r + 2, wasm_i16x8_extend_high_i8x16(x)), row(r + 3, wasm_i16x8_extend_high_i8x16(y));
    });
  }
}

// The codes of group g of super-block `sb` two rows at a time, as i32x4.dot_i16x8_s multiplies them by two values of
// A: pair(r, c0, c1), rows r and r + 1 as int16 interleaved by column, columns 0-3 in c0 ((r, 0), (r + 1, 0), (r, 1),
// ..., (r + 1, 3)) and 4-7 in c1. Q6_K's codes as stored (0-63).
template <Precision P, typename Pair>
inline void group_code_pairs(const std::uint8_t* sb, std::int64_t g, Pair pair) {
  const auto pairs = [&](int r, v128_t rows) {
    pair(r, wasm_i16x8_extend_low_i8x16(rows), wasm_i16x8_extend_high_i8x16(rows));
  };
  if constexpr (P == Precision::q8_0) {
    const std::uint8_t* codes = sb + codes_offset(P);
    for (int r = 0; r < 32; r += 2) {
      const v128_t v = wasm_v128_load(codes + r * 8);  // rows r and r + 1
      pairs(r, wasm_i8x16_shuffle(v, v, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
    }
  } else {
    group_code_quads<P, false>(sb, g, [&](int r, v128_t x, v128_t y) {
      pairs(r, wasm_i8x16_shuffle(x, y, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
      pairs(r + 2, wasm_i8x16_shuffle(x, y, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31));
    });
  }
}

// Eight int16 codes to floats: c0 (columns 0-3), c1 (4-7) = scale · code.
inline void scaled_codes(v128_t codes, v128_t s0, v128_t s1, v128_t& c0, v128_t& c1) {
  c0 = wasm_f32x4_mul(small_to_float(wasm_i32x4_extend_low_i16x8(codes)), s0);
  c1 = wasm_f32x4_mul(small_to_float(wasm_i32x4_extend_high_i16x8(codes)), s1);
}
#endif

}  // namespace attnscope::kernels
