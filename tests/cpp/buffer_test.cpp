#include "attnscope/buffer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace attnscope {
namespace {

// What Tensors and panels use of it behaves as std::vector's does, values left unset aside.
TEST(Buffer, KeepsItsValuesAcrossGrowthAndCopies) {
  Buffer<float> b(3, 1.5f);
  EXPECT_EQ(b.size(), 3u);
  b.resize(5, 2.0f);
  EXPECT_EQ(std::vector<float>(b.begin(), b.end()), (std::vector<float>{1.5f, 1.5f, 1.5f, 2.0f, 2.0f}));
  b.resize(2);  // shrinking keeps the first values and the room
  EXPECT_EQ(b.size(), 2u);
  EXPECT_GE(b.capacity(), 5u);
  const std::vector<float> more{7.0f, 8.0f, 9.0f};
  b.append(more.begin(), more.end());
  EXPECT_EQ(std::vector<float>(b.begin(), b.end()), (std::vector<float>{1.5f, 1.5f, 7.0f, 8.0f, 9.0f}));
  b.push_back(10.0f);
  EXPECT_EQ(b.back(), 10.0f);

  Buffer<float> copy = b;
  EXPECT_EQ(copy, b);
  copy[0] = -1.0f;
  EXPECT_NE(copy, b);
  EXPECT_EQ(b[0], 1.5f);  // a copy owns its values
  Buffer<float> moved = std::move(copy);
  EXPECT_EQ(moved[0], -1.0f);
  EXPECT_TRUE(copy.empty());  // NOLINT: a moved-from Buffer is empty

  moved.assign(more.begin(), more.end());
  EXPECT_EQ(moved, (Buffer<float>{7.0f, 8.0f, 9.0f}));
  moved.assign(2, 0.0f);
  EXPECT_EQ(moved, (Buffer<float>{0.0f, 0.0f}));
}

// Rows appended one at a time, as a run's maps grow token by token: the capacity at least doubles, so a buffer of
// n values has moved its values O(log n) times, not n times.
TEST(Buffer, GrowsGeometrically) {
  Buffer<std::uint8_t> b;
  int moves = 0;
  const std::uint8_t* at = b.data();
  for (std::size_t n = 1; n <= 100000; ++n) {
    b.resize(n);
    b[n - 1] = static_cast<std::uint8_t>(n);
    if (b.data() != at) ++moves, at = b.data();
  }
  EXPECT_LE(moves, 20);
  for (std::size_t n = 1; n <= 100000; n += 997) EXPECT_EQ(b[n - 1], static_cast<std::uint8_t>(n));
}

}  // namespace
}  // namespace attnscope
