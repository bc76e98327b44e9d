// Where the kernel puts a thread that another thread wakes, as a pool's worker is woken
// at the start of a call. The waker sleeps `idle` ms (as a page between keystrokes), runs
// `busy` ms, then wakes a worker that sleeps on a condition variable, and keeps running
// until the worker has run for a moment. Printed: in how many of the wake-ups the worker
// first ran on the waker's own CPU. On an otherwise idle machine with two or more CPUs, a
// stock Linux kernel puts it on an idle CPU. A guest kernel booted with sched_vcpu_pack
// packs woken threads onto a CPU that has been busy little of late, so that the host can
// leave the other vCPUs halted: then the worker shares the waker's CPU, and the two take
// turns, until the kernel moves one of them.
//
//   build/bench-native/wake_placement       (npm run bench:idle builds and runs it)
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

void spin_for(Clock::duration d) {
  for (const auto start = Clock::now(); Clock::now() - start < d;) {
  }
}

// One worker for the whole run, as a thread pool keeps its threads.
class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  // Wakes the worker; returns the CPU it first ran on, once it has run 300 µs.
  int wake() {
    ran_.store(false);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++round_;
    }
    wake_.notify_one();
    while (!ran_.load()) {
    }
    return cpu_.load();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (long seen = 0;;) {
      wake_.wait(lock, [&] { return stop_ || round_ != seen; });
      if (stop_) return;
      seen = round_;
      cpu_.store(sched_getcpu());
      lock.unlock();
      spin_for(std::chrono::microseconds(300));
      ran_.store(true);
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  long round_ = 0;
  bool stop_ = false;
  std::atomic<int> cpu_{-1};
  std::atomic<bool> ran_{false};
  std::thread thread_;
};

}  // namespace

int main() {
  constexpr int kRounds = 25;
  const int idle_ms[] = {1, 10, 100};
  const int busy_ms[] = {0, 3, 30, 100};
  std::printf("Wake-ups that put the woken thread on the waker's own CPU (%u CPUs), of %d each:\n",
              std::thread::hardware_concurrency(), kRounds);
  std::printf("%-22s", "waker idle, then busy");
  for (int busy : busy_ms) std::printf("  busy %3d ms", busy);
  std::printf("\n");
  Worker worker;
  for (int idle : idle_ms) {
    std::printf("idle %3d ms%11s", idle, "");
    for (int busy : busy_ms) {
      int same = 0;
      for (int r = 0; r < kRounds; ++r) {
        std::this_thread::sleep_for(std::chrono::milliseconds(idle));
        spin_for(std::chrono::milliseconds(busy));
        const int mine = sched_getcpu();
        if (worker.wake() == mine) ++same;
      }
      std::printf("  %6d/%-5d", same, kRounds);
    }
    std::printf("\n");
  }
}
