// Messages and generated JSON put together from pieces without temporary strings: in wasm, every temporary string
// around a call that may throw costs a landing pad and an invoke, which made the GGUF readers' error paths larger
// than the reading. Numbers as text in a buffer of their own; pieces as string_views, appended to one string.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>

namespace attnscope {

// A number as text: whole numbers in full, others as %.17g (which reads back to the same double).
class Num {
 public:
  explicit Num(double x) {
    const bool whole = x > -9e18 && x < 9e18 && x == std::floor(x);  // in range before the cast, and not NaN
    size_ = static_cast<std::size_t>(whole ? std::snprintf(text_, sizeof text_, "%lld", static_cast<long long>(x))
                                           : std::snprintf(text_, sizeof text_, "%.17g", x));
  }
  operator std::string_view() const { return {text_, size_}; }

 private:
  char text_[32];
  std::size_t size_;
};

// The pieces appended to `out`.
inline void append(std::string& out, std::initializer_list<std::string_view> parts) {
  for (const std::string_view p : parts) out.append(p.data(), p.size());
}

// Throws an Error whose message is the pieces.
[[noreturn]] void fail(std::initializer_list<std::string_view> parts);

}  // namespace attnscope
