// Validation shared by the kernels, the reference and the bindings. Every
// message starts with the operation's JS name and names the argument and shapes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "attnscope/attention.hpp"
#include "attnscope/messages.hpp"
#include "io/text.hpp"

namespace attnscope {

// No iostreams anywhere in the library: one ostringstream links libc++'s locale facets, about 150 KB of every .wasm.
std::string format_shape(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::int64_t element_count(const Shape& shape) {
  if (shape.empty()) return 0;
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

void check_shape(const char* op, const char* name, const Shape& shape, int min_rank, int max_rank) {
  const int rank = static_cast<int>(shape.size());
  if (rank < min_rank || rank > max_rank) {
    const std::string ranks =
        std::to_string(min_rank) + (max_rank != min_rank ? " or " + std::to_string(max_rank) : "");
    throw Error(
        messages::format("rank", {{"op", op}, {"name", name}, {"ranks", ranks}, {"shape", format_shape(shape)}}));
  }
  for (auto d : shape) {
    if (d < 1) throw Error(messages::format("empty", {{"op", op}, {"name", name}, {"shape", format_shape(shape)}}));
    if (d > kMaxDimension)  // C++ callers only: from JS, the bindings' shape_entry check comes first
      throw Error(std::string(op) + ": " + name + " has a dimension above " + std::to_string(kMaxDimension) +
                  " (shape " + format_shape(shape) + ")");
  }
}

namespace {

// Whether any of x[0 .. n) is NaN or ±Infinity (-Infinity passes when allowed). Branch-free
// over the exponent bits, so the compiler vectorizes it (an early exit per element would
// keep it scalar, and it runs over every input of every call).
bool any_non_finite(const float* x, std::int64_t n, bool allow_negative_infinity) {
  const std::uint32_t passes = allow_negative_infinity ? 0xff800000u : 0u;  // 0 is finite: nothing extra passes
  std::uint32_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u) & static_cast<std::uint32_t>(bits != passes);
  }
  return bad != 0;
}

}  // namespace

void check_finite(const char* op, const char* name, const float* data, std::int64_t count, bool allow_negative_infinity,
                  std::int64_t first_index) {
  constexpr std::int64_t kChunk = 4096;
  std::int64_t first = 0;  // scanned fast a chunk at a time; the element loop below only names the culprit
  while (first < count && !any_non_finite(data + first, std::min(kChunk, count - first), allow_negative_infinity))
    first += kChunk;
  for (std::int64_t i = first; i < count; ++i) {
    float x;
    std::memcpy(&x, data + i, sizeof x);  // data may sit at any byte of a file
    if (std::isfinite(x) || (allow_negative_infinity && x == -INFINITY)) continue;
    const char* value = std::isnan(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity";
    throw Error(messages::format(
        "non_finite", {{"op", op}, {"name", name}, {"value", value}, {"index", std::to_string(first_index + i)}}));
  }
}

void fail(std::initializer_list<std::string_view> parts) {
  std::string message;
  append(message, parts);
  throw Error(message);
}

std::string quote(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < 80; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 80) out += "…";
  return out + "\"";
}

void check_budget(const char* op, double bytes) {
  if (bytes <= static_cast<double>(kMaxCallBytes)) return;
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.3g", bytes / (1 << 20));
  throw Error(std::string(op) + ": this call needs " + mib + " MiB, above the memory budget of " +
              std::to_string(kMaxCallBytes >> 20) + " MiB per call");
}

namespace {

void check_mask_shape(const char* op, const Mask& mask, std::int64_t heads, std::int64_t n_q, std::int64_t n_k) {
  if (mask.kind == Mask::Kind::none) return;
  check_shape(op, "mask", mask.shape, 2, 3);
  const bool fits2 = mask.shape == Shape{n_q, n_k};
  const bool fits3 = mask.shape == Shape{heads, n_q, n_k};
  if (fits2 || fits3) return;
  throw Error(std::string(op) + ": mask has shape " + format_shape(mask.shape) + " but needs [n_q, n_k] = " +
              format_shape({n_q, n_k}) + " or [heads, n_q, n_k] = " + format_shape({heads, n_q, n_k}));
}

void check_bias(const char* op, const char* name, const TensorView& b, std::int64_t width, const char* width_name) {
  if (b.empty()) return;
  check_shape(op, name, b.shape, 1, 1);
  if (b.shape[0] != width)
    throw Error(std::string(op) + ": " + name + " has shape " + format_shape(b.shape) + " but " + width_name + "=" +
                std::to_string(width));
}

std::string dims_message(const char* op, const char* a, const char* dim, std::int64_t av, const char* b,
                         std::int64_t bv) {
  return std::string(op) + ": " + a + " has " + dim + "=" + std::to_string(av) + " but " + b + " has " + dim + "=" +
         std::to_string(bv);
}

}  // namespace

AttentionDims check_attention_shapes(const char* op, const Shape& q, const Shape& k, const Shape& v, const Mask& mask) {
  check_shape(op, "q", q, 2, 3);
  check_shape(op, "k", k, 2, 3);
  check_shape(op, "v", v, 2, 3);
  for (const auto* other : {&k, &v}) {
    if (other->size() != q.size())
      throw Error(std::string(op) + ": " + (other == &k ? "k" : "v") + " has shape " + format_shape(*other) +
                  " but q has shape " + format_shape(q) + "; give all three a heads axis or none");
  }
  const bool heads_axis = q.size() == 3;
  const std::int64_t heads = heads_axis ? q[0] : 1;
  if (heads_axis) {
    if (k[0] != heads) throw Error(dims_message(op, "k", "heads", k[0], "q", heads));
    if (v[0] != heads) throw Error(dims_message(op, "v", "heads", v[0], "q", heads));
  }
  const std::int64_t n_q = q[q.size() - 2], d_k = q.back();
  const std::int64_t n_k = k[k.size() - 2];
  if (k.back() != d_k) throw Error(dims_message(op, "k", "d_k", k.back(), "q", d_k));
  if (v[v.size() - 2] != n_k) throw Error(dims_message(op, "v", "n_k", v[v.size() - 2], "k", n_k));
  check_mask_shape(op, mask, heads, n_q, n_k);
  return {heads, n_q, n_k, d_k, v.back(), heads_axis};
}

namespace {
// Self-attention passes one tensor as q, k and v: it is named "x" and scanned once.
bool is_self(const TensorView& q, const TensorView& k, const TensorView& v) {
  return q.data == k.data && q.data == v.data && q.shape == k.shape && q.shape == v.shape;
}
}  // namespace

AttentionDims check_attention_inputs(const char* op, const TensorView& q, const TensorView& k, const TensorView& v,
                                     const Mask& mask) {
  if (is_self(q, k, v)) check_shape(op, "x", q.shape, 2, 3);
  return check_attention_shapes(op, q.shape, k.shape, v.shape, mask);
}

void check_attention_values(const char* op, const TensorView& q, const TensorView& k, const TensorView& v,
                            const Mask& mask) {
  if (is_self(q, k, v)) {
    check_finite(op, "x", q.data, q.size());
  } else {
    check_finite(op, "q", q.data, q.size());
    check_finite(op, "k", k.data, k.size());
    check_finite(op, "v", v.data, v.size());
  }
  if (mask.kind == Mask::Kind::additive)
    check_finite(op, "mask", mask.additive, element_count(mask.shape), /*allow_negative_infinity=*/true);
}

void check_multi_head_shapes(const char* op, const Shape& x, const MultiHeadParams& p, const MultiHeadOptions& o) {
  check_shape(op, "x", x, 2, 2);
  const std::int64_t n = x[0], d_model = x[1];
  if (o.heads < 1 || o.heads > 4096)
    throw Error(std::string(op) + ": heads must be an integer from 1 to 4096, got " + std::to_string(o.heads));
  std::int64_t m = n;
  if (!o.context.empty()) {
    check_shape(op, "context", o.context.shape, 2, 2);
    if (o.context.shape[1] != d_model)
      throw Error(dims_message(op, "context", "d_model", o.context.shape[1], "x", d_model));
    m = o.context.shape[0];
  }
  const auto check_projection = [&](const char* name, const TensorView& w) {
    if (w.empty()) throw Error(std::string(op) + ": params." + name + " is missing");
    check_shape(op, name, w.shape, 2, 2);
    if (w.shape[0] != d_model)
      throw Error(std::string(op) + ": " + name + " has shape " + format_shape(w.shape) + " but x has d_model=" +
                  std::to_string(d_model) + "; " + name + " needs " + std::to_string(d_model) + " rows");
    if (w.shape[1] % o.heads != 0)
      throw Error(std::string(op) + ": heads=" + std::to_string(o.heads) + " does not divide the " +
                  std::to_string(w.shape[1]) + " columns of " + name + " " + format_shape(w.shape));
  };
  check_projection("wq", p.wq);
  check_projection("wk", p.wk);
  check_projection("wv", p.wv);
  if (p.wk.shape != p.wq.shape)
    throw Error(std::string(op) + ": wk has shape " + format_shape(p.wk.shape) + " but wq has shape " +
                format_shape(p.wq.shape) + "; queries and keys need the same d_k");
  const std::int64_t hv = p.wv.shape[1];
  if (!p.wo.empty()) {  // C++ callers may leave wo out to get the concatenated heads
    check_shape(op, "wo", p.wo.shape, 2, 2);
    if (p.wo.shape != Shape{hv, d_model})
      throw Error(std::string(op) + ": wo has shape " + format_shape(p.wo.shape) +
                  " but needs [heads·d_v, d_model] = " + format_shape({hv, d_model}));
  } else if (!p.bo.empty()) {
    throw Error(std::string(op) + ": bo is given but wo is not");
  }
  check_bias(op, "bq", p.bq, p.wq.shape[1], "heads·d_k");
  check_bias(op, "bk", p.bk, p.wk.shape[1], "heads·d_k");
  check_bias(op, "bv", p.bv, hv, "heads·d_v");
  check_bias(op, "bo", p.bo, d_model, "d_model");
  check_mask_shape(op, o.mask, o.heads, n, m);
}

double attention_bytes(const AttentionDims& d, const AttentionOptions& o, int threads) {
  const double h = static_cast<double>(d.heads);
  const double in =
      h * (d.n_q * d.d_k + d.n_k * d.d_k + d.n_k * d.d_v) + static_cast<double>(element_count(o.mask.shape));
  const double out = h * d.n_q * d.d_v + (o.return_weights ? h * d.n_q * d.n_k : 0.0);
  const double scratch = o.return_weights ? 0.0 : double(threads) * 64.0 * d.n_k;
  const double packed = h * d.n_k * (d.d_k + d.d_v + 16.0);  // k and v in the GEMM's panels (kernels.cpp)
  return 4.0 * (in + out + scratch + packed);
}

double multi_head_bytes(const Shape& x, const MultiHeadParams& p, const MultiHeadOptions& o, int threads) {
  const double n = double(x[0]), d_model = double(x[1]);
  const double m = o.context.empty() ? n : double(o.context.shape[0]);
  const double hk = double(p.wq.shape[1]), hv = double(p.wv.shape[1]), h = double(o.heads);
  const double params = double(p.wq.size() + p.wk.size() + p.wv.size() + p.wo.size());
  const double in =
      n * d_model + (o.context.empty() ? 0.0 : m * d_model) + params + double(element_count(o.mask.shape));
  // The projections (split by head as the GEMM writes them), the heads side by side, the output.
  const double work = (n * hk + m * hk + m * hv) + n * hv + n * d_model;
  const double weights = (o.return_weights ? h * n * m : 0.0) + double(threads) * 64.0 * m;
  const double packed = m * (hk + hv) + 16.0 * h * m;  // each head's k and v in the GEMM's panels
  return 4.0 * (in + work + weights + packed);
}

}  // namespace attnscope
