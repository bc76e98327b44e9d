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

// A float32 weight [k, n] packed as it arrives, a block of rows at a time, and checked as it is
// packed: a one-shot call's weight streamed in from JS. Only its panels exist; in wasm the
// Runtime reads nothing else of it.
class StreamedWeight {
 public:
  StreamedWeight(std::int64_t k, std::int64_t n);
  // Rows [first, first + count) of the weight, row-major; false if any of them is NaN or ±Infinity.
  bool write_rows(const float* rows, std::int64_t first, std::int64_t count);
  // The weight for the Runtime, once every row is written.
  TensorView view() const;

 private:
  std::shared_ptr<kernels::PackedWeight> packed_;
  Shape shape_;
};

// Whether each of `heads` blocks of a weight's n columns starts on a whole panel of the GEMM, as the
// Runtime needs to multiply a StreamedWeight head by head.
bool heads_on_whole_panels(std::int64_t n, std::int64_t heads);

}  // namespace attnscope
