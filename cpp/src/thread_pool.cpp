#include "thread_pool.hpp"

#include <chrono>
#include <stdexcept>

namespace attnscope {

namespace {

constexpr auto kSpin = std::chrono::microseconds(200);  // how long an idle worker watches for the next loop
constexpr std::uint64_t kTaskMask = 0xffffffffu;

std::uint64_t loop_of(std::uint64_t state) { return state >> 32; }

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { worker_loop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

std::uint64_t ThreadPool::wait_for_loop(std::uint64_t seen) {
  const auto changed = [&] { return stop_.load() || loop_of(state_.load()) != seen; };
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 1; !changed(); ++spins) {
    if (spins % 256 == 0 && std::chrono::steady_clock::now() - start > kSpin) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);  // before the check in wait(): parallel_for then sees a sleeper, or we see its loop
      wake_.wait(lock, changed);
      sleepers_.fetch_sub(1);
      break;
    }
  }
  return loop_of(state_.load());
}

void ThreadPool::worker_loop(int worker) {
  std::uint64_t seen = 0;
  while (!stop_.load()) {
    seen = wait_for_loop(seen);
    if (stop_.load()) return;
    run_tasks(worker);
  }
}

void ThreadPool::run_tasks(int worker) {
  std::uint64_t state = state_.load(std::memory_order_acquire);
  for (;;) {
    const std::size_t task = static_cast<std::size_t>(state & kTaskMask);
    // count_ may already belong to a newer loop; then state_ has changed and the claim below fails.
    if (task >= count_.load(std::memory_order_relaxed)) return;
    if (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      continue;  // `state` now holds the current value: another claim, or a newer loop
    try {
      (*fn_.load(std::memory_order_relaxed))(task, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    done_.fetch_add(1, std::memory_order_release);
    state = state_.load(std::memory_order_acquire);
  }
}

void ThreadPool::parallel_for(std::size_t n, const Task& fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  if (n > kTaskMask) throw std::length_error("ThreadPool: too many tasks in one loop");
  fn_.store(&fn, std::memory_order_relaxed);
  count_.store(n, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  state_.store((loop_of(state_.load()) + 1) << 32);  // publishes the loop (seq_cst: ordered before the load below)
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }  // a worker between its check and its wait holds the mutex
    wake_.notify_all();
  }
  run_tasks(0);
  while (done_.load(std::memory_order_acquire) < n) {
  }  // the last tasks finish on other threads: they are running, so this wait is short
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace attnscope
