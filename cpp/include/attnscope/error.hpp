// The one exception type AttnScope throws for input a caller can get wrong.
// Its message names the operation, the argument and the shapes involved, e.g.
// "attention: k has d_k=64 but q has d_k=32". The bindings turn it into a JS Error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attnscope/tensor.hpp"

namespace attnscope {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The most memory one call may use for its inputs, outputs and scratch (1 GiB).
// A request beyond it is refused with an Error before anything is allocated,
// so that a huge shape is a message, never an out-of-memory abort.
inline constexpr std::int64_t kMaxCallBytes = std::int64_t{1} << 30;

// Largest accepted dimension: shapes come from JS numbers and must fit an int.
inline constexpr std::int64_t kMaxDimension = std::int64_t{1} << 30;

// Throws unless `shape` has a rank in [min_rank, max_rank] and every dimension in
// [1, kMaxDimension]. `op` and `name` prefix the message: "attention: q ...".
void check_shape(const char* op, const char* name, const Shape& shape, int min_rank, int max_rank);

// Throws unless all `count` values are finite. Additive masks may hold -inf. `first_index`: the
// index of data[0] in the whole tensor, for the message when data is a block of it.
void check_finite(const char* op, const char* name, const float* data, std::int64_t count,
                  bool allow_negative_infinity = false, std::int64_t first_index = 0);

// `s` in double quotes, for error messages that echo names from files: control
// characters are escaped (a NUL would cut the message short in JS) and anything
// past 80 bytes is elided.
std::string quote(std::string_view s);

// Throws when `bytes` exceeds kMaxCallBytes.
void check_budget(const char* op, double bytes);

}  // namespace attnscope
