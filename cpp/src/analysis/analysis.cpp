// Rollout, flow, head summaries, alignment and .npy export (see analysis.hpp).
#include "attnscope/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include "attnscope/error.hpp"
#include "tokenizers/unicode.hpp"

namespace attnscope {

namespace {

struct Dims {
  std::int64_t layers, heads, n;
};

Dims dims_of(const Shape& s) { return {s[0], s[1], s[2]}; }

// Layer l's maps, head h: an n×n row-major block.
const float* map_of(const float* data, const Dims& d, std::int64_t l, std::int64_t h) {
  return data + (l * d.heads + h) * d.n * d.n;
}

// Â_l = mean over heads of A_l, plus the identity for the residual path ((A + I)/2),
// rows renormalized (a fully masked row stays zero, or the identity with `residual`).
Matrix layer_graph(const float* data, const Dims& d, std::int64_t l, bool residual) {
  Matrix a = Matrix::Zero(d.n, d.n);
  for (std::int64_t h = 0; h < d.heads; ++h) a += ConstMatrixMap(map_of(data, d, l, h), d.n, d.n);
  a /= static_cast<float>(d.heads);
  if (residual) a = 0.5f * a + 0.5f * Matrix::Identity(d.n, d.n);
  for (std::int64_t i = 0; i < d.n; ++i) {
    const float sum = a.row(i).sum();
    if (sum > 0) a.row(i) /= sum;
  }
  return a;
}

// Dinic's algorithm on an adjacency list of paired edges (edge e and e ^ 1 are each other's reverse).
class FlowNetwork {
 public:
  explicit FlowNetwork(std::int64_t nodes) : adjacency_(static_cast<std::size_t>(nodes)) {}

  void add(std::int64_t from, std::int64_t to, double capacity) {
    adjacency_[from].push_back(static_cast<std::int64_t>(to_.size()));
    to_.push_back(to);
    capacity_.push_back(capacity);
    adjacency_[to].push_back(static_cast<std::int64_t>(to_.size()));
    to_.push_back(from);
    capacity_.push_back(0);
  }

  double run(std::int64_t source, std::int64_t sink) {
    const std::vector<double> original = capacity_;
    double total = 0;
    while (levels(source, sink)) {
      next_.assign(adjacency_.size(), 0);
      while (const double pushed = push(source, sink, std::numeric_limits<double>::infinity())) total += pushed;
    }
    capacity_ = original;  // the network can be reused for another source and sink
    return total;
  }

 private:
  static constexpr double kEpsilon = 1e-12;

  bool levels(std::int64_t source, std::int64_t sink) {
    level_.assign(adjacency_.size(), -1);
    level_[source] = 0;
    std::queue<std::int64_t> queue;
    queue.push(source);
    while (!queue.empty()) {
      const std::int64_t u = queue.front();
      queue.pop();
      for (std::int64_t e : adjacency_[u])
        if (capacity_[e] > kEpsilon && level_[to_[e]] < 0) {
          level_[to_[e]] = level_[u] + 1;
          queue.push(to_[e]);
        }
    }
    return level_[sink] >= 0;
  }

  // One augmenting path in the level graph (depth ≤ layers: no deep recursion).
  double push(std::int64_t u, std::int64_t sink, double limit) {
    if (u == sink) return limit;
    for (std::size_t& i = next_[u]; i < adjacency_[u].size(); ++i) {
      const std::int64_t e = adjacency_[u][i], v = to_[e];
      if (capacity_[e] <= kEpsilon || level_[v] != level_[u] + 1) continue;
      if (const double pushed = push(v, sink, std::min(limit, capacity_[e]))) {
        capacity_[e] -= pushed;
        capacity_[e ^ 1] += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<std::vector<std::int64_t>> adjacency_;
  std::vector<std::int64_t> to_;
  std::vector<double> capacity_;
  std::vector<std::int64_t> level_;
  std::vector<std::size_t> next_;
};

// Removes the word-piece markers "##" (BERT), "▁" (SentencePiece) and "Ġ" (GPT-2) in front of a token.
std::string_view strip_marker(std::string_view t) {
  for (std::string_view marker : {"##", "\xE2\x96\x81", "\xC4\xA0"})
    if (t.size() > marker.size() && t.substr(0, marker.size()) == marker) return t.substr(marker.size());
  return t;
}

// Tokens as compared across runs and tokenizers: markers removed, ASCII lowercased.
std::string comparable(std::string_view t) {
  std::string s(strip_marker(t));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_ascii_symbol(std::uint32_t cp) {
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
}

}  // namespace

void check_attentions_shape(const char* op, const char* name, const Shape& shape) {
  check_shape(op, name, shape, 4, 4);
  if (shape[2] != shape[3])
    throw Error(std::string(op) + ": " + name + " must be [layers, heads, n, n], got " + format_shape(shape));
  check_budget(op, static_cast<double>(element_count(shape)) * 8.0);
}

void check_attentions(const char* op, const char* name, const float* data, const Shape& shape) {
  check_attentions_shape(op, name, shape);
  check_finite(op, name, data, element_count(shape));
}

Tensor attention_rollout(const float* attentions, const Shape& shape, bool residual) {
  check_attentions("rollout", "attentions", attentions, shape);
  const Dims d = dims_of(shape);
  Tensor out({d.layers, d.n, d.n});
  Matrix rolled = layer_graph(attentions, d, 0, residual);
  out.head(0) = rolled;
  for (std::int64_t l = 1; l < d.layers; ++l) {
    rolled = layer_graph(attentions, d, l, residual) * rolled;
    out.head(l) = rolled;
  }
  return out;
}

double max_flow(std::int64_t nodes, const std::vector<FlowEdge>& edges, std::int64_t source, std::int64_t sink) {
  if (nodes < 1) throw Error("maxFlow: the graph has no nodes");
  const auto node = [&](std::int64_t v, const char* what) {
    if (v < 0 || v >= nodes)
      throw Error(std::string("maxFlow: ") + what + " " + std::to_string(v) + " is not a node in [0, " +
                  std::to_string(nodes) + ")");
  };
  node(source, "source");
  node(sink, "sink");
  if (source == sink) throw Error("maxFlow: the source and the sink are the same node");
  FlowNetwork network(nodes);
  for (const FlowEdge& e : edges) {
    node(e.from, "edge start");
    node(e.to, "edge end");
    if (!(e.capacity >= 0) || !std::isfinite(e.capacity))
      throw Error("maxFlow: an edge's capacity must be finite and ≥ 0, got " + std::to_string(e.capacity));
    network.add(e.from, e.to, e.capacity);
  }
  return network.run(source, sink);
}

Tensor attention_flow(const float* attentions, const Shape& shape, bool residual,
                      const std::vector<std::int64_t>& rows) {
  const char* op = "attentionFlow";
  check_attentions(op, "attentions", attentions, shape);
  const Dims d = dims_of(shape);
  if (rows.empty()) throw Error("attentionFlow: rows is empty; name at least one output token");
  for (std::int64_t r : rows)
    if (r < 0 || r >= d.n)
      throw Error("attentionFlow: row " + std::to_string(r) + " is not a token in [0, " + std::to_string(d.n) + ")");
  // One max-flow per (row, input token), each over layers·n² edges: refuse what would take minutes.
  const double work = static_cast<double>(rows.size()) * d.n * d.layers * d.n * d.n;
  if (work > 3e8)
    throw Error("attentionFlow: " + std::to_string(rows.size()) + " rows × " + std::to_string(d.n) + " tokens × " +
                std::to_string(d.layers) + " layers is too much work (rows·n³·layers ≤ 3e8); ask for fewer rows");
  // Node (level, token) = level·n + token; level 0 is the input, level `layers` the output.
  FlowNetwork network((d.layers + 1) * d.n);
  for (std::int64_t l = 0; l < d.layers; ++l) {
    const Matrix a = layer_graph(attentions, d, l, residual);
    for (std::int64_t i = 0; i < d.n; ++i)
      for (std::int64_t j = 0; j < d.n; ++j)
        if (a(i, j) > 0) network.add((l + 1) * d.n + i, l * d.n + j, a(i, j));
  }
  Tensor out({static_cast<std::int64_t>(rows.size()), d.n});
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::int64_t j = 0; j < d.n; ++j)
      out.data[r * d.n + j] = static_cast<float>(network.run(d.layers * d.n + rows[r], j));
  return out;
}

Tensor head_summaries(const float* attentions, const Shape& shape, const std::vector<std::uint8_t>& special,
                      const std::vector<std::uint8_t>& punctuation) {
  const char* op = "headSummaries";
  check_attentions(op, "attentions", attentions, shape);
  const Dims d = dims_of(shape);
  for (const auto* flags : {&special, &punctuation})
    if (static_cast<std::int64_t>(flags->size()) != d.n)
      throw Error(std::string(op) + ": " + (flags == &special ? "special" : "punctuation") + " has " +
                  std::to_string(flags->size()) + " entries for " + std::to_string(d.n) + " tokens");
  Tensor out({d.layers, d.heads, kHeadMeasures});
  for (std::int64_t l = 0; l < d.layers; ++l)
    for (std::int64_t h = 0; h < d.heads; ++h) {
      const float* p = map_of(attentions, d, l, h);
      double m[kHeadMeasures] = {};
      for (std::int64_t i = 0; i < d.n; ++i) {
        const float* row = p + i * d.n;
        for (std::int64_t j = 0; j < d.n; ++j) {
          const double w = row[j];
          if (w > 0) m[kEntropy] -= w * std::log(w);
          m[kDistance] += w * static_cast<double>(std::abs(i - j));
          if (special[j] || j == 0) m[kSpecial] += w;
          if (punctuation[j]) m[kPunctuation] += w;
        }
        if (i > 0) m[kPrevious] += row[i - 1];
        m[kSelf] += row[i];
      }
      float* o = out.data.data() + (l * d.heads + h) * kHeadMeasures;
      for (int k = 0; k < kHeadMeasures; ++k) o[k] = static_cast<float>(m[k] / static_cast<double>(d.n));
      o[kPrevious] = d.n > 1 ? static_cast<float>(m[kPrevious] / static_cast<double>(d.n - 1)) : 0.0f;
    }
  return out;
}

std::vector<std::uint8_t> punctuation_tokens(const std::vector<std::string>& tokens) {
  std::vector<std::uint8_t> out;
  out.reserve(tokens.size());
  for (const std::string& t : tokens) {
    const std::vector<std::uint32_t> cps = unicode::decode_utf8(strip_marker(t));
    out.push_back(!cps.empty() && std::all_of(cps.begin(), cps.end(), [](std::uint32_t cp) {
      return unicode::is_punctuation(cp) || is_ascii_symbol(cp);
    }));
  }
  return out;
}

std::vector<std::pair<std::int64_t, std::int64_t>> align_tokens(const std::vector<std::string>& a,
                                                                const std::vector<std::string>& b) {
  const std::size_t n = a.size(), m = b.size();
  check_budget("alignTokens", static_cast<double>(n + 1) * static_cast<double>(m + 1) * 4.0);
  std::vector<std::string> ca, cb;
  for (const auto& t : a) ca.push_back(comparable(t));
  for (const auto& t : b) cb.push_back(comparable(t));
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  std::vector<std::int32_t> lcs((n + 1) * (m + 1), 0);
  const auto at = [&](std::size_t i, std::size_t j) -> std::int32_t& { return lcs[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = ca[i] == cb[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  for (std::size_t i = 0, j = 0; i < n && j < m;) {
    if (ca[i] == cb[j]) {
      pairs.emplace_back(i++, j++);
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  return pairs;
}

Tensor attention_change(const float* a, const Shape& a_shape, const float* b, const Shape& b_shape,
                        const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs) {
  const char* op = "attentionChange";
  check_attentions(op, "a", a, a_shape);
  check_attentions(op, "b", b, b_shape);
  const Dims da = dims_of(a_shape), db = dims_of(b_shape);
  if (da.layers != db.layers || da.heads != db.heads)
    throw Error("attentionChange: the runs have " + format_shape({da.layers, da.heads}) + " and " +
                format_shape({db.layers, db.heads}) + " layers × heads; compare runs of the same model shape");
  if (pairs.empty()) throw Error("attentionChange: no tokens align between the two runs");
  for (const auto& [i, j] : pairs)
    if (i < 0 || i >= da.n || j < 0 || j >= db.n)
      throw Error("attentionChange: the pair (" + std::to_string(i) + ", " + std::to_string(j) +
                  ") is outside the runs' " + std::to_string(da.n) + " and " + std::to_string(db.n) + " tokens");
  Tensor out({da.layers, da.heads});
  for (std::int64_t l = 0; l < da.layers; ++l)
    for (std::int64_t h = 0; h < da.heads; ++h) {
      const float *pa = map_of(a, da, l, h), *pb = map_of(b, db, l, h);
      double total = 0;
      for (const auto& [i, i2] : pairs) {
        double row = 0;
        for (const auto& [j, j2] : pairs) row += std::abs(pa[i * da.n + j] - pb[i2 * db.n + j2]);
        total += 0.5 * row;
      }
      out.data[l * da.heads + h] = static_cast<float>(total / static_cast<double>(pairs.size()));
    }
  return out;
}

Tensor row_cosines(const float* a, const float* b, std::int64_t n, std::int64_t d) {
  Tensor out({n});
  const ConstMatrixMap x(a, n, d), y(b, n, d);
  for (std::int64_t i = 0; i < n; ++i) {
    const double dot = x.row(i).cast<double>().dot(y.row(i).cast<double>());
    const double norms = x.row(i).cast<double>().norm() * y.row(i).cast<double>().norm();
    out.data[i] = norms > 0 ? static_cast<float>(dot / norms) : 0.0f;
  }
  return out;
}

std::string to_npy(const float* data, const Shape& shape) {
  std::string dims;
  for (std::int64_t s : shape) dims += std::to_string(s) + ", ";
  if (shape.size() > 1)
    dims.erase(dims.size() - 2);  // (5,) for one axis, (2, 3) for more
  else if (!shape.empty())
    dims.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in '\n'.
  const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  const std::size_t count = static_cast<std::size_t>(element_count(shape));
  const std::size_t at = out.size();
  out.resize(at + count * sizeof(float));
  // wasm and x86 are little-endian: the floats' bytes are already '<f4'.
  std::copy_n(reinterpret_cast<const char*>(data), count * sizeof(float), out.data() + at);
  return out;
}

}  // namespace attnscope
