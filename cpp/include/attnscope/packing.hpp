// Weight matrices laid out for the GEMM kernel before the calls that multiply by them, so that
// those calls neither pack nor check them again.
#pragma once

#include <cstdint>
#include <memory>

#include "attnscope/tensor.hpp"

namespace attnscope {

// Marks the float32 weight w [k, n] for packing on its first use, and as checked: its values must
// be finite already. A model's weights, or a layer JS keeps in the engine.
void pack_on_first_use(Tensor& w);

// Where a streamed weight's rows come from: outside the heap (JS), a block of rows at a time, on the
// calling thread only.
class RowSource {
 public:
  virtual ~RowSource() = default;
  // Rows [first, first + count) of the weight [k, n], row-major, into out [count, n].
  virtual void read(std::int64_t first, std::int64_t count, float* out) const = 0;
  // Throws the error naming the first NaN or ±Infinity of rows [first, first + count), read into `rows`.
  virtual void reject(std::int64_t first, std::int64_t count, const float* rows) const = 0;
};

// A one-shot call's float32 weight [k, n], streamed from JS while it is multiplied: a GEMM with few
// rows packs each block of the weight's rows as it arrives and multiplies it while it is in cache, so
// the weight is read once and never held whole; a GEMM with many rows first reads every block into
// panels. Its values are checked as they are packed. The source must outlive the weight's use.
class StreamedWeight {
 public:
  StreamedWeight(std::int64_t k, std::int64_t n, std::unique_ptr<RowSource> source);
  // The weight for the Runtime: its data null, its `packed` the stream.
  TensorView view() const;

 private:
  std::unique_ptr<RowSource> source_;
  std::shared_ptr<kernels::PackedWeight> packed_;
  Shape shape_;
};

// Whether each of `heads` blocks of a weight's n columns starts on a whole panel of the GEMM, as the
// Runtime needs to multiply a StreamedWeight head by head.
bool heads_on_whole_panels(std::int64_t n, std::int64_t heads);

}  // namespace attnscope
