#include "kernels/quantized.hpp"

#include <cstring>

namespace attnscope::kernels {

namespace {

constexpr FileBlock kNone{"", 1, 4};
constexpr FileBlock kBlocks[] = {{"Q8_0", 32, 34}, {"Q4_0", 32, 18}, {"Q4_K", 256, 144}, {"Q6_K", 256, 210}};
constexpr Precision kQuantized[] = {Precision::q8_0, Precision::q4_0, Precision::q4_k, Precision::q6_k};

std::uint16_t u16(const std::uint8_t* at) { return static_cast<std::uint16_t>(at[0] | (at[1] << 8)); }

// A file block's fields: d (and dmin) as f16 bits, the scales (Q4_K: 6-bit sc and m of its 8 groups; Q6_K: int8 sc of
// its 16, as bytes) and every value's code as stored (Q6_K: 0-63, before the − 32).
struct RawBlock {
  std::uint16_t d = 0, dmin = 0;
  std::uint8_t sc[16] = {}, m[8] = {};
  std::uint8_t q[256] = {};
};

void read_block(Precision p, const std::uint8_t* b, RawBlock& out) {
  switch (p) {
    case Precision::q8_0:
      out.d = u16(b);
      std::memcpy(out.q, b + 2, 32);
      return;
    case Precision::q4_0:
      out.d = u16(b);
      for (int j = 0; j < 16; ++j) out.q[j] = b[2 + j] & 0xF, out.q[j + 16] = b[2 + j] >> 4;
      return;
    case Precision::q4_k: {
      out.d = u16(b), out.dmin = u16(b + 2);
      const std::uint8_t* s = b + 4;
      for (int j = 0; j < 8; ++j) {  // ggml-quants.c's get_scale_min_k4
        out.sc[j] = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        out.m[j] = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      }
      const std::uint8_t* q = b + 16;
      for (int c = 0; c < 4; ++c, q += 32)  // 64 values: the low nibbles, then the high ones
        for (int l = 0; l < 32; ++l) out.q[64 * c + l] = q[l] & 0xF, out.q[64 * c + 32 + l] = q[l] >> 4;
      return;
    }
    case Precision::q6_k: {
      out.d = u16(b + 208);
      std::memcpy(out.sc, b + 192, 16);
      const std::uint8_t *ql = b, *qh = b + 128;
      for (int n = 0; n < 2; ++n, ql += 64, qh += 32)  // 128 values: four quarters of 32
        for (int l = 0; l < 32; ++l) {
          std::uint8_t* q = out.q + 128 * n + l;
          q[0] = static_cast<std::uint8_t>((ql[l] & 0xF) | ((qh[l] & 3) << 4));
          q[32] = static_cast<std::uint8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
          q[64] = static_cast<std::uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
          q[96] = static_cast<std::uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
      return;
    }
    default:
      return;
  }
}

float half(std::uint16_t h) { return widen(h, Precision::f16); }

// Value v of a block as ggml's dequantize_row_* computes it.
float value(Precision p, const RawBlock& b, int v) {
  switch (p) {
    case Precision::q8_0:
      return half(b.d) * static_cast<float>(static_cast<std::int8_t>(b.q[v]));
    case Precision::q4_0:
      return static_cast<float>(b.q[v] - 8) * half(b.d);
    case Precision::q4_k:
      return half(b.d) * static_cast<float>(b.sc[v / 32]) * static_cast<float>(b.q[v]) -
             half(b.dmin) * static_cast<float>(b.m[v / 32]);
    default:
      return half(b.d) * static_cast<float>(static_cast<std::int8_t>(b.sc[v / 16])) * static_cast<float>(b.q[v] - 32);
  }
}

// Column j's slot in a header of 8 f16 (packed.hpp's 16-bit slot order).
std::int64_t half_slot(std::int64_t j) { return 2 * panel_slot(j, Precision::f16); }

// Byte of a 4-bit code (r, j) in a panel's codes, and its shift: rows in pairs, the first in the low nibbles.
std::int64_t nibble_at(std::int64_t r, std::int64_t j) { return r / 2 * kPanelColumns + j; }
int nibble_shift(std::int64_t r) { return 4 * static_cast<int>(r % 2); }
// Byte and shift of Q6_K's top 2 bits of (r, j): 16 bytes per 8 rows; rows 8u + {0, 1, 4, 5} in bytes 0-7 (bits 0-1,
// 2-3, 4-5, 6-7), 8u + {2, 3, 6, 7} in bytes 8-15.
std::int64_t top_at(std::int64_t r, std::int64_t j) { return r / 8 * 16 + (r % 8 / 2 % 2) * 8 + j; }
int top_shift(std::int64_t r) { return 2 * static_cast<int>(r % 2 + r % 8 / 4 * 2); }

// Column j of a file block into super-block `sb` of its panel.
void put_block(Precision p, const RawBlock& b, std::int64_t j, std::uint8_t* sb) {
  const auto put16 = [&](std::int64_t at, std::uint16_t h) {
    sb[at + half_slot(j)] = static_cast<std::uint8_t>(h & 0xff);
    sb[at + half_slot(j) + 1] = static_cast<std::uint8_t>(h >> 8);
  };
  put16(0, b.d);
  std::uint8_t* codes = sb + codes_offset(p);
  const std::int64_t rows = superblock_rows(p);
  if (p == Precision::q8_0) {
    for (std::int64_t r = 0; r < rows; ++r) codes[r * kPanelColumns + j] = b.q[r];
    return;
  }
  if (p == Precision::q4_k) {
    put16(16, b.dmin);
    for (std::int64_t g = 0; g < 8; ++g) sb[32 + g * 8 + j] = b.sc[g], sb[96 + g * 8 + j] = b.m[g];
  }
  if (p == Precision::q6_k)
    for (std::int64_t g = 0; g < 16; ++g) sb[16 + g * 8 + j] = b.sc[g];
  for (std::int64_t r = 0; r < rows; ++r) {
    codes[nibble_at(r, j)] |= static_cast<std::uint8_t>((b.q[r] & 0xF) << nibble_shift(r));
    if (p == Precision::q6_k) codes[256 * 4 + top_at(r, j)] |= static_cast<std::uint8_t>((b.q[r] >> 4) << top_shift(r));
  }
}

#ifndef __wasm_simd128__
// Super-block `sb` as float32 rows of 8, read as the kernels read it (the scalar twin of group_scales and group_codes).
void superblock_values(Precision p, const std::uint8_t* sb, float* out) {
  const std::uint8_t* codes = sb + codes_offset(p);
  for (std::int64_t r = 0; r < superblock_rows(p); ++r)
    for (std::int64_t j = 0; j < kPanelColumns; ++j) {
      const float d = half(u16(sb + half_slot(j)));
      const std::int64_t g = r / group_rows(p);
      const int nibble = (codes[nibble_at(r, j)] >> nibble_shift(r)) & 0xF;
      float v = 0;
      if (p == Precision::q8_0) {
        v = d * static_cast<float>(static_cast<std::int8_t>(codes[r * kPanelColumns + j]));
      } else if (p == Precision::q4_0) {
        v = d * static_cast<float>(nibble) - 8.0f * d;
      } else if (p == Precision::q4_k) {
        const float dmin = half(u16(sb + 16 + half_slot(j)));
        v = d * static_cast<float>(sb[32 + g * 8 + j]) * static_cast<float>(nibble) -
            dmin * static_cast<float>(sb[96 + g * 8 + j]);
      } else {
        const int top = (codes[256 * 4 + top_at(r, j)] >> top_shift(r)) & 3;
        v = d * static_cast<float>(static_cast<std::int8_t>(sb[16 + g * 8 + j])) *
            static_cast<float>((nibble | (top << 4)) - 32);
      }
      out[r * kPanelColumns + j] = v;
    }
}
#endif

}  // namespace

const FileBlock& file_block(Precision p) {
  for (int i = 0; i < 4; ++i)
    if (kQuantized[i] == p) return kBlocks[i];
  return kNone;
}

Precision quantized_named(const char* name) {
  for (int i = 0; i < 4; ++i)
    if (std::strcmp(kBlocks[i].name, name) == 0) return kQuantized[i];
  return Precision::f32;
}

std::int64_t first_bad_block(Precision p, const std::uint8_t* blocks, std::int64_t count) {
  const FileBlock& f = file_block(p);
  // Where each format keeps its f16 d (and Q4_K its dmin right after).
  const std::int64_t at = p == Precision::q6_k ? 208 : 0, halves = p == Precision::q4_k ? 2 : 1;
  for (std::int64_t i = 0; i < count; ++i)
    for (std::int64_t h = 0; h < halves; ++h)
      if ((u16(blocks + i * f.bytes + at + 2 * h) & 0x7c00) == 0x7c00) return i;
  return -1;
}

void dequantize_row(Precision p, const std::uint8_t* row, std::int64_t k, float* out) {
  const FileBlock& f = file_block(p);
  RawBlock b;
  for (std::int64_t i = 0; i < k / f.values; ++i) {
    read_block(p, row + i * f.bytes, b);
    for (int v = 0; v < f.values; ++v) out[i * f.values + v] = value(p, b, v);
  }
}

void pack_quantized(Precision p, const std::uint8_t* rows, std::int64_t k, std::int64_t n, std::uint8_t* panels) {
  const FileBlock& f = file_block(p);
  const std::int64_t blocks = k / f.values, size = superblock_bytes(p);
  std::memset(panels, 0, static_cast<std::size_t>((n + kPanelColumns - 1) / kPanelColumns * panel_bytes(k, p)));
  RawBlock b;
  for (std::int64_t col = 0; col < n; ++col) {
    std::uint8_t* panel = panels + col / kPanelColumns * panel_bytes(k, p);
    for (std::int64_t i = 0; i < blocks; ++i) {
      read_block(p, rows + (col * blocks + i) * f.bytes, b);
      put_block(p, b, col % kPanelColumns, panel + i * size);
    }
  }
}

void dequantize_panel(const std::uint8_t* panel, Precision p, std::int64_t first, std::int64_t count, float* out) {
  const std::int64_t rows = superblock_rows(p), size = superblock_bytes(p);
  for (std::int64_t s = first / rows; s < (first + count) / rows; ++s) {
    const std::uint8_t* sb = panel + s * size;
    float* to = out + (s * rows - first) * kPanelColumns;
#ifdef __wasm_simd128__
    const auto groups = [&](auto format) {
      constexpr Precision P = decltype(format)::value;
      for (std::int64_t g = 0; g < rows / group_rows(P); ++g) {
        v128_t s0, s1, m0, m1;
        group_scales<P>(sb, g, s0, s1, m0, m1);
        float* group = to + g * group_rows(P) * kPanelColumns;
        group_codes<P>(sb, g, [&](int r, v128_t codes) {
          v128_t c0, c1;
          scaled_codes(codes, s0, s1, c0, c1);
          wasm_v128_store(group + r * kPanelColumns, wasm_f32x4_sub(c0, m0));
          wasm_v128_store(group + r * kPanelColumns + 4, wasm_f32x4_sub(c1, m1));
        });
      }
    };
    if (p == Precision::q8_0) groups(std::integral_constant<Precision, Precision::q8_0>());
    if (p == Precision::q4_0) groups(std::integral_constant<Precision, Precision::q4_0>());
    if (p == Precision::q4_k) groups(std::integral_constant<Precision, Precision::q4_k>());
    if (p == Precision::q6_k) groups(std::integral_constant<Precision, Precision::q6_k>());
#else
    superblock_values(p, sb, to);
#endif
  }
}

}  // namespace attnscope::kernels
