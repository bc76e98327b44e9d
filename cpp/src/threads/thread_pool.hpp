// A persistent pool of worker threads that runs index-parallel loops.
//
// parallel_for(n, fn) calls fn(task, worker) once for every task in [0, n),
// spreading tasks over the workers and the calling thread (worker 0), and
// returns when all are done. Under Emscripten the threads are pthreads on Web
// Workers that the JS glue starts before the module is ready (PTHREAD_POOL_SIZE).
//
// Between loops a worker spins for a short while (kSpin in the .cpp) before it
// sleeps: a model runs dozens of loops back to back, and waking a sleeping pthread
// in wasm takes longer than many of those loops do. Tasks are
// claimed through one atomic word holding the loop's number and the next task, so a
// worker that arrives late can never take a task of a later loop by mistake.
//
// A loop never waits for a thread that has not started: its tasks go to whoever
// claims them (the caller runs them all if need be). The destructor, though, joins
// every worker, started or not (one that starts after stop leaves at once): under
// Emscripten a pthread starts when its Web Worker gets to the message, and the
// package frees the pthread's stack as soon as the pool is gone.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace attnscope {

class ThreadPool {
 public:
  using Task = std::function<void(std::size_t task, int worker)>;
  // Runs first on each worker thread, before the worker joins the pool (tests use it
  // to hold a worker back).
  using StartHook = std::function<void(int worker)>;

  // `threads` counts the calling thread: ThreadPool(1) starts no thread.
  explicit ThreadPool(int threads, StartHook on_start = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Rethrows the first exception a task threw, after every task has finished.
  void parallel_for(std::size_t n, const Task& fn);
  // The same, but the calling thread first runs `first` while the workers start on the tasks, then
  // joins them: for work only the calling thread can do (reading a JS array) beside the loop's. `first`
  // runs exactly once, also without workers (then before the tasks); an exception from it is rethrown once no
  // task is running.
  void parallel_for(std::size_t n, const Task& fn, const std::function<void()>& first);

  // Work only the calling thread can do (writing a JS array), set aside to run beside later loops: a loop with
  // workers runs set-aside pieces, oldest first, on the calling thread while some of its tasks are still
  // unclaimed, then joins its workers. Without workers nothing runs beside a loop; run_set_aside runs what is
  // left, drop_set_aside forgets it (a run that failed). Pieces come and run on the thread that set them aside;
  // one that throws is dropped with the rest, and its exception is rethrown by the loop or by run_set_aside.
  void set_aside(std::function<void()> piece);
  void run_set_aside();
  void drop_set_aside() { set_aside_.clear(); }
  std::size_t set_aside_count() const { return set_aside_.size(); }

 private:
  struct Shared;
  std::unique_ptr<Shared> shared_;
  std::vector<std::thread> workers_;
  std::deque<std::function<void()>> set_aside_;
  // Runs set-aside pieces, oldest first, while there are some and `more()`; one that throws drops the rest.
  template <typename More>
  void run_set_aside_while(More more);
};

}  // namespace attnscope
