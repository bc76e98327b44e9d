// A persistent pool of worker threads that runs index-parallel loops.
//
// parallel_for(n, fn) calls fn(task, worker) once for every task in [0, n),
// spreading tasks over the workers and the calling thread (worker 0), and
// returns when all are done. Workers sleep between loops, so a kernel pays no
// thread start-up. Under Emscripten the threads are pthreads on Web Workers
// that the JS glue starts before the module is ready (PTHREAD_POOL_SIZE).
//
// If a worker never starts (a browser out of Workers), the caller simply runs
// every task itself: a loop never waits for a thread that is not there.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attnscope {

class ThreadPool {
 public:
  using Task = std::function<void(std::size_t task, int worker)>;

  // `threads` counts the calling thread: ThreadPool(1) starts no thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Rethrows the first exception a task threw, after every task has finished.
  void parallel_for(std::size_t n, const Task& fn);

 private:
  void worker_loop(int worker);
  void run_tasks(int worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;      // a new loop, or stop
  std::condition_variable finished_;  // active_ reached 0
  std::uint64_t generation_ = 0;      // bumped for every loop
  int active_ = 0;                    // workers inside run_tasks
  bool stop_ = false;

  // The current loop; written under mutex_ before generation_ is bumped.
  const Task* fn_ = nullptr;
  std::size_t count_ = 0;
  std::atomic<std::size_t> next_{0};
  std::exception_ptr error_;
};

}  // namespace attnscope
