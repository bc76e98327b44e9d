// A run's "self" maps copied out to a new JS array layer by layer while the run goes on (RunOptions::maps_ready).
// Each layer's maps, in pieces of at most kPieceFloats, are set aside on the engine's pool and copied on this thread
// beside the next layers' loops (ThreadPool::set_aside): with workers, the copy and the first touch of the new
// array's pages (DINOv2-S/14 at 518²: 541 MB) overlap the arithmetic instead of following it. The array is
// written as weights_to_js writes it. A caller's options.into array is written after the run, as before: a run
// that fails part way then leaves it as it was.
#pragma once

#include <algorithm>

#include "attnscope/model.hpp"
#include "convert.hpp"

namespace attnscope::bindings {

class MapsOut {
 public:
  // opts: the call's, for options.into.attentions.
  MapsOut(const Runtime& rt, bool causal, const val& opts) : rt_(rt), causal_(causal), opts_(opts) {}
  ~MapsOut() { rt_.drop_set_aside(); }  // a run that failed: its pieces point into freed maps
  MapsOut(const MapsOut&) = delete;
  MapsOut& operator=(const MapsOut&) = delete;

  // Has the run report its maps as each layer finishes them, unless they go into the caller's array.
  void attach(RunOptions& o) {
    if (into_given(opts_, "attentions").isUndefined())
      o.maps_ready = [this](const Tensor& maps, std::int64_t layer) { ready(maps, layer); };
  }

  // RunOptions::maps_ready: layer `layer` of `maps` [layers, heads, n_q, n_k] is final. Its values stay where they
  // are until finish: the run made them before its first layer, and the RunResult it returns holds them.
  void ready(const Tensor& maps, std::int64_t layer) {
    const std::int64_t heads = maps.shape[1], n_q = maps.shape[2], n_k = maps.shape[3];
    if (array_.isUndefined()) array_ = val::global("Float32Array").new_(static_cast<double>(element_count(maps.shape)));
    const std::int64_t rows = std::max<std::int64_t>(1, kPieceFloats / std::max<std::int64_t>(n_k, 1));
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t first = 0; first < n_q; first += rows) {
        const std::int64_t at = ((layer * heads + h) * n_q + first) * n_k, count = std::min(rows, n_q - first);
        const float* values = maps.data.data() + at;
        rt_.set_aside([this, values, at, first, count, n_k] {
          if (causal_)
            copy_causal_rows(array_, values, at, first, count, n_k);
          else
            array_.call<void>("set", val(emscripten::typed_memory_view(static_cast<std::size_t>(count * n_k), values)),
                              static_cast<double>(at));
        });
      }
    ++layers_;
  }

  // The maps as a JS tensor: the pieces not copied yet now, or the whole of them (into the caller's array when
  // given) when the run reported fewer than all its layers. It never does so part way: a run into the caller's
  // array, one that keeps rows or one that returns some layers reports none.
  val finish(const Tensor& maps) {
    if (array_.isUndefined() || layers_ != maps.shape[0]) {
      rt_.drop_set_aside();
      return weights_to_js("run", maps, causal_, opts_);
    }
    rt_.run_set_aside();
    return js_tensor(array_, maps.shape);
  }

 private:
  static constexpr std::int64_t kPieceFloats = 1 << 20;  // 4 MB: a piece short beside a loop's tasks
  const Runtime& rt_;
  const bool causal_;
  const val opts_;
  val array_ = val::undefined();
  std::int64_t layers_ = 0;
};

}  // namespace attnscope::bindings
