// Decoders (Llama, Mistral, Qwen 2 and 3, Gemma 2 and 3, Phi-3, GPT-2) loaded from checkpoints in the
// Hub's names and layout, held to the float64 plain-loop reference; generation against runs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>

#include "attnscope/model.hpp"
#include "decoder_checkpoints.hpp"
#include "models/transformer_model.hpp"
#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::expect_error;
using namespace testing::decoders;

TEST(Decoder, EveryArchitectureMatchesTheFloat64Reference) {
  Runtime rt(2);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files);
    const transformer::TransformerModel* parts = transformer::transformer_of(*model);
    ASSERT_NE(parts, nullptr);
    const std::vector<std::int32_t> ids = some_ids(11, model->info().vocab_size, 3);
    RunOptions o;
    o.return_logits = true;
    const RunResult r = model->run(rt, Input::ids(ids), o);
    const transformer::ReferenceRun ref = transformer::reference_forward(*parts, ids);
    double attention = 0, logits = 0;
    for (std::size_t i = 0; i < ref.attentions.size(); ++i)
      attention = std::max(attention, std::abs(r.map("self").attentions.data[i] - ref.attentions[i]));
    for (std::size_t i = 0; i < ref.logits.size(); ++i)
      logits = std::max(logits, std::abs(r.logits.data[i] - ref.logits[i]));
    EXPECT_LE(attention, 1e-5);
    EXPECT_LE(logits, 1e-4);
  }
}

TEST(Decoder, SlidingWindowsHideKeysTooFarBack) {
  Runtime rt(1);
  const Case c = cases()[2];  // Mistral, window 3
  const RunResult r = Model::load(c.files)->run(rt, Input::ids(some_ids(9, 40, 5)));
  const std::int64_t n = 9;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const float p = r.map("self").attentions.data[i * n + j];  // layer 0, head 0
      if (j > i || i - j >= 3)
        EXPECT_EQ(p, 0.0f) << i << ", " << j;
      else
        EXPECT_GT(p, 0.0f) << i << ", " << j;
    }
}

TEST(Decoder, GenerationWithTheKvCacheEqualsARunOnTheWholeSequence) {
  Runtime rt(2);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files);
    auto g = model->generate(rt, Input::ids(some_ids(5, 40, 7)), 42);
    SamplingOptions greedy;
    greedy.temperature = 0;
    for (int t = 0; t < 6; ++t) g->step(rt, greedy);
    const std::vector<std::int32_t> ids = g->ids();
    ASSERT_EQ(ids.size(), 11u);
    RunOptions o;
    o.return_logits = true;
    const RunResult r = model->run(rt, Input::ids(ids), o);
    const Tensor maps = g->attentions();
    ASSERT_EQ(maps.shape, r.map("self").attentions.shape);
    double diff = 0;
    for (std::size_t i = 0; i < maps.data.size(); ++i)
      diff = std::max(diff, double(std::abs(maps.data[i] - r.map("self").attentions.data[i])));
    EXPECT_LE(diff, 1e-5);
    // Greedy: each generated token is the run's most likely next token at the position before it.
    const std::int64_t vocab = r.logits.shape[1];
    for (std::size_t i = 5; i < ids.size(); ++i) {
      const float* row = r.logits.data.data() + (i - 1) * vocab;
      EXPECT_EQ(ids[i], std::max_element(row, row + vocab) - row) << "token " << i;
    }
  }
}

// A generation whose prompt extends the last run's tokens takes that run's keys and values (and, keeping every map,
// its maps' rows) instead of running the prompt again, and gives what a generation on a fresh model gives;
// GenerationMaps::rows gives each new token the rows ::all gives it, and keeps none.
TEST(Decoder, GenerationStartsFromTheLastRunAndCanGiveRowsAlone) {
  Runtime rt(2);
  SamplingOptions greedy;
  greedy.temperature = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files), fresh = Model::load(c.files);
    const std::vector<std::int32_t> ids = some_ids(12, 40, 5);
    const std::vector<std::int32_t> head(ids.begin(), ids.begin() + 9);
    const auto compare = [&](Generation& a, Generation& b, const char* what) {
      SCOPED_TRACE(what);
      for (int t = 0; t < 5; ++t) {
        EXPECT_EQ(a.step(rt, greedy), b.step(rt, greedy)) << "token " << t;
        const Tensor ra = a.last_rows(), rb = b.last_rows();
        ASSERT_EQ(ra.shape, rb.shape);
        double diff = 0;
        for (std::size_t i = 0; i < ra.data.size(); ++i)
          diff = std::max(diff, double(std::abs(ra.data[i] - rb.data[i])));
        EXPECT_LE(diff, 1e-5) << "token " << t;
      }
    };
    // A run on the first 9 tokens, then generation after all 12: 9 reused, keeping every map.
    model->run(rt, Input::ids(head));
    auto resumed = model->generate(rt, Input::ids(ids), 3, GenerationMaps::all);
    auto whole = fresh->generate(rt, Input::ids(ids), 3, GenerationMaps::all);
    EXPECT_EQ(resumed->reused_tokens(), 9);
    EXPECT_EQ(whole->reused_tokens(), 0);
    compare(*resumed, *whole, "after a shorter run");
    const Tensor a = resumed->attentions(), b = whole->attentions();
    ASSERT_EQ(a.shape, b.shape);
    double diff = 0;
    for (std::size_t i = 0; i < a.data.size(); ++i) diff = std::max(diff, double(std::abs(a.data[i] - b.data[i])));
    EXPECT_LE(diff, 1e-5);
    // The same tokens: all but the last reused (its logits start the generation). Rows alone: the prompt runs
    // fused, each token then gets the rows ::all gives, and nothing is kept.
    model->run(rt, Input::ids(ids));
    auto rows = model->generate(rt, Input::ids(ids), 3, GenerationMaps::rows);
    EXPECT_EQ(rows->reused_tokens(), 11);
    EXPECT_TRUE(rows->last_rows().empty());
    auto all = fresh->generate(rt, Input::ids(ids), 3, GenerationMaps::all);
    compare(*rows, *all, "rows alone");
    EXPECT_TRUE(rows->attentions().empty());
    // A run of some layers' maps kept no rows: a generation keeping every map runs its prompt; one without maps
    // still takes its keys and values.
    RunOptions some;
    some.map_layers = std::vector<std::int64_t>{0};
    model->run(rt, Input::ids(ids), some);
    EXPECT_EQ(model->generate(rt, Input::ids(ids), 3, GenerationMaps::all)->reused_tokens(), 0);
    auto bare = model->generate(rt, Input::ids(ids), 3, GenerationMaps::none);
    EXPECT_EQ(bare->reused_tokens(), 11);
    EXPECT_TRUE(bare->last_rows().empty());
    auto other = fresh->generate(rt, Input::ids(ids), 3, GenerationMaps::none);
    for (int t = 0; t < 5; ++t) EXPECT_EQ(bare->step(rt, greedy), other->step(rt, greedy));
    EXPECT_TRUE(bare->last_rows().empty());
    // A text that differs from the first token on shares nothing with the last run: nothing reused.
    std::vector<std::int32_t> other_text = ids;
    other_text[0] = (other_text[0] + 1) % 40;
    EXPECT_EQ(model->generate(rt, Input::ids(other_text), 3, GenerationMaps::rows)->reused_tokens(), 0);
  }
}

// A run reuses what the previous one computed for its leading tokens, and gives what a fresh run gives: while
// typing at the end, after an edit in the middle (which invalidates the rest), and after deleting at the end.
// Natively Eigen's GEMM blocks by the number of rows, so the last bits may differ; in wasm the engine's own
// kernel sums in the same order whatever the rows, and the JS tests hold the results bit for bit.
TEST(Decoder, PrefixReuseGivesWhatAFreshRunGives) {
  Runtime rt(2);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files), fresh = Model::load(c.files);
    std::vector<std::int32_t> ids = some_ids(12, 40, 9);
    RunOptions o;
    o.top_k = 3;
    o.logit_lens = true;
    o.return_logits = true;
    RunOptions no_reuse = o;
    no_reuse.reuse_prefix = false;
    const auto same = [&](std::vector<std::int32_t> now, std::int64_t expect_reused) {
      const RunResult a = model->run(rt, Input::ids(now), o), b = fresh->run(rt, Input::ids(now), no_reuse);
      EXPECT_EQ(a.reused_tokens, expect_reused);
      EXPECT_EQ(b.reused_tokens, 0);
      const auto near = [](const auto& x, const auto& y, float tolerance) {
        if (x.size() != y.size()) return false;
        float worst = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const float d = std::abs(x[i] - y[i]);
          worst = std::isnan(d) ? INFINITY : std::max(worst, d);  // NaN: a value never written, the worst there is
        }
        if (worst > tolerance) ADD_FAILURE() << "worst difference " << worst;
        return worst <= tolerance;
      };
      EXPECT_TRUE(near(a.map("self").attentions.data, b.map("self").attentions.data, 1e-5f));
      EXPECT_TRUE(near(a.hidden().data, b.hidden().data, 1e-4f));
      EXPECT_TRUE(near(a.logits.data, b.logits.data, 1e-4f));
      EXPECT_EQ(a.predictions.ids, b.predictions.ids);
      EXPECT_TRUE(near(a.predictions.probs, b.predictions.probs, 1e-5f));
      EXPECT_EQ(a.logit_lens.ids, b.logit_lens.ids);
      EXPECT_TRUE(near(a.logit_lens.probs, b.logit_lens.probs, 1e-5f));
    };
    for (std::int64_t n = 6; n <= 12; ++n) same({ids.begin(), ids.begin() + n}, n == 6 ? 0 : n - 1);
    ids[4] = (ids[4] + 1) % 40;  // an edit in the middle
    same(ids, 4);
    same({ids.begin(), ids.begin() + 9}, 9);  // deleting at the end: nothing to compute
    RunOptions padded = o;
    padded.attention_mask.assign(9, 1);
    padded.attention_mask[8] = 0;
    EXPECT_EQ(model->run(rt, Input::ids({ids.begin(), ids.begin() + 9}), padded).reused_tokens, 0);
    // A run that cannot be reused (padding, projections) leaves the last reusable one for the next to extend.
    RunOptions projections = o;
    projections.return_projections = true;
    EXPECT_EQ(model->run(rt, Input::ids({ids.begin(), ids.begin() + 7}), projections).reused_tokens, 0);
    same({ids.begin(), ids.begin() + 10}, 9);
  }
}

// The maps of chosen layers (map_layers) are those layers' maps of a run of every layer: fresh, from the kept
// queries and keys of the same tokens (nothing else computed), while typing at the end, and with padding.
TEST(Decoder, ChosenLayersMapsAreThoseOfARunOfEveryLayer) {
  Runtime rt(2);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files), every = Model::load(c.files);
    const std::int64_t layers = model->info().layers, heads = model->info().heads;
    const std::vector<std::int32_t> ids = some_ids(12, 40, 4);
    const auto layers_of = [&](const std::vector<std::int32_t>& now, std::vector<std::int64_t> chosen,
                               const RunOptions& base) {
      RunOptions o = base;
      o.map_layers = chosen;
      const RunResult a = model->run(rt, Input::ids(now), o);
      RunOptions all = base;
      all.reuse_prefix = false;
      const RunResult b = every->run(rt, Input::ids(now), all);
      const std::int64_t n = static_cast<std::int64_t>(now.size()), block = heads * n * n;
      EXPECT_EQ(a.map("self").map_layers, chosen);
      EXPECT_EQ(a.map("self").attentions.shape, (Shape{static_cast<std::int64_t>(chosen.size()), heads, n, n}));
      float worst = 0, hidden = 0;
      for (std::size_t i = 0; i < chosen.size(); ++i)
        for (std::int64_t x = 0; x < block; ++x)
          worst = std::max(worst, std::abs(a.map("self").attentions.data[i * block + x] -
                                           b.map("self").attentions.data[chosen[i] * block + x]));
      for (std::size_t x = 0; x < a.hidden().data.size(); ++x)
        hidden = std::max(hidden, std::abs(a.hidden().data[x] - b.hidden().data[x]));
      EXPECT_LE(worst, 1e-6f);
      EXPECT_LE(hidden, 1e-4f);
      return a.reused_tokens;
    };
    const RunOptions plain;
    EXPECT_EQ(layers_of({ids.begin(), ids.begin() + 8}, {layers - 1, 0}, plain), 0);
    EXPECT_EQ(layers_of({ids.begin(), ids.begin() + 8}, {0}, plain), 8);  // another layer: from the kept queries
    EXPECT_EQ(layers_of(ids, {layers - 1}, plain), 8);                    // typing at the end
    EXPECT_EQ(layers_of(ids, {}, plain), 12);                             // no maps at all
    // Every layer's maps need every row of every map: a run that kept only some cannot give them.
    EXPECT_EQ(model->run(rt, Input::ids(ids)).reused_tokens, 0);
    RunOptions padded;
    padded.attention_mask.assign(12, 1);
    padded.attention_mask[3] = 0;
    EXPECT_EQ(layers_of(ids, {0}, padded), 0);
    RunOptions wrong;
    wrong.map_layers = std::vector<std::int64_t>{0, layers};
    expect_error([&] { model->run(rt, Input::ids(ids), wrong); },
                 "run: mapLayers[1] = " + std::to_string(layers) + " is outside the model's " + std::to_string(layers) +
                     " layers (counting from 0)");
    wrong.map_layers = std::vector<std::int64_t>{0, 0};
    expect_error([&] { model->run(rt, Input::ids(ids), wrong); }, "run: mapLayers names layer 0 twice");
  }
}

// The language-model head on a run's hidden rows gives the run's own logits for those rows.
TEST(Decoder, LogitsOfHiddenRowsAreTheRunsLogits) {
  Runtime rt(1);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files);
    RunOptions o;
    o.return_logits = true;
    const RunResult r = model->run(rt, Input::ids(some_ids(7, 40, 4)), o);
    const std::int64_t d = r.hidden().shape[1], vocab = r.logits.shape[1];
    Tensor rows({2, d});
    std::copy_n(r.hidden().data.begin() + 3 * d, 2 * d, rows.data.begin());  // rows 3 and 4
    const Tensor logits = model->logits(rt, rows);
    ASSERT_EQ(logits.shape, (Shape{2, vocab}));
    double diff = 0;
    for (std::int64_t i = 0; i < 2 * vocab; ++i)
      diff = std::max(diff, double(std::abs(logits.data[i] - r.logits.data[3 * vocab + i])));
    EXPECT_LE(diff, 1e-5);
    expect_error([&] { model->logits(rt, Tensor({2, d + 1})); }, "logits: hidden must be [rows, ");
  }
}

TEST(Decoder, SamplingIsSeededAndHonoursTopKAndTopP) {
  Runtime rt(1);
  const auto model = Model::load(cases()[0].files);
  SamplingOptions o;
  o.temperature = 1.5f;
  const auto text = [&](std::uint64_t seed, const SamplingOptions& s) {
    auto g = model->generate(rt, Input::ids({1, 2, 3}), seed);
    for (int i = 0; i < 12; ++i) g->step(rt, s);
    return g->ids();
  };
  EXPECT_EQ(text(7, o), text(7, o));
  EXPECT_NE(text(7, o), text(8, o));
  o.top_k = 1;  // only the most likely token can be drawn: greedy
  SamplingOptions greedy;
  greedy.temperature = 0;
  EXPECT_EQ(text(9, o), text(10, greedy));
  o.top_k = 0;
  o.top_p = 1e-6f;  // the smallest set holding any probability: the most likely token
  EXPECT_EQ(text(11, o), text(10, greedy));
}

TEST(Decoder, BadConfigsAndOptionsAreErrorsNamingTheField) {
  Runtime rt(1);
  const Case base = cases()[0];
  const auto with = [&](const std::string& from, const std::string& to) {
    ModelFiles f = base.files;
    std::string& config = f["config.json"];
    const auto at = config.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    config.replace(at, from.size(), to);
    return f;
  };
  expect_error([&] { Model::load(with("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3")); },
               "num_key_value_heads=3 does not divide num_attention_heads=4");
  expect_error([&] { Model::load(with("\"rope_type\": \"llama3\"", "\"rope_type\": \"yarn\"")); },
               "rope_scaling type \"yarn\" is not supported");
  expect_error([&] { Model::load(with("\"rope_type\": \"llama3\"", "\"rope_type\": \"longrope\"")); },
               "rope_scaling.short_factor must list 4 numbers (rotary dims / 2)");
  expect_error([&] { Model::load(with("\"head_dim\": 8", "\"head_dim\": 8, \"partial_rotary_factor\": 0.5")); },
               "partial_rotary_factor is not supported");
  expect_error([&] { Model::load(with("\"hidden_size\": 32", "\"hidden_size\": 1e12")); },
               "hidden_size must be a whole number from 1 to 65536");
  expect_error([&] { Model::load(with("\"head_dim\": 8", "\"head_dim\": 16")); },
               "has shape [32, 32] but the config needs [64, 32]");
  expect_error([&] { Model::load(with("LlamaForCausalLM", "FalconForCausalLM")); },
               "architecture \"FalconForCausalLM\" is not supported");
  // The table knows each row's model_type: a config that names another is refused, not run as the row.
  expect_error(
      [&] { Model::load(with("\"head_dim\": 8", "\"head_dim\": 8, \"model_type\": \"mamba\"")); },
      "model_type \"mamba\" contradicts architectures[0] \"LlamaForCausalLM\" (whose model_type is \"llama\")");
  ModelFiles typed = with("\"head_dim\": 8", "\"head_dim\": 8, \"model_type\": \"llama\"");
  EXPECT_NO_THROW(Model::load(typed));
  const auto model = Model::load(base.files);
  auto g = model->generate(rt, Input::ids({1, 2}), 0);
  SamplingOptions o;
  o.temperature = NAN;
  expect_error([&] { g->step(rt, o); }, "temperature must be a finite number");
  o.temperature = 1;
  o.top_p = 1.5f;
  expect_error([&] { g->step(rt, o); }, "topP must be in (0, 1]");
  expect_error([&] { model->generate(rt, Input::ids(std::vector<std::int32_t>(65, 1)), 0); }, "beyond the model's 64");
  expect_error(
      [&] {
        model->generate(rt, Input::ids({1, 99}), 0);
      },
      "id 99 at position 1 is outside the vocabulary [0, 40)");
  o.top_p = 1;
  for (int i = 0; i < 62; ++i) g->step(rt, o);
  expect_error([&] { g->step(rt, o); }, "the sequence would have 65 tokens, beyond the model's 64");
}

}  // namespace
}  // namespace attnscope
