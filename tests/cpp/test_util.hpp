// Random tensors and tolerant comparison for the native tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attnscope/attention.hpp"

namespace attnscope::testing {

inline Tensor random_tensor(Shape shape, std::uint32_t seed, float scale = 1.0f) {
  Tensor t(std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (auto& x : t.data) x = dist(rng);
  return t;
}

// |a - b| <= atol + rtol·|b| everywhere, reporting the first offending index.
inline ::testing::AssertionResult all_close(const Tensor& a, const Tensor& b, float atol = 1e-5f, float rtol = 1e-4f) {
  if (a.shape != b.shape)
    return ::testing::AssertionFailure() << "shapes " << format_shape(a.shape) << " vs " << format_shape(b.shape);
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const float x = a.data[i], y = b.data[i];
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y)))
      return ::testing::AssertionFailure() << "index " << i << ": " << x << " vs " << y;
  }
  return ::testing::AssertionSuccess();
}

// Runs fn, expecting an attnscope::Error whose message contains `needle`.
template <typename Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace attnscope::testing
