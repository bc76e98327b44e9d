#include "thread_pool.hpp"

namespace attnscope {

ThreadPool::ThreadPool(int threads) {
  for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { worker_loop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int worker) {
  std::uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++active_;  // counted before claiming a task, so the caller waits for it
    lock.unlock();
    run_tasks(worker);
    lock.lock();
    if (--active_ == 0) finished_.notify_all();
  }
}

void ThreadPool::run_tasks(int worker) {
  for (;;) {
    const std::size_t task = next_.fetch_add(1, std::memory_order_relaxed);
    if (task >= count_) return;
    try {
      (*fn_)(task, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::parallel_for(std::size_t n, const Task& fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // A worker that woke late for the previous loop may still be looking at count_ (it finds
    // nothing to do): let it leave before this loop's fn_ and count_ replace that loop's.
    finished_.wait(lock, [&] { return active_ == 0; });
    fn_ = &fn;
    count_ = n;
    next_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  run_tasks(0);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return active_ == 0; });
    // Late wakers see next_ >= count_ and touch nothing; park them on an empty loop.
    count_ = 0;
    fn_ = nullptr;
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace attnscope
