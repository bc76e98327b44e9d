// The block's settings that encoder-decoder and vision rows will use (cross-attention over another stack's output,
// T5's relative position bias, layer scale, positions none), held to PyTorch's own nn.TransformerDecoderLayer and
// nn.TransformerEncoderLayer in float64 (tests/golden/make_block_goldens.py writes blocks.json).
#include <gtest/gtest.h>

#include "decoder_checkpoints.hpp"
#include "goldens.hpp"
#include "io/json.hpp"
#include "models/stack.hpp"
#include "models/weights.hpp"
#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::expect_error;

const Json& goldens() {
  static const Json json = testing::read_golden("blocks.json");
  return json;
}

Tensor tensor(const Json& j) { return testing::golden_tensor(j); }

std::int64_t whole(const Json& j, const char* key) { return static_cast<std::int64_t>(j.find(key)->number()); }

TEST(Block, RelativeBucketsAreT5s) {
  for (const Json& table : goldens().find("buckets")->array()) {
    const std::int64_t buckets = whole(table, "buckets"), max_distance = whole(table, "max_distance");
    const bool bidirectional = table.find("bidirectional")->boolean();
    SCOPED_TRACE(std::to_string(buckets) + " buckets up to " + std::to_string(max_distance) +
                 (bidirectional ? ", bidirectional" : ", causal"));
    const auto& values = table.find("values")->array();
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::int64_t distance = whole(table, "first") + static_cast<std::int64_t>(i);
      ASSERT_EQ(transformer::relative_bucket(distance, bidirectional, buckets, max_distance),
                static_cast<std::int64_t>(values[i].number()))
          << "distance " << distance;
    }
  }
}

// A case's stack as AttnScope's block: the config its settings make, the weights in PyTorch's names read by the
// same WeightStore the checkpoint readers use.
struct Stack {
  std::unique_ptr<transformer::Stack> model;
  std::string files;
};

Stack stack_of(const Json& g) {
  using transformer::Positions;
  const std::int64_t d = whole(g, "d_model"), heads = whole(g, "heads"), layers = whole(g, "layers");
  transformer::Config c;
  c.layers = layers;
  c.heads = c.kv_heads = heads;
  c.head_dim = d / heads;
  c.d_model = d;
  c.ffn = whole(g, "ffn");
  c.max_tokens = 64;
  c.causal = c.cross_attention = g.find("decoder")->boolean();
  c.norm = transformer::Norm::layer;
  c.eps = 1e-5f;
  c.placement = g.find("norm_first")->boolean() ? transformer::Placement::pre : transformer::Placement::post;
  c.gated = false;
  c.act = g.find("activation")->string() == "relu" ? transformer::Activation::relu : transformer::Activation::gelu;
  c.positions = Positions::none;
  if (const Json* r = g.find("relative")) {
    c.positions = Positions::relative;
    c.relative_buckets = whole(*r, "buckets");
    c.relative_max_distance = whole(*r, "max_distance");
  }
  c.layer_scale = g.find("layer_scale")->boolean();
  c.scale = 1.0f / std::sqrt(float(c.head_dim));
  c.window.assign(static_cast<std::size_t>(layers), 0);

  std::vector<std::pair<std::string, Tensor>> named;
  for (const auto& [name, t] : g.find("state")->object()) named.emplace_back(name, tensor(t));
  Stack s;
  s.files = testing::decoders::safetensors(named);
  const ModelFiles files{{"model.safetensors", s.files}};
  const WeightStore store(files);
  transformer::Weights w;
  if (c.positions == Positions::relative) w.relative_bias = store.read("relative_attention_bias.weight", {-1, heads});
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    transformer::Block& b = w.blocks.emplace_back();
    // in_proj stacks q, k, v by rows: [3d, d]
    const auto attention = [&](const std::string& m, Weight& q, Weight& k, Weight& v, Weight& o, Tensor& bq, Tensor& bk,
                               Tensor& bv, Tensor& bo) {
      q = store.linear_rows(p + m + ".in_proj_weight", d, 3 * d, 0, d);
      k = store.linear_rows(p + m + ".in_proj_weight", d, 3 * d, d, d);
      v = store.linear_rows(p + m + ".in_proj_weight", d, 3 * d, 2 * d, d);
      const Tensor in_bias = store.read(p + m + ".in_proj_bias", {3 * d});
      bq = Tensor({d}), bk = Tensor({d}), bv = Tensor({d});
      std::copy_n(in_bias.data.begin(), d, bq.data.begin());
      std::copy_n(in_bias.data.begin() + d, d, bk.data.begin());
      std::copy_n(in_bias.data.begin() + 2 * d, d, bv.data.begin());
      o = store.linear(p + m + ".out_proj.weight", d, d);
      bo = store.read(p + m + ".out_proj.bias", {d});
    };
    attention("self_attn", b.wq, b.wk, b.wv, b.wo, b.bq, b.bk, b.bv, b.bo);
    const auto norm = [&](int i, Tensor& weight, Tensor& bias) {
      weight = store.read(p + "norm" + std::to_string(i) + ".weight", {d});
      bias = store.read(p + "norm" + std::to_string(i) + ".bias", {d});
    };
    norm(1, b.attn_norm, b.attn_norm_bias);
    if (c.cross_attention) {
      attention("multihead_attn", b.wcq, b.wck, b.wcv, b.wco, b.bcq, b.bck, b.bcv, b.bco);
      norm(2, b.cross_norm, b.cross_norm_bias);
    }
    norm(c.cross_attention ? 3 : 2, b.ffn_norm, b.ffn_norm_bias);
    b.w_up = store.linear(p + "linear1.weight", d, c.ffn);
    b.b_up = store.read(p + "linear1.bias", {c.ffn});
    b.w_down = store.linear(p + "linear2.weight", c.ffn, d);
    b.b_down = store.read(p + "linear2.bias", {d});
    if (c.layer_scale) {
      b.attn_scale = store.read(p + "ls1.gamma", {d});
      b.ffn_scale = store.read(p + "ls2.gamma", {d});
    }
  }
  s.model = std::make_unique<transformer::Stack>(std::move(c), std::move(w));
  return s;
}

double max_difference(const float* got, const Tensor& want) {
  double worst = 0;
  for (std::size_t i = 0; i < want.data.size(); ++i) worst = std::max(worst, double(std::abs(got[i] - want.data[i])));
  return worst;
}

TEST(Block, CrossAttentionRelativeBiasAndLayerScaleMatchPyTorchsLayers) {
  for (int threads : {1, 2}) {
    Runtime rt(threads);
    for (const Json& g : goldens().find("cases")->array()) {
      SCOPED_TRACE(g.find("name")->string() + ", " + std::to_string(threads) + " thread(s)");
      const Stack s = stack_of(g);
      const transformer::Config& c = s.model->config();
      const Tensor input = tensor(*g.find("input")), output = tensor(*g.find("output"));
      const std::int64_t n = input.shape[0];
      transformer::Memory memory;
      std::vector<float> self(static_cast<std::size_t>(c.layers * c.heads * n * n)), cross;
      transformer::Pass e;
      e.maps = transformer::Pass::every_layer(self.data(), c.layers, c.heads * n * n);
      if (c.cross_attention) {
        const Tensor m = tensor(*g.find("memory"));
        memory = s.model->memory(rt, ConstMatrixMap(m.data.data(), m.shape[0], m.shape[1]));
        cross.resize(static_cast<std::size_t>(c.layers * c.heads * n * memory.length));
        e.memory = &memory;
        e.cross_maps = transformer::Pass::every_layer(cross.data(), c.layers, c.heads * n * memory.length);
      }
      transformer::Cache cache(c);
      const Matrix x = s.model->run(rt, cache, ConstMatrixMap(input.data.data(), n, c.d_model), e);
      EXPECT_LE(max_difference(x.data(), output), 5e-6);
      EXPECT_LE(max_difference(self.data(), tensor(*g.find("self_weights"))), 2e-6);
      if (c.cross_attention) EXPECT_LE(max_difference(cross.data(), tensor(*g.find("cross_weights"))), 2e-6);
    }
  }
}

TEST(Block, TokensOneAtATimeGiveTheWholeRunsRowsWithRelativePositions) {
  Runtime rt(2);
  for (const Json& g : goldens().find("cases")->array()) {
    if (!g.find("decoder")->boolean()) continue;  // the cache extends causal stacks
    SCOPED_TRACE(g.find("name")->string());
    const Stack s = stack_of(g);
    const transformer::Config& c = s.model->config();
    const Tensor input = tensor(*g.find("input")), m = tensor(*g.find("memory"));
    const std::int64_t n = input.shape[0];
    const transformer::Memory memory = s.model->memory(rt, ConstMatrixMap(m.data.data(), m.shape[0], m.shape[1]));
    transformer::Cache whole_cache(c), step_cache(c);
    transformer::Pass e;
    e.memory = &memory;
    const Matrix whole = s.model->run(rt, whole_cache, ConstMatrixMap(input.data.data(), n, c.d_model), e);
    for (std::int64_t i = 0; i < n; ++i) {
      std::vector<float> rows(static_cast<std::size_t>(c.layers * c.heads * (i + 1)));
      std::vector<float> cross(static_cast<std::size_t>(c.layers * c.heads * memory.length));
      transformer::Pass step = e;
      step.maps = transformer::Pass::every_layer(rows.data(), c.layers, c.heads * (i + 1));
      step.cross_maps = transformer::Pass::every_layer(cross.data(), c.layers, c.heads * memory.length);
      const Matrix x =
          s.model->run(rt, step_cache, ConstMatrixMap(input.data.data() + i * c.d_model, 1, c.d_model), step);
      EXPECT_LE((x.row(0) - whole.row(i)).cwiseAbs().maxCoeff(), 1e-5) << "token " << i;
      // its cross-attention row, as the whole run's
      const Tensor want = tensor(*g.find("cross_weights"));
      for (std::int64_t l = 0; l < c.layers; ++l)
        for (std::int64_t h = 0; h < c.heads; ++h)
          for (std::int64_t j = 0; j < memory.length; ++j)
            EXPECT_NEAR(cross[(l * c.heads + h) * memory.length + j],
                        want.data[((l * c.heads + h) * n + i) * memory.length + j], 2e-6);
    }
  }
}

TEST(Block, AStackWithCrossAttentionAsksForItsMemory) {
  Runtime rt(1);
  const Json& g = goldens().find("cases")->array().front();
  const Stack s = stack_of(g);
  const transformer::Config& c = s.model->config();
  transformer::Cache cache(c);
  const Matrix x = Matrix::Zero(3, c.d_model);
  expect_error([&] { s.model->run(rt, cache, x, {}); }, "needs the memory it attends to");
  expect_error([&] { s.model->run(rt, cache, Matrix::Zero(3, c.d_model + 1), {}); }, "input must be [n, 16]");
  expect_error([&] { s.model->memory(rt, Matrix::Zero(4, 3)); }, "the memory must be [m, 16], got [4, 3]");
}

}  // namespace
}  // namespace attnscope
