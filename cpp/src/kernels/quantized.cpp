#include "kernels/quantized.hpp"

#include <cstring>
#include <vector>

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace attnscope::kernels {

namespace {

constexpr BlockFormat kFormats[] = {
    {"", 1, 4, Precision::f32},           {"Q8_0", 32, 34, Precision::q8_32},   {"Q4_0", 32, 18, Precision::q4_32},
    {"Q4_K", 256, 144, Precision::q4_32}, {"Q6_K", 256, 210, Precision::q8_16},
};

// A little-endian f16 at `at` as float32; false if it is not finite.
bool half_at(const std::uint8_t* at, float& out) {
  const auto h = static_cast<std::uint16_t>(at[0] | (at[1] << 8));
  out = widen(h, Precision::f16);
  return (h & 0x7c00) != 0x7c00;
}

// ggml-quants.c's get_scale_min_k4: Q4_K's 6-bit scale and min of group j from its 12 bytes.
void scale_min_k4(int j, const std::uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63, m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// One block at `b` into codes [values], scales and mins [values / group].
bool decode_block(Blocks f, const std::uint8_t* b, std::int8_t* codes, float* scales, float* mins) {
  float d = 0, dmin = 0;
  switch (f) {
    case Blocks::q8_0:
      if (!half_at(b, d)) return false;
      scales[0] = d, mins[0] = 0;
      std::memcpy(codes, b + 2, 32);
      return true;
    case Blocks::q4_0:
      if (!half_at(b, d)) return false;
      scales[0] = d, mins[0] = 8 * d;
      for (int j = 0; j < 16; ++j) {
        codes[j] = static_cast<std::int8_t>(b[2 + j] & 0xF);
        codes[j + 16] = static_cast<std::int8_t>(b[2 + j] >> 4);
      }
      return true;
    case Blocks::q4_k: {
      if (!half_at(b, d) || !half_at(b + 2, dmin)) return false;
      const std::uint8_t *sm = b + 4, *q = b + 16;
      for (int c = 0; c < 4; ++c, q += 32)  // 64 values: the low nibbles, then the high ones
        for (int half = 0; half < 2; ++half) {
          int sc, m;
          scale_min_k4(2 * c + half, sm, sc, m);
          scales[2 * c + half] = d * static_cast<float>(sc);
          mins[2 * c + half] = dmin * static_cast<float>(m);
          for (int l = 0; l < 32; ++l)
            codes[64 * c + 32 * half + l] = static_cast<std::int8_t>(half ? q[l] >> 4 : q[l] & 0xF);
        }
      return true;
    }
    case Blocks::q6_k: {
      if (!half_at(b + 208, d)) return false;
      const std::uint8_t *ql = b, *qh = b + 128;
      const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
      for (int g = 0; g < 16; ++g) scales[g] = d * static_cast<float>(sc[g]), mins[g] = 0;
      for (int n = 0; n < 2; ++n, ql += 64, qh += 32)  // 128 values: four quarters of 32
        for (int l = 0; l < 32; ++l) {
          const int v = 128 * n + l;
          codes[v] = static_cast<std::int8_t>(((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
          codes[v + 32] = static_cast<std::int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
          codes[v + 64] = static_cast<std::int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
          codes[v + 96] = static_cast<std::int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
      return true;
    }
    case Blocks::none:
      break;
  }
  return false;
}

}  // namespace

const BlockFormat& format_of(Blocks b) { return kFormats[static_cast<int>(b)]; }

Blocks blocks_named(const char* name) {
  for (int i = 1; i < static_cast<int>(sizeof kFormats / sizeof kFormats[0]); ++i)
    if (std::strcmp(kFormats[i].name, name) == 0) return static_cast<Blocks>(i);
  return Blocks::none;
}

bool decode_row(Blocks b, const std::uint8_t* row, std::int64_t k, std::int8_t* codes, float* scales, float* mins) {
  const BlockFormat& f = format_of(b);
  const std::int64_t groups = f.values / group_rows(f.layout);
  for (std::int64_t i = 0; i < k / f.values; ++i)
    if (!decode_block(b, row + i * f.bytes, codes + i * f.values, scales + i * groups, mins + i * groups)) return false;
  return true;
}

bool dequantize_row(Blocks b, const std::uint8_t* row, std::int64_t k, float* out) {
  const std::int64_t group = group_rows(format_of(b).layout);
  std::vector<std::int8_t> codes(static_cast<std::size_t>(k));
  std::vector<float> scales(static_cast<std::size_t>(k / group)), mins(scales.size());
  if (!decode_row(b, row, k, codes.data(), scales.data(), mins.data())) return false;
  for (std::int64_t i = 0; i < k; ++i)
    out[i] = scales[static_cast<std::size_t>(i / group)] * codes[i] - mins[static_cast<std::size_t>(i / group)];
  return true;
}

std::int64_t first_bad_block(Blocks b, const std::uint8_t* blocks, std::int64_t count) {
  const BlockFormat& f = format_of(b);
  // Where each format keeps its f16 d (and Q4_K its dmin right after).
  const std::int64_t at = b == Blocks::q6_k ? 208 : 0, halves = b == Blocks::q4_k ? 2 : 1;
  float x;
  for (std::int64_t i = 0; i < count; ++i)
    for (std::int64_t h = 0; h < halves; ++h)
      if (!half_at(blocks + i * f.bytes + at + 2 * h, x)) return i;
  return -1;
}

void pack_quantized(Blocks b, const std::uint8_t* rows, std::int64_t k, std::int64_t n, std::uint8_t* panels) {
  const BlockFormat& f = format_of(b);
  const Precision p = f.layout;
  const std::int64_t group = group_rows(p), groups = k / group, row_bytes = k / f.values * f.bytes;
  const std::int64_t header = group_header(p), size = group_bytes(p);
  std::vector<std::int8_t> codes(static_cast<std::size_t>(k));
  std::vector<float> scales(static_cast<std::size_t>(groups)), mins(scales.size());
  const std::int64_t panels_count = (n + kPanelColumns - 1) / kPanelColumns;
  std::memset(panels, 0, static_cast<std::size_t>(panels_count * panel_bytes(k, p)));  // columns past n: zero
  for (std::int64_t col = 0; col < n; ++col) {
    decode_row(b, rows + col * row_bytes, k, codes.data(), scales.data(), mins.data());
    const std::int64_t j = col % kPanelColumns;
    std::uint8_t* panel = panels + col / kPanelColumns * panel_bytes(k, p);
    for (std::int64_t g = 0; g < groups; ++g) {
      std::uint8_t* at = panel + g * size;
      std::memcpy(at + 4 * j, &scales[static_cast<std::size_t>(g)], 4);
      if (p == Precision::q4_32) std::memcpy(at + 32 + 4 * j, &mins[static_cast<std::size_t>(g)], 4);
      std::uint8_t* code = at + header;
      const std::int8_t* c = codes.data() + g * group;
      if (p == Precision::q4_32)
        for (std::int64_t r = 0; r < group; r += 2)
          code[r / 2 * kPanelColumns + j] = static_cast<std::uint8_t>(c[r] | (c[r + 1] << 4));
      else
        for (std::int64_t r = 0; r < group; ++r) code[r * kPanelColumns + j] = static_cast<std::uint8_t>(c[r]);
    }
  }
}

void dequantize_panel(const std::uint8_t* panel, Precision p, std::int64_t first, std::int64_t count, float* out) {
  const std::int64_t group = group_rows(p), size = group_bytes(p), header = group_header(p);
  for (std::int64_t g = first / group; g < (first + count) / group; ++g) {
    const std::uint8_t* at = panel + g * size;
    float* rows = out + (g * group - first) * kPanelColumns;
#ifdef __wasm_simd128__
    const v128_t s0 = wasm_v128_load(at), s1 = wasm_v128_load(at + 16);
    const v128_t zero = wasm_f32x4_splat(0.0f);
    const v128_t m0 = p == Precision::q4_32 ? wasm_v128_load(at + 32) : zero;
    const v128_t m1 = p == Precision::q4_32 ? wasm_v128_load(at + 48) : zero;
    // Two rows of 8 codes as int16 into float rows: scale · code − min (the product exact, so one rounding).
    const auto rows16 = [&](v128_t r16, float* to) {
      wasm_v128_store(
          to, wasm_f32x4_sub(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(r16)), s0), m0));
      wasm_v128_store(
          to + 4, wasm_f32x4_sub(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(r16)), s1), m1));
    };
    const std::uint8_t* code = at + header;
    if (p == Precision::q4_32) {
      for (std::int64_t r = 0; r < group; r += 4, code += 16) {  // 4 rows in 16 bytes: rows r, r+2 low; r+1, r+3 high
        const v128_t v = wasm_v128_load(code);
        const v128_t lo = wasm_v128_and(v, wasm_i8x16_splat(0x0f)), hi = wasm_u8x16_shr(v, 4);
        rows16(wasm_u16x8_extend_low_u8x16(lo), rows + r * kPanelColumns);
        rows16(wasm_u16x8_extend_low_u8x16(hi), rows + (r + 1) * kPanelColumns);
        rows16(wasm_u16x8_extend_high_u8x16(lo), rows + (r + 2) * kPanelColumns);
        rows16(wasm_u16x8_extend_high_u8x16(hi), rows + (r + 3) * kPanelColumns);
      }
    } else {
      for (std::int64_t r = 0; r < group; r += 2, code += 16) {
        const v128_t v = wasm_v128_load(code);
        rows16(wasm_i16x8_extend_low_i8x16(v), rows + r * kPanelColumns);
        rows16(wasm_i16x8_extend_high_i8x16(v), rows + (r + 1) * kPanelColumns);
      }
    }
#else
    float scale[kPanelColumns], min[kPanelColumns] = {};
    std::memcpy(scale, at, sizeof scale);
    if (p == Precision::q4_32) std::memcpy(min, at + 32, sizeof min);
    const std::uint8_t* code = at + header;
    for (std::int64_t r = 0; r < group; ++r)
      for (std::int64_t j = 0; j < kPanelColumns; ++j) {
        const int c = p == Precision::q4_32 ? (code[r / 2 * kPanelColumns + j] >> (4 * (r % 2))) & 0xF
                                            : static_cast<std::int8_t>(code[r * kPanelColumns + j]);
        rows[r * kPanelColumns + j] = scale[j] * static_cast<float>(c) - min[j];
      }
#endif
  }
}

}  // namespace attnscope::kernels
