// Between JS values and C++: tensor arguments ({ data, shape }) read and checked
// before any data is copied into the heap, results copied out into fresh typed
// arrays, and guard(), which turns every failure into { error: "message" }.
#pragma once

#include <emscripten/val.h>

#include <cmath>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "attnscope/attention.hpp"
#include "attnscope/error.hpp"
#include "attnscope/messages.hpp"
#include "attnscope/packing.hpp"

namespace attnscope::bindings {

using emscripten::val;

// A JS tensor argument: its shape now, its data once validation has passed.
struct JsTensor {
  val js = val::undefined();
  Shape shape;
  TensorData data;  // copied in from JS, not zeroed first (the copy writes every value); moved into a Tensor
  std::unique_ptr<StreamedWeight> streamed;  // instead of data: a weight streamed into GEMM panels

  bool present() const { return !js.isUndefined() && !js.isNull(); }
  TensorView view() const {
    if (!present()) return TensorView();
    return streamed ? streamed->view() : TensorView(data.data(), shape);
  }
};

// String(value): safe for any JS value, unlike calling its toString.
inline std::string js_string(const val& v) { return val::global("String")(v).as<std::string>(); }

inline Shape read_shape(const char* op, const std::string& name, const val& t) {
  const val js_shape = t["shape"];
  const int rank = js_shape["length"].as<int>();
  if (rank > 8) throw Error(std::string(op) + ": " + name + ".shape has " + std::to_string(rank) + " dimensions");
  Shape shape;
  for (int i = 0; i < rank; ++i) {
    const double d = js_shape[i].as<double>();
    if (!(d >= 0 && d <= double(kMaxDimension)) || std::floor(d) != d)
      throw Error(messages::format("shape_entry", {{"op", op},
                                                   {"name", name},
                                                   {"index", std::to_string(i)},
                                                   {"max", std::to_string(kMaxDimension)},
                                                   {"got", js_string(js_shape[i])}}));
    shape.push_back(static_cast<std::int64_t>(d));
  }
  const double length = t["data"]["length"].as<double>();
  // element_count of validated dims fits in a double exactly enough to compare.
  double count = rank ? 1.0 : 0.0;
  for (auto d : shape) count *= double(d);
  if (length != count)
    throw Error(messages::format(
        "data_length",
        {{"op", op},
         {"name", name},
         {"length", std::to_string(static_cast<long long>(length))},
         {"shape", format_shape(shape)},
         {"count", count > 9e15 ? std::string("more") : std::to_string(static_cast<long long>(count))}}));
  return shape;
}

inline JsTensor tensor_arg(const char* op, const std::string& name, const val& t) {
  JsTensor a;
  a.js = t;
  if (a.present()) a.shape = read_shape(op, name, t);
  return a;
}

// Copies the JS data into the wasm heap; call only after shapes and budget pass.
inline void load(JsTensor& a) {
  if (!a.present()) return;
  a.data.resize(static_cast<std::size_t>(element_count(a.shape)));
  val(emscripten::typed_memory_view(a.data.size(), a.data.data())).call<void>("set", a.js["data"]);
}

// A mask option: Uint8Array (1 = attend) or Float32Array (additive).
struct JsMask {
  JsTensor tensor;
  std::vector<std::uint8_t> keep;
  bool is_keep = false;

  JsMask(const char* op, const val& js) : tensor(tensor_arg(op, "mask", js)) {
    is_keep = tensor.present() && js["data"].instanceof (val::global("Uint8Array"));
  }
  void load_data() {
    if (!tensor.present()) return;
    if (!is_keep) return load(tensor);
    keep.resize(static_cast<std::size_t>(element_count(tensor.shape)));
    val(emscripten::typed_memory_view(keep.size(), keep.data())).call<void>("set", tensor.js["data"]);
  }
  Mask mask() const {
    if (!tensor.present()) return Mask::none();
    return is_keep ? Mask::keep_mask(keep.data(), tensor.shape) : Mask::additive_mask(tensor.data.data(), tensor.shape);
  }
};

// A view carrying only the shape (its data is never read), for validating before
// any data is copied. Absent tensors stay empty views.
inline TensorView shape_view(const JsTensor& t) {
  static const float no_data = 0.0f;
  return t.present() ? TensorView(&no_data, t.shape) : TensorView();
}

// params in { wq, wk, wv, wo, bq, bk, bv, bo } order, each turned into a view by `view`.
template <typename ViewFn>
inline MultiHeadParams params_of(const JsTensor (&w)[8], ViewFn view) {
  return {view(w[0]), view(w[1]), view(w[2]), view(w[3]), view(w[4]), view(w[5]), view(w[6]), view(w[7])};
}

// { data, shape } around a JS array of the tensor's values.
inline val js_tensor(val data, const Shape& shape) {
  val obj = val::object();
  obj.set("data", data);
  val js_shape = val::array();
  for (auto d : shape) js_shape.call<void>("push", static_cast<double>(d));
  obj.set("shape", js_shape);
  return obj;
}

// { data: Float32Array, shape }; new Float32Array(view) copies out of the heap into a fresh, unshared buffer.
inline val to_js(const float* data, const Shape& shape) {
  return js_tensor(val::global("Float32Array")
                       .new_(val(emscripten::typed_memory_view(static_cast<std::size_t>(element_count(shape)), data))),
                   shape);
}

inline val to_js(const Tensor& t) { return to_js(t.data.data(), t.shape); }

// Causal rows are copied as keys 0..i only from this many keys: a row of 8 KiB or more, whose zeros then fill
// whole pages. With shorter rows every 4 KiB page of the array holds the start of some row and is touched anyway,
// and one copy is cheaper than one per row.
inline constexpr std::int64_t kCausalRowsFrom = 2048;

// Rows [first, first + rows) of causal attention weights (row i zero after key i), rows × n_k values, into the new
// JS array `array` at `at`: only keys 0..i of each row (Module.attnscopeCopyCausalRows, post.js), so the array's
// pages that would hold only zeros are never touched; each first touch of a page is a page fault.
inline void copy_causal_rows(const val& array, const float* values, std::int64_t at, std::int64_t first,
                             std::int64_t rows, std::int64_t n_k) {
  const val view(emscripten::typed_memory_view(static_cast<std::size_t>(rows * n_k), values));
  if (n_k < kCausalRowsFrom || first + 1 >= n_k)  // (every row of these is whole)
    array.call<void>("set", view, static_cast<double>(at));
  else
    val::module_property("attnscopeCopyCausalRows")(array, view, static_cast<double>(at), static_cast<double>(first),
                                                    static_cast<double>(n_k));
}

// Attention weights [..., n_q, n_k] as a new JS array; causal ones through copy_causal_rows, map by map.
inline val weights_to_js(const float* data, const Shape& shape, bool causal) {
  if (!causal || shape.size() < 2) return to_js(data, shape);
  const std::int64_t n_q = shape[shape.size() - 2], n_k = shape.back(), count = element_count(shape);
  val array = val::global("Float32Array").new_(static_cast<double>(count));
  for (std::int64_t at = 0; at < count; at += n_q * n_k) copy_causal_rows(array, data + at, at, 0, n_q, n_k);
  return js_tensor(array, shape);
}
inline val weights_to_js(const Tensor& t, bool causal) { return weights_to_js(t.data.data(), t.shape, causal); }

// options.into.<name> as the caller gave it (a Float32Array: the package checked its type), or undefined.
inline val into_given(const val& opts, const char* name) {
  const val into = opts["into"];
  return into.isUndefined() || into.isNull() ? val::undefined() : val(into[name]);
}

// options.into.<name>: the caller's Float32Array for that result, or undefined. Its length must be the result's;
// checked before any work, with the result's shape.
inline val into_array(const char* op, const val& opts, const char* name, const Shape& shape, bool returned,
                      const char* why) {
  const val array = into_given(opts, name);
  if (array.isUndefined()) return array;
  if (!returned) throw Error(messages::format("into_unused", {{"op", op}, {"name", name}, {"why", why}}));
  const double length = array["length"].as<double>(), count = double(element_count(shape));
  if (length != count)
    throw Error(messages::format("into_length", {{"op", op},
                                                 {"name", name},
                                                 {"length", js_string(array["length"])},
                                                 {"shape", format_shape(shape)},
                                                 {"count", std::to_string(element_count(shape))}}));
  return array;
}

// The result into `array` when the caller gave one (reused across calls: no new array, and no first touch of
// its pages), else into a new Float32Array.
inline val to_js(const float* data, const Shape& shape, const val& array) {
  if (array.isUndefined()) return to_js(data, shape);
  array.call<void>("set", val(emscripten::typed_memory_view(static_cast<std::size_t>(element_count(shape)), data)));
  return js_tensor(array, shape);
}
inline val to_js(const Tensor& t, const val& array) { return to_js(t.data.data(), t.shape, array); }

// A model run's maps into options.into.attentions when given (the package checked its type): its first values, every
// one written (a causal map's zeros too, since the array held another run's maps). It needs room for them. Else a
// new array, as weights_to_js makes it.
inline val weights_to_js(const char* op, const Tensor& t, bool causal, const val& opts) {
  const val array = into_given(opts, "attentions");
  if (array.isUndefined()) return weights_to_js(t, causal);
  const double room = array["length"].as<double>(), count = double(element_count(t.shape));
  if (room < count)
    throw Error(messages::format("into_room", {{"op", op},
                                               {"name", "attentions"},
                                               {"length", js_string(array["length"])},
                                               {"shape", format_shape(t.shape)},
                                               {"count", std::to_string(element_count(t.shape))}}));
  return to_js(t, room == count ? array : array.call<val>("subarray", 0, count));
}
inline val to_js(const Matrix& m) { return to_js(m.data(), {m.rows(), m.cols()}); }

inline bool flag(const val& opts, const char* name, bool fallback) {
  const val v = opts[name];
  return v.isUndefined() ? fallback : v.as<bool>();
}

// Runs fn; turns any failure into { error } so that JS sees a message, never a trap.
template <typename Fn>
inline val guard(const char* op, Fn fn) {
  try {
    return fn();
  } catch (const Error& e) {
    val r = val::object();
    r.set("error", std::string(e.what()));
    return r;
  } catch (const std::bad_alloc&) {
    val r = val::object();
    r.set("error", std::string(op) + ": out of memory (the wasm heap is limited to 4 GiB)");
    return r;
  } catch (const std::exception& e) {
    val r = val::object();
    r.set("error", std::string(op) + ": " + e.what());
    return r;
  }
}

// A JS array of strings, or { error } through guard when it is something else.
inline std::vector<std::string> strings_arg(const char* op, const char* name, const val& js) {
  if (!val::global("Array").call<bool>("isArray", js)) throw Error(std::string(op) + ": " + name + " must be an array");
  std::vector<std::string> out;
  const int length = js["length"].as<int>();
  for (int i = 0; i < length; ++i) {
    if (!js[i].isString()) throw Error(std::string(op) + ": " + name + "[" + std::to_string(i) + "] is not a string");
    out.push_back(js[i].as<std::string>());
  }
  return out;
}

// A JS array (or typed array) of whole numbers in [lo, hi].
inline std::vector<std::int64_t> integers_arg(const char* op, const char* name, const val& js, double lo, double hi) {
  std::vector<std::int64_t> out;
  if (js.isString() || !js["length"].isNumber())
    throw Error(std::string(op) + ": " + name + " must be an array of whole numbers");
  const int length = js["length"].as<int>();
  for (int i = 0; i < length; ++i) {
    const val v = js[i];
    const double x = v.isNumber() ? v.as<double>() : NAN;
    if (!(x >= lo && x <= hi) || std::floor(x) != x)
      throw Error(messages::format("whole_number", {{"op", op},
                                                    {"name", std::string(name) + "[" + std::to_string(i) + "]"},
                                                    {"lo", std::to_string(static_cast<long long>(lo))},
                                                    {"hi", std::to_string(static_cast<long long>(hi))},
                                                    {"got", js_string(v)}}));
    out.push_back(static_cast<std::int64_t>(x));
  }
  return out;
}

// Int32Array and Float32Array copies of a vector's values.
inline val int32_array(const std::vector<std::int32_t>& v) {
  return val::global("Int32Array").new_(val(emscripten::typed_memory_view(v.size(), v.data())));
}
inline val float32_array(const std::vector<float>& v) {
  return val::global("Float32Array").new_(val(emscripten::typed_memory_view(v.size(), v.data())));
}

// An Int32Array of token ids, copied into the heap (the web wrapper made it one).
inline std::vector<std::int32_t> ids_arg(const val& ids) {
  std::vector<std::int32_t> out(ids["length"].as<std::size_t>());
  val(emscripten::typed_memory_view(out.size(), out.data())).call<void>("set", ids);
  return out;
}

// A whole number option in [lo, hi], or an Error naming it.
inline std::int64_t whole_number(const char* op, const char* name, const val& v, double lo, double hi) {
  const double x = v.isNumber() ? v.as<double>() : NAN;
  if (!(x >= lo && x <= hi) || std::floor(x) != x)
    throw Error(messages::format("whole_number", {{"op", op},
                                                  {"name", name},
                                                  {"lo", std::to_string(std::int64_t(lo))},
                                                  {"hi", std::to_string(std::int64_t(hi))},
                                                  {"got", js_string(v)}}));
  return static_cast<std::int64_t>(x);
}

}  // namespace attnscope::bindings
