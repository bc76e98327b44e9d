#include "threads/thread_pool.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

#include "thread_pool_loops.hpp"

namespace attnscope {
namespace {

TEST(ThreadPool, RunsEveryTaskOnceAcrossManyLoops) {
  ThreadPool pool(3);
  for (std::size_t n : {0u, 1u, 2u, 7u, 1000u}) {
    std::vector<std::atomic<int>> hits(n);
    for (int round = 0; round < 50; ++round) pool.parallel_for(n, [&](std::size_t i, int) { ++hits[i]; });
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 50) << "task " << i;
  }
}

// Loops back to back (workers spinning), and after pauses longer than the spin
// (workers asleep): every task runs once either way, and loops never mix.
TEST(ThreadPool, WakesSpinningAndSleepingWorkers) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(64);
  for (int round = 0; round < 400; ++round) {
    if (round % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const int expected = round;
    std::atomic<int> wrong{0};
    pool.parallel_for(hits.size(), [&](std::size_t i, int) {
      wrong += hits[i].load() != expected;  // a task of this loop sees the previous loop's count
      ++hits[i];
    });
    ASSERT_EQ(wrong.load(), 0) << "round " << round;
  }
  for (auto& h : hits) EXPECT_EQ(h.load(), 400);
}

// Every task of 200,000 loops with rising and falling task counts runs exactly once,
// inside its own loop (thread_pool_loops.hpp; the wasm test runs the same check).
TEST(ThreadPool, NoTaskRunsTwiceOrOutsideItsLoop) {
  ThreadPool pool(3);
  EXPECT_EQ(first_mixed_loop(pool, 200000), 0) << "the round where a task ran twice, not at all, or outside its loop";
}

// A loop whose tasks outlast the spin: the caller waits for the slow ones.
TEST(ThreadPool, WaitsForSlowTasks) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  pool.parallel_for(4, [&](std::size_t, int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    ++done;
  });
  EXPECT_EQ(done.load(), 4);
}

// Destroyed at once, before or while its workers start: each worker still starts, sees
// stop and leaves, and the destructor returns once all have.
TEST(ThreadPool, DestroyedBeforeItsWorkersStart) {
  for (int round = 0; round < 200; ++round) {
    ThreadPool pool(4);
    if (round % 2) pool.parallel_for(8, [](std::size_t, int) {});
  }
}

// Under Emscripten a pthread starts when its Web Worker gets to the message, and the
// package frees the pthread's stack and ends its Web Worker as soon as the engine (and
// its pool) is destroyed. A worker held back before it starts: loops still finish (the
// caller runs every task), and the destructor returns only after the worker has been let
// go and has left, with nothing of it still alive.
TEST(ThreadPool, DestructorWaitsForAWorkerThatHasNotStarted) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  auto held = std::make_shared<int>(0);  // owned by the hook, so by the held thread
  std::weak_ptr<int> watch = held;
  auto pool = std::make_unique<ThreadPool>(2, [gate, held](int) { gate.wait(); });
  held.reset();
  std::atomic<int> done{0};
  pool->parallel_for(100, [&](std::size_t, int worker) {
    EXPECT_EQ(worker, 0);
    ++done;
  });
  EXPECT_EQ(done.load(), 100);
  auto destroyed = std::async(std::launch::async, [&] { pool.reset(); });
  EXPECT_EQ(destroyed.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout)
      << "the destructor returned while a worker had not started";
  release.set_value();
  ASSERT_EQ(destroyed.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the destructor did not return after its last worker was let go";
  EXPECT_TRUE(watch.expired()) << "a worker still held its state after the destructor returned";
}

TEST(ThreadPool, WorkerIndicesAreInRange) {
  ThreadPool pool(4);
  std::atomic<int> bad{0};
  pool.parallel_for(10000, [&](std::size_t, int w) { bad += (w < 0 || w >= 4); });
  EXPECT_EQ(bad.load(), 0);
}

TEST(ThreadPool, RethrowsAfterAllTasksAndStaysUsable) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  EXPECT_THROW(pool.parallel_for(100,
                                 [&](std::size_t i, int) {
                                   ++done;
                                   if (i == 17) throw std::runtime_error("task 17");
                                 }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 100);
  done = 0;
  pool.parallel_for(10, [&](std::size_t, int) { ++done; });
  EXPECT_EQ(done.load(), 10);
}

// parallel_for with work for the calling thread first (a one-shot call reads the next block of a weight
// from JS while the workers pack this one): the workers run tasks meanwhile, `first` runs once, and its
// exception comes after every task has finished, the pool still usable.
TEST(ThreadPool, CallerRunsItsOwnWorkFirstWhileWorkersStart) {
  ThreadPool pool(2);
  for (std::size_t n : {1u, 2u, 50u}) {
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> by_worker{0};
    int firsts = 0;
    bool overlapped = false;
    pool.parallel_for(
        n,
        [&](std::size_t i, int worker) {
          ++hits[i];
          by_worker += worker != 0;
        },
        [&] {
          ++firsts;  // a worker takes a task while the caller is still here
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (by_worker.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
          overlapped = by_worker.load() > 0;
        });
    EXPECT_EQ(firsts, 1) << n << " tasks";
    EXPECT_TRUE(overlapped) << n << " tasks: no worker ran a task while the caller ran its own work";
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "task " << i;
  }
  std::atomic<int> done{0};
  EXPECT_THROW(pool.parallel_for(
                   100,
                   [&](std::size_t, int) {
                     std::this_thread::sleep_for(std::chrono::microseconds(50));
                     ++done;
                   },
                   [] { throw std::runtime_error("first"); }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 100);
  int firsts = 0;
  ThreadPool alone(1);
  alone.parallel_for(
      3, [&](std::size_t, int) { EXPECT_EQ(firsts, 1) << "without workers, first runs first"; }, [&] { ++firsts; });
  EXPECT_EQ(firsts, 1);
}

// Set-aside pieces (a run's maps copied out to JS layer by layer): a loop runs them on the calling thread, oldest
// first, while a worker claims its tasks, and stops once every task is claimed; run_set_aside runs the rest,
// drop_set_aside forgets them, and a piece that throws drops the others and comes out of its loop, the pool usable.
TEST(ThreadPool, RunsSetAsidePiecesBesideLoopsOnTheCallingThread) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  std::vector<int> ran;
  bool elsewhere = false;
  for (int i = 0; i < 20; ++i)
    pool.set_aside([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ran.push_back(i);
      elsewhere = elsewhere || std::this_thread::get_id() != caller;
    });
  std::atomic<int> by_worker{0};
  // 40 tasks of 1 ms, which the worker claims alone while the caller runs pieces of 5 ms: some pieces run during
  // the loop, and the caller stops once the tasks are claimed, with pieces left (100 ms of them).
  pool.parallel_for(40, [&](std::size_t, int worker) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    by_worker += worker != 0;
  });
  const std::size_t during = ran.size();
  EXPECT_GE(during, 1u) << "no piece ran beside the loop";
  EXPECT_LT(during, 20u) << "pieces ran on after the loop's tasks were claimed";
  EXPECT_GT(by_worker.load(), 0);
  EXPECT_EQ(pool.set_aside_count(), 20 - during);
  pool.run_set_aside();
  std::vector<int> order(20);
  for (int i = 0; i < 20; ++i) order[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(ran, order);
  EXPECT_FALSE(elsewhere) << "a piece ran on a worker";
  EXPECT_EQ(pool.set_aside_count(), 0u);

  pool.set_aside([] { FAIL() << "a dropped piece ran"; });
  pool.drop_set_aside();
  pool.parallel_for(40, [](std::size_t, int) { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
  pool.run_set_aside();

  std::atomic<int> done{0};
  pool.set_aside([] { throw std::runtime_error("piece"); });
  pool.set_aside([] { FAIL() << "a piece after one that threw ran"; });
  EXPECT_THROW(pool.parallel_for(40,
                                 [&](std::size_t, int) {
                                   std::this_thread::sleep_for(std::chrono::microseconds(200));
                                   ++done;
                                 }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 40);
  EXPECT_EQ(pool.set_aside_count(), 0u);
  pool.set_aside([] { throw std::runtime_error("piece"); });
  EXPECT_THROW(pool.run_set_aside(), std::runtime_error);
  EXPECT_EQ(pool.set_aside_count(), 0u);

  // Without workers nothing runs beside a loop.
  ThreadPool alone(1);
  int pieces = 0;
  alone.set_aside([&] { ++pieces; });
  alone.parallel_for(10, [](std::size_t, int) {});
  EXPECT_EQ(pieces, 0);
  alone.run_set_aside();
  EXPECT_EQ(pieces, 1);
}

}  // namespace
}  // namespace attnscope
