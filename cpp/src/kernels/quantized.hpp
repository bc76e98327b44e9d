// Weights as llama.cpp quantizes them (ggml-common.h's blocks), held quantized: each row of a Linear's [out, in]
// weight is blocks along `in`, which become the codes and per-group scales of a quantized panel (packed.hpp).
//
//   Q8_0  32 values:  f16 d · int8 q[32]                        x = d·q
//   Q4_0  32 values:  f16 d · 4-bit q[32]                       x = d·(q − 8)
//   Q4_K  256 values: f16 d, dmin · 6-bit sc, m [8] · 4-bit q   x = (d·sc)·q − dmin·m, per group of 32
//   Q6_K  256 values: 6-bit q · int8 sc[16] · f16 d             x = (d·sc)·(q − 32), per group of 16
//
// Each format maps onto one panel layout exactly: Q8_0 → q8_32 (scale d), Q6_K → q8_16 (scale d·sc, code q − 32),
// Q4_0 → q4_32 (scale d, min 8·d), Q4_K → q4_32 (scale d·sc, min dmin·m). Every product there is exact in float32
// (an 11-bit d by a code or a scale of at most 8 bits), so scale·code − min is the value ggml's dequantize_row_*
// computes, to the bit.
#pragma once

#include <cstdint>

#include "kernels/packed.hpp"

namespace attnscope::kernels {

enum class Blocks : std::uint8_t { none, q8_0, q4_0, q4_k, q6_k };

struct BlockFormat {
  const char* name;  // as ggml names the type
  std::int64_t values, bytes;
  Precision layout;  // of the panels that hold it
};
const BlockFormat& format_of(Blocks b);
// The format of ggml type `name` ("Q8_0", ...), or Blocks::none.
Blocks blocks_named(const char* name);

// A row of k values (whole blocks) as codes (one per value) and, per group of group_rows(layout) values, a scale and
// a min: value = scale · code − min. False if a block's d (or dmin) is not finite.
bool decode_row(Blocks b, const std::uint8_t* row, std::int64_t k, std::int8_t* codes, float* scales, float* mins);

// A row of k values as float32, as ggml dequantizes it. False as decode_row.
bool dequantize_row(Blocks b, const std::uint8_t* row, std::int64_t k, float* out);

// The first of `count` blocks whose d (or dmin) is not finite, or -1: a weight's blocks are checked before packing.
std::int64_t first_bad_block(Blocks b, const std::uint8_t* blocks, std::int64_t count);

// B [k, n] from its n columns, each a row of k values in blocks, one after another, into quantized panels
// (panel_bytes(k) each). The blocks' scales must be finite (first_bad_block).
void pack_quantized(Blocks b, const std::uint8_t* rows, std::int64_t k, std::int64_t n, std::uint8_t* panels);

// Rows [first, first + count) of a quantized panel (first and count whole groups) as float32 rows of 8, in column
// order: the GEMM's panel for many rows of A (gemm.cpp).
void dequantize_panel(const std::uint8_t* panel, Precision p, std::int64_t first, std::int64_t count, float* out);

}  // namespace attnscope::kernels
