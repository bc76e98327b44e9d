#include "kernels/packed.hpp"

#include <algorithm>
#include <cstring>

#include "attnscope/error.hpp"
#include "attnscope/packing.hpp"
#include "kernels/quantized.hpp"
#include "threads/thread_pool.hpp"

namespace attnscope::kernels {

void widen(const void* v, Precision precision, std::int64_t count, float* out) {
  if (count <= 0) return;  // an empty tensor's buffers may be null, which memcpy may not be given even for 0 bytes
  if (precision == Precision::f32) {
    std::memcpy(out, v, static_cast<std::size_t>(count) * 4);
    return;
  }
  const auto* h = static_cast<const std::uint16_t*>(v);
  std::int64_t i = 0;
#ifdef __wasm_simd128__
  // Eight at a time: zero-extend to 32 bits, then shift (bf16), or rebias (f16, as the scalar widen()).
  for (; i + 8 <= count; i += 8) {
    const v128_t x = wasm_v128_load(h + i);
    v128_t lo = wasm_u32x4_extend_low_u16x8(x), hi = wasm_u32x4_extend_high_u16x8(x);
    if (precision == Precision::bf16) {
      lo = wasm_i32x4_shl(lo, 16), hi = wasm_i32x4_shl(hi, 16);
    } else {
      const v128_t magnitude = wasm_i32x4_splat(0x7fff), scale = wasm_f32x4_splat(0x1p112f);
      const auto one = [&](v128_t w) {
        const v128_t f = wasm_f32x4_mul(wasm_i32x4_shl(wasm_v128_and(w, magnitude), 13), scale);
        return wasm_v128_or(f, wasm_i32x4_shl(wasm_v128_andnot(w, magnitude), 16));  // the sign bit
      };
      lo = one(lo), hi = one(hi);
    }
    wasm_v128_store(out + i, lo);
    wasm_v128_store(out + i + 4, hi);
  }
#endif
  // Copied out, not read as uint16_t: a safetensors file need not align its 16-bit tensors to 2 bytes.
  for (; i < count; ++i) {
    std::uint16_t x;
    std::memcpy(&x, h + i, sizeof x);
    out[i] = widen(x, precision);
  }
}

std::int64_t packed_size(std::int64_t k, std::int64_t n) {
  return (n + kPanelColumns - 1) / kPanelColumns * k * kPanelColumns;
}

namespace {

// Element (p, j) of B, as the source's raw bits (E bytes each), copied into its panel slot. Copied
// byte-wise: a safetensors file need not place its tensors at multiples of their element size.
template <std::size_t E>
void pack_panels(const void* source, std::int64_t k, std::int64_t n, bool transposed, void* panels) {
  constexpr Precision layout = E == 4 ? Precision::f32 : Precision::bf16;  // every 16-bit panel interleaves
  const auto* src = static_cast<const std::uint8_t*>(source);
  auto* out = static_cast<std::uint8_t*>(panels);
  for (std::int64_t col = 0; col < n; col += kPanelColumns)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < kPanelColumns; ++j) {
        std::uint8_t* slot = out + (col * k + p * kPanelColumns + panel_slot(j, layout)) * E;
        if (col + j < n)
          std::memcpy(slot, src + (transposed ? (col + j) * k + p : p * n + col + j) * E, E);
        else
          std::memset(slot, 0, E);
      }
}

}  // namespace

PackedWeight::PackedWeight(const float* b, std::int64_t k, std::int64_t n) : b_(b), k_(k), n_(n) {}

PackedWeight::PackedWeight(const MatrixSource& s) : k_(s.k), n_(s.n), precision_(s.precision) {
  panels_.resize(static_cast<std::size_t>((n_ + kPanelColumns - 1) / kPanelColumns * panel_bytes(k_, precision_)));
  if (is_quantized(precision_))
    pack_quantized(precision_, static_cast<const std::uint8_t*>(s.data), k_, n_, panels_.data());
  else if (precision_ == Precision::f32)
    pack_panels<4>(s.data, k_, n_, s.transposed, panels_.data());
  else
    pack_panels<2>(s.data, k_, n_, s.transposed, panels_.data());
  std::call_once(once_, [] {});  // packed already
#ifndef __wasm_simd128__
  const Tensor unpacked = unpack();
  matrix_.assign(unpacked.data.begin(), unpacked.data.end());  // Eigen multiplies a row-major float32 B
#endif
}

PackedWeight::PackedWeight(std::int64_t k, std::int64_t n, const RowSource& source) : k_(k), n_(n), source_(&source) {}

void for_panels(ThreadPool& pool, std::int64_t count, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  constexpr std::int64_t kBlocksPerThread = 8;
  const std::int64_t block = std::max<std::int64_t>(1, count / (kBlocksPerThread * pool.size()));
  pool.parallel_for(static_cast<std::size_t>((count + block - 1) / block), [&](std::size_t task, int) {
    const std::int64_t first = static_cast<std::int64_t>(task) * block;
    fn(first, std::min(count, first + block));
  });
}

bool pack_rows_into(const float* rows, std::int64_t n, std::int64_t count, std::int64_t col_begin, std::int64_t col_end,
                    float* panels, std::int64_t panel_rows, std::int64_t first) {
  std::uint32_t bad = 0;  // exponent bits all set: NaN or ±Infinity
  const auto check = [&bad](const float* row, std::int64_t floats) {
    for (std::int64_t j = 0; j < floats; ++j) {
      std::uint32_t bits;
      std::memcpy(&bits, row + j, 4);
      bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
  };
#ifdef __wasm_simd128__
  const v128_t exponent = wasm_i32x4_splat(0x7f800000);
  v128_t bad4 = wasm_i32x4_splat(0);
#endif
  col_end = std::min(col_end, n);
  std::int64_t col = col_begin;
#ifdef __wasm_simd128__
  // Whole panels two at a time, row after row: each row's 16 floats there are one cache line, read once and
  // written to the two panels' rows, so the reads never come back for a line's other half and the writes
  // go in two sequential streams. (Panel by panel, the block's rows, 3 KB apart at n = 768, fall into a
  // few sets of the L1 cache and evict one another before the next panel reads their other halves; row by
  // row across every panel, each 32-byte write lands on another page.) The values are summed as they pass:
  // a sum that stays finite proves every value finite, in one add per four (a weight is packed on every
  // one-shot call, and this loop is bound by its instructions); a sum that does not (NaN, ±Infinity, or
  // finite values overflowing) sends the block to the exact check below.
  const std::int64_t whole_end = col + (col_end - col) / kPanelColumns * kPanelColumns;
  v128_t sum0 = wasm_f32x4_splat(0.0f), sum1 = sum0;
  for (std::int64_t c = col; c < whole_end; c += 2 * kPanelColumns) {
    const bool pair = c + kPanelColumns < whole_end;
    const float* from = rows + c;
    float* to = panels + c * panel_rows + first * kPanelColumns;
    float* next = to + panel_rows * kPanelColumns;  // the second panel's rows
    for (std::int64_t p = 0; p < count; ++p, from += n, to += kPanelColumns, next += kPanelColumns) {
      const v128_t a = wasm_v128_load(from), b = wasm_v128_load(from + 4);
      wasm_v128_store(to, a);
      wasm_v128_store(to + 4, b);
      sum0 = wasm_f32x4_add(sum0, a);
      sum1 = wasm_f32x4_add(sum1, b);
      if (!pair) continue;
      const v128_t e = wasm_v128_load(from + 8), f = wasm_v128_load(from + 12);
      wasm_v128_store(next, e);
      wasm_v128_store(next + 4, f);
      sum0 = wasm_f32x4_add(sum0, e);
      sum1 = wasm_f32x4_add(sum1, f);
    }
  }
  const v128_t sum = wasm_f32x4_add(sum0, sum1);
  if (!wasm_i32x4_all_true(wasm_f32x4_eq(wasm_f32x4_sub(sum, sum), wasm_f32x4_splat(0.0f))))
    for (std::int64_t p = 0; p < count; ++p)
      for (std::int64_t c = col; c < whole_end; c += kPanelColumns) {
        const v128_t a = wasm_v128_load(rows + p * n + c), b = wasm_v128_load(rows + p * n + c + 4);
        bad4 = wasm_v128_or(bad4, wasm_v128_or(wasm_i32x4_eq(wasm_v128_and(a, exponent), exponent),
                                               wasm_i32x4_eq(wasm_v128_and(b, exponent), exponent)));
      }
  col = whole_end;
#endif
  for (; col < col_end; col += kPanelColumns) {
    const std::int64_t width = std::min(kPanelColumns, n - col);
    float* row = panels + col * panel_rows + first * kPanelColumns;
    const float* from = rows + col;
    for (std::int64_t p = 0; p < count; ++p, row += kPanelColumns, from += n) {
      std::memcpy(row, from, static_cast<std::size_t>(width) * 4);
      std::fill(row + width, row + kPanelColumns, 0.0f);
      check(row, width);
    }
  }
#ifdef __wasm_simd128__
  bad |= static_cast<std::uint32_t>(wasm_v128_any_true(bad4));
#endif
  return bad == 0;
}

void for_each_block(const RowSource& source, std::int64_t k, std::int64_t n, ThreadPool* pool, std::int64_t shares,
                    const BlockTask& task) {
  const std::int64_t block = std::min(k, stream_block_rows(n)), pair = 2 * kPanelColumns;
  const std::int64_t pairs = (n + pair - 1) / pair;
  const std::int64_t wanted = std::clamp<std::int64_t>(shares, 1, pairs);
  const std::int64_t width = (pairs + wanted - 1) / wanted * pair;  // columns a share
  const std::int64_t count_of_shares = (n + width - 1) / width;
  std::vector<char> bad(static_cast<std::size_t>(count_of_shares));
  const auto read = [&](std::int64_t first, std::vector<float>& rows) {
    if (first < k) source.read(first, std::min(block, k - first), rows.data());
  };
  // With other threads, the calling thread reads the next block from the source while they start on this
  // one's tasks, then joins them: the read (a copy out of a JS array, on this thread only) is off the
  // critical path. One thread reads each block just before its tasks, which then find it in cache.
  const bool ahead = pool && pool->size() > 1;
  std::vector<float> rows(static_cast<std::size_t>(block * n)), next(ahead ? rows.size() : 0);
  if (ahead) read(0, rows);
  for (std::int64_t first = 0; first < k; first += block) {
    const std::int64_t count = std::min(block, k - first);
    const auto share = [&](std::size_t s, int worker) {
      const std::int64_t c0 = static_cast<std::int64_t>(s) * width;
      bad[s] = !task(rows.data(), first, count, c0, std::min(n, c0 + width), worker);
    };
    if (ahead) {
      pool->parallel_for(static_cast<std::size_t>(count_of_shares), share, [&] { read(first + block, next); });
    } else {
      read(first, rows);
      for (std::int64_t s = 0; s < count_of_shares; ++s) share(static_cast<std::size_t>(s), 0);
    }
    if (std::find(bad.begin(), bad.end(), 1) != bad.end()) source.reject(first, count, rows.data());
    if (ahead) rows.swap(next);
  }
}

void PackedWeight::read_whole(ThreadPool* pool) const {
  panels_.resize(static_cast<std::size_t>(packed_size(k_, n_)) * 4);
  auto* panels = reinterpret_cast<float*>(panels_.data());
#ifndef __wasm_simd128__
  matrix_.resize(static_cast<std::size_t>(k_ * n_));  // Eigen multiplies a row-major float32 B
#endif
  // Each block packed by every thread, a share of the columns each; reading from JS stays on this one.
  for_each_block(*source_, k_, n_, pool, pool ? pool->size() : 1,
                 [&](const float* rows, std::int64_t first, std::int64_t count, std::int64_t c0, std::int64_t c1, int) {
                   if (!matrix_.empty())  // natively
                     for (std::int64_t p = 0; p < count; ++p)
                       std::copy_n(rows + p * n_ + c0, c1 - c0, matrix_.data() + (first + p) * n_ + c0);
                   return pack_rows_into(rows, n_, count, c0, c1, panels, k_, first);
                 });
  whole_ = true;
}

void PackedWeight::read(ThreadPool* pool) const {
  std::call_once(once_, [&] { read_whole(pool); });
}

const void* PackedWeight::panels() const {
  std::call_once(once_, [this] {
    if (source_) return read_whole(nullptr);
    panels_.resize(static_cast<std::size_t>(packed_size(k_, n_)) * 4);
    pack_panels<4>(b_, k_, n_, false, panels_.data());
  });
  return panels_.data();
}

const void* PackedWeight::panels_from(std::int64_t col) const {
  return static_cast<const std::uint8_t*>(panels()) + col / kPanelColumns * panel_bytes(k_, precision_);
}

const float* PackedWeight::matrix() const {
#ifndef __wasm_simd128__
  if (source_) panels();  // read whole: natively Eigen multiplies the row-major copy
#endif
  return b_ ? b_ : matrix_.empty() ? nullptr : matrix_.data();
}

const std::uint8_t* PackedWeight::panel_as_read(std::int64_t c, std::vector<float>& scratch, Precision& as) const {
  const std::uint8_t* panel = panels_.data() + c * panel_bytes(k_, precision_);
  as = precision_;
  if (!is_quantized(precision_)) return panel;
  scratch.resize(static_cast<std::size_t>(k_ * kPanelColumns));
  dequantize_panel(panel, precision_, 0, k_, scratch.data());
  as = Precision::f32;
  return reinterpret_cast<const std::uint8_t*>(scratch.data());
}

void PackedWeight::column(std::int64_t j, float* out) const {
  if (source_) panels();
  if (b_) {
    for (std::int64_t p = 0; p < k_; ++p) out[p] = b_[p * n_ + j];
    return;
  }
  // Panel j / 8, slot j % 8 of each of its k rows.
  std::vector<float> scratch;
  Precision as;
  const std::uint8_t* panel = panel_as_read(j / kPanelColumns, scratch, as);
  const std::int64_t slot = panel_slot(j % kPanelColumns, as), size = bytes_of(as);
  for (std::int64_t p = 0; p < k_; ++p) {
    const std::uint8_t* at = panel + (p * kPanelColumns + slot) * size;
    if (as == Precision::f32) {
      std::memcpy(out + p, at, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, at, 2);
      out[p] = widen(h, as);
    }
  }
}

Tensor PackedWeight::unpack() const {
  Tensor t({k_, n_});
  if (source_) panels();
  if (b_) {
    std::copy_n(b_, k_ * n_, t.data.begin());
    return t;
  }
  // Panel by panel, its rows into their eight columns of t's rows.
  const std::int64_t panels = (n_ + kPanelColumns - 1) / kPanelColumns;
  std::vector<float> scratch;
  for (std::int64_t c = 0; c < panels; ++c) {
    Precision as;
    const std::uint8_t* panel = panel_as_read(c, scratch, as);
    const std::int64_t size = bytes_of(as), columns = std::min(kPanelColumns, n_ - c * kPanelColumns);
    for (std::int64_t p = 0; p < k_; ++p) {
      float* out = t.data.data() + p * n_ + c * kPanelColumns;
      for (std::int64_t j = 0; j < columns; ++j) {
        const std::uint8_t* at = panel + (p * kPanelColumns + panel_slot(j, as)) * size;
        if (as == Precision::f32) {
          std::memcpy(out + j, at, 4);
        } else {
          std::uint16_t h;
          std::memcpy(&h, at, 2);
          out[j] = widen(h, as);
        }
      }
    }
  }
  return t;
}

void PackedWeight::block_rows(const float* x, std::int64_t block, float* out) const {
  if (source_) panels();
  const std::int64_t blocks = k_ / block;
  std::fill_n(out, blocks * n_, 0.0f);
  if (b_) {
    for (std::int64_t r = 0; r < k_; ++r)
      for (std::int64_t j = 0; j < n_; ++j) out[r / block * n_ + j] += x[r] * b_[r * n_ + j];
    return;
  }
  const std::int64_t panels = (n_ + kPanelColumns - 1) / kPanelColumns;
  std::vector<float> scratch;
  for (std::int64_t c = 0; c < panels; ++c) {
    Precision as;
    const std::uint8_t* panel = panel_as_read(c, scratch, as);
    const std::int64_t size = bytes_of(as);
    const std::int64_t columns = std::min(kPanelColumns, n_ - c * kPanelColumns);
    for (std::int64_t b = 0; b < blocks; ++b) {
      float sums[kPanelColumns] = {};  // the panel's eight columns, in column order
#ifdef __wasm_simd128__
      v128_t lo = wasm_f32x4_splat(0), hi = lo;
      for (std::int64_t r = b * block; r < (b + 1) * block; ++r) {
        const std::uint8_t* row = panel + r * kPanelColumns * size;
        v128_t b0, b1;
        if (as == Precision::f32)
          b0 = wasm_v128_load(row), b1 = wasm_v128_load(row + 16);
        else if (as == Precision::bf16)
          widen_panel_row<Precision::bf16>(reinterpret_cast<const std::uint16_t*>(row), b0, b1);
        else
          widen_panel_row<Precision::f16>(reinterpret_cast<const std::uint16_t*>(row), b0, b1);
        const v128_t a = wasm_f32x4_splat(x[r]);
        lo = wasm_f32x4_add(lo, wasm_f32x4_mul(a, b0));
        hi = wasm_f32x4_add(hi, wasm_f32x4_mul(a, b1));
      }
      wasm_v128_store(sums, lo);
      wasm_v128_store(sums + 4, hi);
#else
      for (std::int64_t r = b * block; r < (b + 1) * block; ++r)
        for (std::int64_t j = 0; j < kPanelColumns; ++j) {
          const std::uint8_t* at = panel + (r * kPanelColumns + panel_slot(j, as)) * size;
          float v;
          if (as == Precision::f32) {
            std::memcpy(&v, at, 4);
          } else {
            std::uint16_t h;
            std::memcpy(&h, at, 2);
            v = widen(h, as);
          }
          sums[j] += x[r] * v;
        }
#endif
      std::copy_n(sums, columns, out + b * n_ + c * kPanelColumns);
    }
  }
}

std::int64_t PackedWeight::bytes() const { return static_cast<std::int64_t>(panels_.size() + matrix_.size() * 4); }

void prepare_weight(Tensor& w) {
  if (w.empty() || w.rank() != 2) return;
  w.packed = std::make_shared<PackedWeight>(w.data.data(), w.shape[0], w.shape[1]);
}

}  // namespace attnscope::kernels

namespace attnscope {

void pack_on_first_use(Tensor& w) { kernels::prepare_weight(w); }

StreamedWeight::StreamedWeight(std::int64_t k, std::int64_t n, std::unique_ptr<RowSource> source)
    : source_(std::move(source)), packed_(std::make_shared<kernels::PackedWeight>(k, n, *source_)), shape_{k, n} {}

TensorView StreamedWeight::view() const {
  TensorView v(nullptr, shape_);  // never read as rows: the kernels read packed
  v.packed = packed_.get();
  return v;
}

bool heads_on_whole_panels(std::int64_t n, std::int64_t heads) {
  return heads > 0 && n % heads == 0 && (n / heads) % kernels::kPanelColumns == 0;
}

}  // namespace attnscope
