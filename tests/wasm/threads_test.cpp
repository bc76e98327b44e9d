// The thread pool on real pthreads, in wasm (node build/wasm/tests/threads_test.js).
// The native tests run the same pool on std::thread; these catch what only Web Worker
// pthreads and Emscripten's runtime show. A claim taken from a loop that has already
// ended would let a worker run a stale task, freeing memory twice: the many small loops
// below make that race likely. Exits 1 on a wrong count or a changed result.
#include <cstdio>

#include "../cpp/thread_pool_loops.hpp"
#include "attnscope/attnscope.hpp"

namespace {

int failures = 0;

void check(bool ok, const char* what, long round) {
  if (ok) return;
  if (++failures <= 5) std::printf("FAILED: %s (round %ld)\n", what, round);
}

// Loops back to back whose task counts go up and down: every task once, none outside its loop.
void loops_never_mix() {
  attnscope::ThreadPool pool(3);
  const long rounds = 300000;
  const long mixed = attnscope::first_mixed_loop(pool, rounds);
  check(mixed == 0, "a task ran twice, not at all, or outside its loop", mixed);
  std::printf("%-52s %ld loops\n", "pool: every task once, never outside its loop", rounds);
}

// Many small multi-head calls on two threads (the calls that crashed): the same result every time.
void small_calls_repeat_exactly() {
  using namespace attnscope;
  Runtime rt(2);
  Tensor x({12, 16}), w({16, 16});
  for (std::size_t i = 0; i < x.data.size(); ++i) x.data[i] = 0.01f * static_cast<float>(i % 37);
  for (std::size_t i = 0; i < w.data.size(); ++i) w.data[i] = 0.02f * static_cast<float>(i % 11) - 0.1f;
  MultiHeadOptions o;
  o.heads = 4;
  const MultiHeadParams p{w.view(), w.view(), w.view(), w.view()};
  const MultiHeadResult first = rt.multi_head_attention(x.view(), p, o);
  const long calls = 20000;
  for (long call = 1; call <= calls && failures == 0; ++call) {
    const MultiHeadResult r = rt.multi_head_attention(x.view(), p, o);
    check(r.output.data == first.output.data && r.weights.data == first.weights.data,
          "a multi-head call on two threads changed its result", call);
  }
  std::printf("%-52s %ld calls\n", "multi-head 12x16, 4 heads, 2 threads: same result", calls);
}

}  // namespace

int main() {
  loops_never_mix();
  small_calls_repeat_exactly();
  if (failures) std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
