#include "threads/thread_pool.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>

#ifdef __EMSCRIPTEN__
#include <emscripten/threading.h>
#endif

namespace attnscope {

namespace {

constexpr auto kSpin = std::chrono::microseconds(200);  // how long an idle worker watches for the next loop
constexpr std::uint64_t kTaskMask = 0xffffffffu;
constexpr std::uint64_t kClosed = kTaskMask;  // the task field while a loop is being set up: nothing to claim

std::uint64_t loop_of(std::uint64_t state) { return state >> 32; }

}  // namespace

// Everything a worker thread touches. It outlives every worker: the pool's destructor joins them all.
struct ThreadPool::Shared {
  // A worker thread's whole life.
  void work(int worker, const StartHook& on_start);
  // Waits (spinning, then sleeping) until the loop number differs from `seen` or the pool stops.
  std::uint64_t wait_for_loop(std::uint64_t seen);
  // Claims and runs tasks of the current loop until none is left.
  void run_tasks(int worker);

  std::mutex mutex;              // guards sleeping, the write of stop, error
  std::condition_variable wake;  // a new loop, or stop
  std::atomic<int> sleepers{0};  // workers inside wake.wait
  std::atomic<bool> stop{false};

  // The current loop: (loop number << 32) | next unclaimed task. A new loop is set up
  // under a loop number of its own whose task field is kClosed, so a claim a worker
  // prepared against the previous loop fails; fn and count are written then, and stay
  // fixed from the moment the next loop number opens the tasks until every task is done.
  std::atomic<std::uint64_t> state{0};
  std::atomic<const Task*> fn{nullptr};
  std::atomic<std::size_t> count{0};
  std::atomic<std::size_t> done{0};  // tasks of the current loop finished
  std::exception_ptr error;
};

ThreadPool::ThreadPool(int threads, StartHook on_start) : shared_(std::make_unique<Shared>()) {
  for (int w = 1; w < threads; ++w) workers_.emplace_back([s = shared_.get(), w, on_start] { s->work(w, on_start); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stop.store(true);
  }
  shared_->wake.notify_all();
  // Every worker, also one that has not started yet (it sees stop and leaves at once). Under
  // Emscripten the package frees each pthread's stack and ends its Web Worker right after this
  // returns; a worker that started later ran on freed memory (seen in Chromium: a pthread
  // trapped with "memory access out of bounds" after its engine was disposed).
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::Shared::work(int worker, const StartHook& on_start) {
  if (on_start) on_start(worker);
  std::uint64_t seen = 0;
  for (;;) {
    seen = wait_for_loop(seen);
    if (stop.load()) return;
    run_tasks(worker);
  }
}

std::uint64_t ThreadPool::Shared::wait_for_loop(std::uint64_t seen) {
  const auto changed = [&] { return stop.load() || loop_of(state.load()) != seen; };
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 1; !changed(); ++spins) {
    if (spins % 256 == 0 && std::chrono::steady_clock::now() - start > kSpin) {
      std::unique_lock<std::mutex> lock(mutex);
      sleepers.fetch_add(1);  // before the check in wait(): parallel_for then sees a sleeper, or we see its loop
      wake.wait(lock, changed);
      sleepers.fetch_sub(1);
      break;
    }
  }
  return loop_of(state.load());
}

void ThreadPool::Shared::run_tasks(int worker) {
  std::uint64_t s = state.load(std::memory_order_acquire);
  for (;;) {
    const std::size_t task = static_cast<std::size_t>(s & kTaskMask);
    // count may belong to a newer loop than `s`; then state has moved on (count is only written
    // while the state is closed, and this load is ordered after that) and the claim below fails.
    if (task >= count.load()) return;
    if (!state.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      continue;  // `s` now holds the current value: another claim, or a newer loop
    try {
      (*fn.load(std::memory_order_relaxed))(task, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error) error = std::current_exception();
    }
    done.fetch_add(1, std::memory_order_release);
    s = state.load(std::memory_order_acquire);
  }
}

void ThreadPool::set_aside(std::function<void()> piece) { set_aside_.push_back(std::move(piece)); }

template <typename More>
void ThreadPool::run_set_aside_while(More more) {
  try {
    while (!set_aside_.empty() && more()) {
      const std::function<void()> piece = std::move(set_aside_.front());
      set_aside_.pop_front();
      piece();
    }
  } catch (...) {
    set_aside_.clear();
    throw;
  }
}

void ThreadPool::run_set_aside() {
  run_set_aside_while([] { return true; });
}

void ThreadPool::parallel_for(std::size_t n, const Task& fn) { parallel_for(n, fn, {}); }

void ThreadPool::parallel_for(std::size_t n, const Task& fn, const std::function<void()>& first) {
  if (workers_.empty() || n == 0 || (n == 1 && !first)) {
    if (first) first();
    for (std::size_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  if (n >= kClosed) throw std::length_error("ThreadPool: too many tasks in one loop");
  Shared& s = *shared_;
  const std::uint64_t loop = loop_of(s.state.load()) + 1;
  s.state.store(loop << 32 | kClosed);  // first: a worker's claim prepared against the last loop now fails
  s.fn.store(&fn);
  s.count.store(n);
  s.done.store(0);
  s.error = nullptr;
  s.state.store((loop + 1) << 32);  // opens the tasks (seq_cst: before the load of sleepers below)
  if (s.sleepers.load() > 0) {
    { std::lock_guard<std::mutex> lock(s.mutex); }  // a worker between its check and its wait holds the mutex
    s.wake.notify_all();
  }
  std::exception_ptr first_error;
  try {
    if (first) first();
    // Set-aside pieces while the workers still have tasks to claim: the calling thread joins them afterwards.
    run_set_aside_while([&] { return (s.state.load() & kTaskMask) < n; });
  } catch (...) {
    set_aside_.clear();                      // also when `first` threw
    first_error = std::current_exception();  // rethrown once the workers are done with the loop
  }
  s.run_tasks(0);
  // The last tasks are running on other threads (a task is only ever claimed by a running
  // thread), so this wait is short.
  for (unsigned spins = 1; s.done.load(std::memory_order_acquire) < n; ++spins) {
#ifdef __EMSCRIPTEN__
    // Calls other threads proxy to this one (none of ours do; the runtime may) still run.
    if (spins % 1024 == 0) emscripten_current_thread_process_queued_calls();
#endif
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    std::swap(error, s.error);
  }
  if (first_error) std::rethrow_exception(first_error);
  if (error) std::rethrow_exception(error);
}

}  // namespace attnscope
