// The decoders in wasm (SIMD128 kernels, pthreads) against the float64 plain-loop reference:
// every attention weight within 1e-5 and every logit within 1e-4, for each architecture row, and
// generation with the KV cache equal to a run on the whole sequence, and greedy steps equal to the argmax of the
// whole logits.
//   node build/wasm/tests/decoder_test.js
#include <cmath>
#include <cstdio>

#include "../cpp/decoder_checkpoints.hpp"
#include "models/transformer_model.hpp"

using namespace attnscope;
using namespace attnscope::testing::decoders;

int main() {
  int failures = 0;
  const Runtime rt(2);
  for (const Case& c : cases()) {
    const auto model = Model::load(c.files);
    const std::vector<std::int32_t> ids = some_ids(11, model->info().vocab_size, 3);
    RunOptions o;
    o.return_logits = true;
    const RunResult r = model->run(rt, Input::ids(ids), o);
    const Tensor& self = r.map("self").attentions;
    const transformer::ReferenceRun ref = transformer::reference_forward(*transformer::transformer_of(*model), ids);
    double attention = 0, logits = 0, cached = 0;
    for (std::size_t i = 0; i < ref.attentions.size(); ++i)
      attention = std::max(attention, std::abs(self.data[i] - ref.attentions[i]));
    for (std::size_t i = 0; i < ref.logits.size(); ++i)
      logits = std::max(logits, std::abs(r.logits.data[i] - ref.logits[i]));
    auto g = model->generate(rt, Input::ids({ids.begin(), ids.begin() + 5}), 1);
    for (std::size_t i = 5; i < ids.size(); ++i) g->append(rt, ids[i]);
    const Tensor maps = g->attentions();
    for (std::size_t i = 0; i < maps.data.size(); ++i)
      cached = std::max(cached, double(std::abs(maps.data[i] - self.data[i])));
    // Greedy steps take the head's screen (kernels/screened_argmax.hpp) where it is float32: the same tokens as
    // the argmax of the whole logits, which next_logits() computes before each step of the second generation.
    SamplingOptions greedy;
    greedy.temperature = 0.0f;
    SamplingOptions suppressed = greedy;
    suppressed.no_repeat_ngram = 2;
    suppressed.banned = {ids[1], ids[2]};
    int differ = 0;
    for (const SamplingOptions& s : {greedy, suppressed}) {
      auto screened = model->generate(rt, Input::ids({ids.begin(), ids.begin() + 3}), 1);
      auto whole = model->generate(rt, Input::ids({ids.begin(), ids.begin() + 3}), 1);
      for (int t = 0; t < 12; ++t) {
        whole->next_logits(rt);
        differ += screened->step(rt, s) != whole->step(rt, s);
      }
    }
    // The cached rows come from the decoding kernels (one dot product per key, few_rows.cpp), the run's from the
    // GEMM's panels: float32 sums in other orders, held to the same 1e-5 as the float64 reference.
    const bool ok = attention <= 1e-5 && logits <= 1e-4 && cached <= 1e-5 && differ == 0;
    std::printf("%s %s: attention %.2e, logits %.2e, KV cache vs run %.2e, greedy tokens differing %d\n",
                ok ? "ok  " : "FAIL", c.name, attention, logits, cached, differ);
    failures += !ok;
  }
  return failures ? 1 : 0;
}
