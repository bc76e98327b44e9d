// Encoder-decoder models loaded from random checkpoints in the Hub's names and layout, held to float64 references
// (tests/golden/make_seq2seq_goldens.py writes seq2seq.json): BART to PyTorch's own nn.TransformerEncoderLayer and
// nn.TransformerDecoderLayer, T5 and Flan-T5 to a reference of T5's definition. Every encoder, decoder and
// cross-attention map, the logits, and greedy generation.
#include <gtest/gtest.h>

#include "attnscope/model.hpp"
#include "decoder_checkpoints.hpp"
#include "goldens.hpp"
#include "io/json.hpp"
#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::expect_error;

const Json& goldens() {
  static const Json json = testing::read_golden("seq2seq.json");
  return json;
}

Tensor tensor(const Json& j) { return testing::golden_tensor(j); }

std::vector<std::int32_t> ids(const Json& j) {
  std::vector<std::int32_t> out;
  for (const Json& x : j.array()) out.push_back(static_cast<std::int32_t>(x.number()));
  return out;
}

using testing::files_of;
using testing::max_difference;

// A source and a target of token ids.
Input pair(std::vector<std::int32_t> source, std::vector<std::int32_t> target) {
  return Input::pair(SequenceInput::of_ids(std::move(source)), SequenceInput::of_ids(std::move(target)));
}

TEST(EncoderDecoder, EveryMapAndTheLogitsMatchTheReferences) {
  for (int threads : {1, 2}) {
    Runtime rt(threads);
    for (const Json& g : goldens().find("cases")->array()) {
      SCOPED_TRACE(g.find("name")->string() + ", " + std::to_string(threads) + " thread(s)");
      const auto model = Model::load(files_of(g));
      const ModelInfo& info = model->info();
      EXPECT_TRUE(info.encoder_decoder);
      EXPECT_EQ(info.encoder_layers, 2);
      EXPECT_EQ(info.layers, 3);
      EXPECT_EQ(info.decoder_start,
                static_cast<std::int32_t>(g.find("config")->find("decoder_start_token_id")->number()));
      RunOptions o;
      o.return_logits = true;
      o.top_k = 3;
      const RunResult r = model->run(rt, pair(ids(*g.find("source")), ids(*g.find("target"))), o);
      EXPECT_LE(max_difference(r.map("encoder").attentions, tensor(*g.find("encoder"))), 1e-5);
      EXPECT_LE(max_difference(r.map("decoder").attentions, tensor(*g.find("decoder"))), 1e-5);
      EXPECT_LE(max_difference(r.map("cross").attentions, tensor(*g.find("cross"))), 1e-5);
      // Each set names its rows' and columns' sequences.
      EXPECT_EQ(r.sequences[r.map("cross").queries].name, "target");
      EXPECT_EQ(r.sequences[r.map("cross").keys].name, "source");
      EXPECT_EQ(r.sequences[r.map("encoder").keys].name, "source");
      const Tensor logits = tensor(*g.find("logits"));
      EXPECT_LE(max_difference(r.logits, logits), 1e-4);
      // The predictions are the logits' most likely tokens.
      const std::int64_t vocab = logits.shape[1];
      for (std::int64_t i = 0; i < logits.shape[0]; ++i) {
        const float* row = logits.data.data() + i * vocab;
        EXPECT_EQ(r.predictions.ids[i * 3], std::max_element(row, row + vocab) - row);
      }
    }
  }
}

TEST(EncoderDecoder, GreedyGenerationIsTheReferencesAndEachTokensRowsAreARunsRows) {
  Runtime rt(2);
  for (const Json& g : goldens().find("cases")->array()) {
    SCOPED_TRACE(g.find("name")->string());
    const auto model = Model::load(files_of(g));
    const std::vector<std::int32_t> source = ids(*g.find("source")), greedy = ids(*g.find("greedy"));
    const auto generation = model->generate(rt, pair(source, {greedy[0]}), 0, GenerationMaps::rows);
    generation->append(rt, greedy[1]);  // the forced BOS (BART), or the argmax the first step would draw (T5)
    SamplingOptions argmax;
    argmax.temperature = 0;
    while (generation->ids().size() < greedy.size()) generation->step(rt, argmax);
    EXPECT_EQ(generation->ids(), greedy);
    // The last token's rows: those of a teacher-forced run on the whole target.
    const RunResult r = model->run(rt, pair(source, greedy));
    const Tensor &r_cross = r.map("cross").attentions, &r_decoder = r.map("decoder").attentions;
    const std::int64_t n = static_cast<std::int64_t>(greedy.size()), m = static_cast<std::int64_t>(source.size());
    const Tensor rows = generation->last_rows(), cross = generation->last_cross_rows();
    ASSERT_EQ(cross.shape, (Shape{3, 4, m}));
    ASSERT_EQ(rows.shape, (Shape{3, 4, n}));
    for (std::int64_t map = 0; map < 12; ++map) {
      for (std::int64_t j = 0; j < m; ++j)
        EXPECT_NEAR(cross.data[map * m + j], r_cross.data[(map * n + n - 1) * m + j], 1e-5);
      for (std::int64_t j = 0; j < n; ++j)
        EXPECT_NEAR(rows.data[map * n + j], r_decoder.data[(map * n + n - 1) * n + j], 1e-5);
    }
    EXPECT_TRUE(generation->cross_attentions().empty());  // ::rows keeps no rows
    ASSERT_NE(generation->source(), nullptr);
    EXPECT_EQ(generation->source()->sequence("source").ids, source);
    // With every row kept, the whole target's maps and the encoder's: a teacher-forced run's.
    const auto all = model->generate(rt, pair(source, {greedy[0]}), 0, GenerationMaps::all);
    for (std::size_t i = 1; i < greedy.size(); ++i) all->append(rt, greedy[i]);
    const Tensor self = all->attentions(), crossed = all->cross_attentions();
    ASSERT_EQ(crossed.shape, r_cross.shape);
    ASSERT_EQ(self.shape, r_decoder.shape);
    for (std::size_t i = 0; i < crossed.data.size(); ++i) EXPECT_NEAR(crossed.data[i], r_cross.data[i], 1e-5);
    for (std::size_t i = 0; i < self.data.size(); ++i) EXPECT_NEAR(self.data[i], r_decoder.data[i], 1e-5);
    EXPECT_EQ(all->source()->map("encoder").attentions.data, r.map("encoder").attentions.data);
  }
  Runtime one(1);
  const auto model = Model::load(files_of(goldens().find("cases")->array().front()));
  expect_error(
      [&] {
        model->generate(one, Input::ids({2, 0}), 0);
      },
      "is an encoder-decoder model: it generates a target");
  expect_error([&] { model->generate(one, pair({}, {2}), 0); }, "the source has no tokens");
  expect_error([&] { model->generate(one, pair({0, 5, 2}, {}), 0); }, "the prompt has no tokens");
}

TEST(EncoderDecoder, SixteenBitCheckpointsStaySixteenBit) {
  Runtime rt(1);
  const Json& g = goldens().find("cases")->array().front();
  for (const char* dtype : {"BF16", "F16"}) {
    SCOPED_TRACE(dtype);
    const auto model = Model::load(files_of(g, dtype));
    EXPECT_EQ(model->info().weights_dtype, dtype == std::string("BF16") ? "bf16" : "f16");
    const RunResult r = model->run(rt, pair(ids(*g.find("source")), ids(*g.find("target"))));
    // 16-bit weights move the maps a little from float32's, never far.
    EXPECT_LE(max_difference(r.map("cross").attentions, tensor(*g.find("cross"))), 0.05);
  }
}

TEST(EncoderDecoder, BadInputIsAnErrorNamingIt) {
  Runtime rt(1);
  const Json& g = goldens().find("cases")->array().front();
  const auto model = Model::load(files_of(g));
  const std::vector<std::int32_t> source = ids(*g.find("source")), target = ids(*g.find("target"));
  expect_error([&] { model->run(rt, Input::pair(SequenceInput::of_text("text"), SequenceInput::of_ids(target))); },
               "run: this model's files hold no tokenizer");
  expect_error([&] { model->run(rt, Input::ids(source)); },
               "is an encoder-decoder model: run it on a source and a target");
  expect_error([&] { model->run(rt, pair({}, target)); }, "run: the source has no tokens");
  expect_error([&] { model->run(rt, pair(source, {})); }, "run: the target has no tokens");
  expect_error([&] { model->run(rt, pair({0, 50}, target)); }, "id 50 at position 1 of the source is outside");
  expect_error([&] { model->run(rt, pair(source, std::vector<std::int32_t>(33, 5))); },
               "the target has 33 tokens, more than the decoder's 32 positions");
  expect_error(
      [&] {
        model->run(rt, Input::pair(SequenceInput::of_ids(source), SequenceInput::of_pixels(Tensor({3, 4, 4}))));
      },
      "is not a vision model");
  RunOptions o;
  o.ablate_heads = {{3, 0}};
  expect_error([&] { model->run(rt, pair(source, target), o); }, "outside the decoder's 3 layers × 4 heads");
  o = {};
  o.logit_lens = true;
  expect_error([&] { model->run(rt, pair(source, target), o); }, "logitLens");
  // A source past the encoder's positions is cut, visibly.
  const RunResult cut = model->run(rt, pair(std::vector<std::int32_t>(40, 7), target));
  EXPECT_TRUE(cut.sequence("source").truncated);
  EXPECT_EQ(cut.sequence("source").total_tokens, 40);
  EXPECT_EQ(cut.sequence("source").ids.size(), 32u);
  EXPECT_EQ(cut.map("cross").attentions.shape, (Shape{3, 4, 6, 32}));
  // A one-stack model has no pair to run.
  const auto decoder = Model::load(testing::decoders::cases().front().files);
  expect_error([&] { decoder->run(rt, pair(source, target)); }, "is not an encoder-decoder model");

  // Bad configs and checkpoints name what is wrong.
  const ModelFiles f = files_of(g);
  const auto with = [&](const std::string& from, const std::string& to) {
    ModelFiles changed = f;
    std::string& c = changed["config.json"];
    c.replace(c.find(from), from.size(), to);
    return changed;
  };
  expect_error([&] { Model::load(with("\"encoder_layers\":2", "\"encoder_layers\":0")); },
               "encoder_layers must be a whole number from 1");
  expect_error([&] { Model::load(with("\"model_type\":\"bart\"", "\"model_type\":\"t5\"")); },
               "model_type \"t5\" contradicts architectures[0]");
  expect_error([&] { Model::load(with("\"scale_embedding\"", "\"normalize_before\":true,\"scale_embedding\"")); },
               "normalize_before is not supported");
  expect_error([&] { Model::load(with("\"decoder_start_token_id\":2", "\"decoder_start_token_id\":50")); },
               "decoder_start_token_id must be a whole number from 0 to 49");
  std::vector<std::pair<std::string, Tensor>> named;
  for (const auto& [name, t] : g.find("state")->object())
    if (name != "model.decoder.layers.1.encoder_attn.k_proj.weight") named.emplace_back(name, tensor(t));
  ModelFiles missing = f;
  missing["model.safetensors"] = testing::decoders::safetensors(named);
  expect_error([&] { Model::load(missing); },
               "tensor \"model.decoder.layers.1.encoder_attn.k_proj.weight\" is missing");
}

}  // namespace
}  // namespace attnscope
