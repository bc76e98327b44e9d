// A check the native and the wasm thread-pool tests share (tests/wasm/threads_test.cpp
// runs it on real pthreads): loops back to back whose task counts go up and down, so
// that a worker still claiming in loop L while the caller sets up loop L+1 would take
// a task of either by mistake.
#pragma once

#include <atomic>
#include <vector>

#include "threads/thread_pool.hpp"

namespace attnscope {

// 0 if every task of `rounds` loops ran exactly once and inside its own loop; else the
// first round where one did not.
inline long first_mixed_loop(ThreadPool& pool, long rounds) {
  std::vector<std::atomic<int>> hits(64);
  std::atomic<long> loop{0};
  std::atomic<int> strays{0};
  for (long round = 1; round <= rounds; ++round) {
    const std::size_t n = static_cast<std::size_t>(1 + (round * 37) % 63);
    for (std::size_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
    loop.store(round);
    pool.parallel_for(n, [&, round](std::size_t i, int) {
      strays += loop.load() != round || i >= n;
      ++hits[i];
    });
    loop.store(-round);  // tasks of this loop running from now on are strays
    for (std::size_t i = 0; i < n; ++i)
      if (hits[i].load() != 1) return round;
    if (strays.load() != 0) return round;
  }
  return 0;
}

}  // namespace attnscope
