// A persistent pool of worker threads that runs index-parallel loops.
//
// parallel_for(n, fn) calls fn(task, worker) once for every task in [0, n),
// spreading tasks over the workers and the calling thread (worker 0), and
// returns when all are done. Under Emscripten the threads are pthreads on Web
// Workers that the JS glue starts before the module is ready (PTHREAD_POOL_SIZE).
//
// Between loops a worker spins for a short while (kSpin) before it sleeps: a model
// runs dozens of loops back to back, and waking a sleeping thread costs about 25 µs
// in wasm (measured), more than many of those loops take. Tasks are claimed with one
// atomic word holding the loop's number and the next task, so a worker that arrives
// late can never take a task of a later loop by mistake.
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
  // Claims and runs tasks of the current loop until none is left.
  void run_tasks(int worker);
  // Waits (spinning, then sleeping) until the loop number differs from `seen` or the pool stops.
  std::uint64_t wait_for_loop(std::uint64_t seen);

  std::vector<std::thread> workers_;
  std::mutex mutex_;              // guards sleeping and error_
  std::condition_variable wake_;  // a new loop, or stop
  std::atomic<int> sleepers_{0};  // workers inside wake_.wait
  std::atomic<bool> stop_{false};

  // The current loop: (loop number << 32) | next unclaimed task. fn_ and count_ are
  // written before the loop number is published and stay fixed until every task is done.
  std::atomic<std::uint64_t> state_{0};
  std::atomic<const Task*> fn_{nullptr};
  std::atomic<std::size_t> count_{0};
  std::atomic<std::size_t> done_{0};  // tasks of the current loop finished
  std::exception_ptr error_;
};

}  // namespace attnscope
