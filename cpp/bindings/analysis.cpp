// Bindings of analysis.hpp: rollout, flow, head summaries, comparison and .npy.
// Same rules as embind.cpp: shapes checked before data is copied, results copied
// out, every failure returned as { error }.
#include "attnscope/analysis.hpp"

#include <emscripten/bind.h>

#include "convert.hpp"

namespace attnscope {
namespace {

using namespace bindings;

// A [layers, heads, n, n] attentions argument, checked, then copied into the heap.
JsTensor attentions_arg(const char* op, const char* name, const val& js) {
  if (js.isUndefined() || js.isNull()) throw Error(std::string(op) + ": " + name + " is missing");
  JsTensor t = tensor_arg(op, name, js);
  check_attentions_shape(op, name, t.shape);
  load(t);
  return t;
}

// attentions { data, shape: [layers, heads, n, n] }; opts { residual } → [layers, n, n]
val rollout(val attentions, val opts) {
  return guard("rollout", [&] {
    const JsTensor a = attentions_arg("rollout", "attentions", attentions);
    return to_js(attention_rollout(a.data.data(), a.shape, flag(opts, "residual", true)));
  });
}

// opts { residual, rows } → [rows, n]; rows default to every token
val attentionFlow(val attentions, val opts) {
  const char* op = "attentionFlow";
  return guard(op, [&] {
    const JsTensor a = attentions_arg(op, "attentions", attentions);
    const std::int64_t n = a.shape[2];
    std::vector<std::int64_t> rows;
    if (opts["rows"].isUndefined()) {
      for (std::int64_t i = 0; i < n; ++i) rows.push_back(i);
    } else {
      rows = integers_arg(op, "rows", opts["rows"], 0, static_cast<double>(n - 1));
    }
    return to_js(attention_flow(a.data.data(), a.shape, flag(opts, "residual", true), rows));
  });
}

// tokens: string[]; special: 0/1 per token → [layers, heads, 6]
val headSummaries(val attentions, val tokens, val special) {
  const char* op = "headSummaries";
  return guard(op, [&] {
    const JsTensor a = attentions_arg(op, "attentions", attentions);
    const std::vector<std::string> t = strings_arg(op, "tokens", tokens);
    if (static_cast<std::int64_t>(t.size()) != a.shape[2])
      throw Error(std::string(op) + ": " + std::to_string(t.size()) + " tokens for maps over " +
                  std::to_string(a.shape[2]) + " tokens");
    std::vector<std::uint8_t> flags;
    for (std::int64_t s : integers_arg(op, "special", special, 0, 1)) flags.push_back(static_cast<std::uint8_t>(s));
    return to_js(head_summaries(a.data.data(), a.shape, flags, punctuation_tokens(t)));
  });
}

// → Int32Array [i0, j0, i1, j1, ...]
val alignTokens(val a, val b) {
  return guard("alignTokens", [&] {
    const auto pairs = align_tokens(strings_arg("alignTokens", "a", a), strings_arg("alignTokens", "b", b));
    std::vector<std::int32_t> flat;
    for (const auto& [i, j] : pairs)
      flat.insert(flat.end(), {static_cast<std::int32_t>(i), static_cast<std::int32_t>(j)});
    val out = val::object();
    out.set("pairs", val::global("Int32Array").new_(val(emscripten::typed_memory_view(flat.size(), flat.data()))));
    return out;
  });
}

// a, b attentions; pairs as alignTokens gives them → [layers, heads]
val attentionChange(val a, val b, val pairs) {
  const char* op = "attentionChange";
  return guard(op, [&] {
    const JsTensor x = attentions_arg(op, "a", a), y = attentions_arg(op, "b", b);
    const std::vector<std::int64_t> flat = integers_arg(op, "pairs", pairs, 0, static_cast<double>(kMaxDimension));
    if (flat.size() % 2) throw Error("attentionChange: pairs must hold (i, j) pairs, flattened");
    std::vector<std::pair<std::int64_t, std::int64_t>> p;
    for (std::size_t k = 0; k < flat.size(); k += 2) p.emplace_back(flat[k], flat[k + 1]);
    return to_js(attention_change(x.data.data(), x.shape, y.data.data(), y.shape, p));
  });
}

// a, b [n, d] → [n]
val cosineSimilarity(val a, val b) {
  const char* op = "cosineSimilarity";
  return guard(op, [&] {
    JsTensor x = tensor_arg(op, "a", a), y = tensor_arg(op, "b", b);
    check_shape(op, "a", x.shape, 2, 2);
    if (x.shape != y.shape)
      throw Error(std::string(op) + ": a is " + format_shape(x.shape) + " but b is " + format_shape(y.shape));
    check_budget(op, static_cast<double>(element_count(x.shape)) * 8.0);
    load(x);
    load(y);
    check_finite(op, "a", x.data.data(), element_count(x.shape));
    check_finite(op, "b", y.data.data(), element_count(y.shape));
    return to_js(row_cosines(x.data.data(), y.data.data(), x.shape[0], x.shape[1]));
  });
}

// { data, shape } → { bytes: Uint8Array } holding a .npy file
val toNpy(val tensor) {
  const char* op = "toNpy";
  return guard(op, [&] {
    JsTensor t = tensor_arg(op, "tensor", tensor);
    check_shape(op, "tensor", t.shape, 1, 8);
    check_budget(op, static_cast<double>(element_count(t.shape)) * 12.0);
    load(t);
    const std::string npy = to_npy(t.data.data(), t.shape);
    val out = val::object();
    out.set(
        "bytes",
        val::global("Uint8Array")
            .new_(val(emscripten::typed_memory_view(npy.size(), reinterpret_cast<const std::uint8_t*>(npy.data())))));
    return out;
  });
}

}  // namespace
}  // namespace attnscope

EMSCRIPTEN_BINDINGS(attnscope_analysis) {
  emscripten::function("rollout", &attnscope::rollout);
  emscripten::function("attentionFlow", &attnscope::attentionFlow);
  emscripten::function("headSummaries", &attnscope::headSummaries);
  emscripten::function("alignTokens", &attnscope::alignTokens);
  emscripten::function("attentionChange", &attnscope::attentionChange);
  emscripten::function("cosineSimilarity", &attnscope::cosineSimilarity);
  emscripten::function("toNpy", &attnscope::toNpy);
}
