// Scores and logits taken apart by their sources (attnscope/explain.hpp), on a random checkpoint of every row: the
// terms add up to the engine's own score or logit, they are the float64 reference's terms (the decoders), a replay
// against a decoder's kept run is a run again whole and leaves that run as it was, and bad queries are Errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "attnscope/error.hpp"
#include "attnscope/model.hpp"
#include "decoder_checkpoints.hpp"
#include "goldens.hpp"
#include "io/json.hpp"
#include "models/transformer_model.hpp"

namespace attnscope {
namespace {

// How far the terms' sum is from the engine's number, in units of the largest term: the parts of a score are
// float32 numbers of that size, so their sum can be no closer than their rounding.
double identity_error(const std::vector<double>& terms, double value, double extra = 0) {
  double sum = extra, largest = std::abs(value);
  for (double t : terms) sum += t, largest = std::max(largest, std::abs(t));
  return std::abs(sum - value) / std::max(largest, 1e-30);
}

bool same_source(const Source& a, const Source& b) {
  return a.kind == b.kind && a.layer == b.layer && a.head == b.head && a.position == b.position;
}

::testing::AssertionResult same_sources(const std::vector<Source>& got, const std::vector<Source>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " sources, the reference has " << want.size();
  for (std::size_t a = 0; a < got.size(); ++a)
    if (!same_source(got[a], want[a]))
      return ::testing::AssertionFailure()
             << "source " << a << " is of kind " << int(got[a].kind) << ", layer " << got[a].layer << ", head "
             << got[a].head << "; the reference's of kind " << int(want[a].kind) << ", layer " << want[a].layer
             << ", head " << want[a].head;
  return ::testing::AssertionSuccess();
}

// The largest |got − want| over the terms, in units of the largest term.
double term_error(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0, largest = 1e-30;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i])), largest = std::max(largest, std::abs(want[i]));
  return worst / largest;
}

// Every file of a model directory of tests/golden/models.
ModelFiles directory(const std::string& name) {
  ModelFiles files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(ATTNSCOPE_GOLDEN_DIR) + "/models/" + name)) {
    if (entry.path().filename() == "golden.json") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    files[entry.path().filename().string()] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  return files;
}

ScoreQuery score_query(std::int64_t layer, std::int64_t head, std::int64_t query, std::int64_t key,
                       std::string set = "") {
  ScoreQuery q;
  q.set = std::move(set);
  q.layer = layer, q.head = head, q.query = query, q.key = key;
  return q;
}

TEST(Explain, ADecodersScoresAndLogitsAreTheFloat64ReferencesTermsAndAddUp) {
  Runtime rt(2);
  for (const testing::decoders::Case& c : testing::decoders::cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files);
    const auto& parts = *transformer::transformer_of(*model);
    const ModelInfo& info = model->info();
    const std::vector<std::int32_t> ids = testing::decoders::some_ids(9, info.vocab_size, 4);
    const Input input = Input::ids(ids);
    for (auto [layer, head, i, j] : {std::array<std::int64_t, 4>{0, 0, 5, 2},
                                     {info.layers - 1, info.heads - 1, 8, 8},
                                     {info.layers - 1, 1, 7, 6},
                                     {0, info.heads - 1, 3, 0}}) {
      if (info.window[layer] && i - j >= info.window[layer]) j = i;  // a key inside the window
      SCOPED_TRACE("layer " + std::to_string(layer) + " head " + std::to_string(head) + ": " + std::to_string(i) +
                   " → " + std::to_string(j));
      const ScoreExplanation e = model->explain_score(rt, input, {}, score_query(layer, head, i, j));
      EXPECT_EQ(e.terms.size(), e.query_sources.size() * e.key_sources.size());
      EXPECT_LE(identity_error(e.terms, e.score), 1e-5);
      EXPECT_EQ(e.softcap, parts.last().config().attn_softcap);
      const transformer::ReferenceExplanation ref = transformer::reference_explain_score(parts, ids, layer, head, i, j);
      EXPECT_TRUE(same_sources(e.query_sources, ref.query_sources));
      EXPECT_TRUE(same_sources(e.key_sources, ref.key_sources));
      EXPECT_LE(term_error(e.terms, ref.terms), 2e-4);
      EXPECT_NEAR(e.score, ref.score, 2e-4 * std::max(1.0, std::abs(ref.score)));
      EXPECT_LE(identity_error(ref.terms, ref.score), 1e-12);  // the reference's own decomposition is exact
      // The first source of each side is the token's embedding, at its position.
      EXPECT_EQ(e.query_sources.front().kind, Source::Kind::token);
      EXPECT_EQ(e.key_sources.front().position, j);
    }
    for (auto [position, token] : {std::pair<std::int64_t, std::int32_t>{8, 3}, {2, 17}}) {
      SCOPED_TRACE("logit of " + std::to_string(token) + " after " + std::to_string(position));
      LogitQuery q;
      q.position = position, q.token = token;
      const LogitExplanation e = model->explain_logit(rt, input, {}, q);
      EXPECT_LE(identity_error(e.terms, e.logit), 1e-5);
      const transformer::ReferenceExplanation ref = transformer::reference_explain_logit(parts, ids, position, token);
      EXPECT_TRUE(same_sources(e.sources, ref.query_sources));
      EXPECT_LE(term_error(e.terms, ref.terms), 2e-4);
      EXPECT_NEAR(e.logit, ref.score, 2e-4 * std::max(1.0, std::abs(ref.score)));
      EXPECT_EQ(e.softcap, parts.spec().head.final_softcap);
      // The engine's own logit, before its soft-cap.
      RunOptions o;
      o.return_logits = true;
      const RunResult r = model->run(rt, input, o);
      const double logit = r.logits.data[position * info.vocab_size + token];
      const double cap = e.softcap;
      EXPECT_NEAR(cap > 0 ? cap * std::tanh(e.logit / cap) : e.logit, logit, 1e-4 * std::max(1.0, std::abs(logit)));
    }
  }
}

TEST(Explain, AReplayAgainstTheKeptRunIsARunAgainAndLeavesTheRunAsItWas) {
  Runtime rt(1);
  for (const testing::decoders::Case& c : testing::decoders::cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files), fresh = Model::load(c.files), control = Model::load(c.files);
    const ModelInfo& info = model->info();
    const std::vector<std::int32_t> ids = testing::decoders::some_ids(10, info.vocab_size, 6);
    std::vector<std::int32_t> prefix(ids.begin(), ids.begin() + 7);
    model->run(rt, Input::ids(prefix));  // kept: the next explanation of these tokens replays them
    control->run(rt, Input::ids(prefix));
    const ScoreQuery q = score_query(info.layers - 1, 1, 6, 5);
    const ScoreExplanation replayed = model->explain_score(rt, Input::ids(prefix), {}, q);
    const ScoreExplanation again = fresh->explain_score(rt, Input::ids(prefix), {}, q);  // nothing kept: a run
    EXPECT_TRUE(same_sources(replayed.query_sources, again.query_sources));
    EXPECT_LE(term_error(replayed.terms, again.terms), 1e-5);
    EXPECT_NEAR(replayed.score, again.score, 1e-5 * std::max(1.0, std::abs(again.score)));
    LogitQuery lq;
    lq.position = 6, lq.token = 5;
    const LogitExplanation lr = model->explain_logit(rt, Input::ids(prefix), {}, lq);
    const LogitExplanation la = fresh->explain_logit(rt, Input::ids(prefix), {}, lq);
    EXPECT_LE(term_error(lr.terms, la.terms), 1e-5);
    // The run extends as if no explanation had come between: the kept rows are the ones that run computed, bit for
    // bit.
    const RunResult extended = model->run(rt, Input::ids(ids));
    EXPECT_EQ(extended.reused_tokens, 7);
    const RunResult whole = control->run(rt, Input::ids(ids));
    EXPECT_EQ(extended.map("self").attentions.data, whole.map("self").attentions.data);
    EXPECT_EQ(extended.hidden().data, whole.hidden().data);
  }
}

TEST(Explain, AblatedHeadsAndPaddingChangeTheStreamTheTermsReadAndStillAddUp) {
  Runtime rt(1);
  const testing::decoders::Case c = testing::decoders::cases().front();
  const auto model = Model::load(c.files);
  const std::vector<std::int32_t> ids = testing::decoders::some_ids(8, model->info().vocab_size, 9);
  RunOptions o;
  o.ablate_heads = {{0, 1}};
  const ScoreExplanation e = model->explain_score(rt, Input::ids(ids), o, score_query(1, 0, 7, 3));
  EXPECT_LE(identity_error(e.terms, e.score), 1e-5);
  const std::size_t nk = e.key_sources.size();
  for (std::size_t a = 0; a < e.query_sources.size(); ++a) {
    const Source& s = e.query_sources[a];
    if (s.kind != Source::Kind::head || s.layer != 0 || s.head != 1) continue;
    for (std::size_t b = 0; b < nk; ++b) EXPECT_EQ(e.terms[a * nk + b], 0.0);  // the ablated head wrote nothing
  }
  RunOptions padded;
  padded.attention_mask = {1, 1, 0, 1, 1, 1, 1, 1};
  const ScoreExplanation p = model->explain_score(rt, Input::ids(ids), padded, score_query(1, 0, 7, 3));
  EXPECT_LE(identity_error(p.terms, p.score), 1e-5);
  EXPECT_NE(p.score, e.score);
  try {
    model->explain_score(rt, Input::ids(ids), padded, score_query(1, 0, 7, 2));
    ADD_FAILURE() << "a padding key has a score";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("key 2 is padding"), std::string::npos) << error.what();
  }
}

TEST(Explain, EncodersScoresAddUpEveryWhereTheirHeadsLook) {
  Runtime rt(2);
  for (const char* name : {"bert", "distilbert-bf16", "gpt2-f16"}) {
    SCOPED_TRACE(name);
    const auto model = Model::load(directory(name));
    const ModelInfo& info = model->info();
    const std::vector<std::int32_t> ids = testing::decoders::some_ids(7, info.vocab_size, 3);
    for (auto [layer, head, i, j] :
         {std::array<std::int64_t, 4>{0, 0, 2, 5}, {info.layers - 1, info.heads - 1, 6, 0}}) {
      if (info.causal && j > i) std::swap(i, j);
      const ScoreExplanation e = model->explain_score(rt, Input::ids(ids), {}, score_query(layer, head, i, j));
      EXPECT_LE(identity_error(e.terms, e.score), 1e-5) << "layer " << layer << " head " << head;
      // BERT's and GPT-2's learned positions, and LayerNorm's biases, are sources of their own.
      const auto has = [&](Source::Kind kind) {
        return std::any_of(e.query_sources.begin(), e.query_sources.end(),
                           [&](const Source& s) { return s.kind == kind; });
      };
      EXPECT_TRUE(has(Source::Kind::position));
      EXPECT_TRUE(has(Source::Kind::norm_bias));
      EXPECT_EQ(has(Source::Kind::head), layer > 0);
    }
    if (info.language_model) {
      LogitQuery q;
      q.position = 6, q.token = 11;
      const LogitExplanation e = model->explain_logit(rt, Input::ids(ids), {}, q);
      EXPECT_LE(identity_error(e.terms, e.logit), 1e-5);
    }
  }
}

TEST(Explain, AnEncoderDecodersThreeSetsAndItsLogitsAddUp) {
  Runtime rt(2);
  const Json json = testing::read_golden("seq2seq.json");
  for (const Json& g : json.find("cases")->array()) {
    const std::string name = g.find("name")->string();
    SCOPED_TRACE(name);
    const auto model = Model::load(testing::files_of(g));
    std::vector<std::int32_t> source, target;
    for (const Json& x : g.find("source")->array()) source.push_back(static_cast<std::int32_t>(x.number()));
    for (const Json& x : g.find("target")->array()) target.push_back(static_cast<std::int32_t>(x.number()));
    const Input input = Input::pair(SequenceInput::of_ids(source), SequenceInput::of_ids(target));
    const ModelInfo& info = model->info();
    const std::int64_t ns = static_cast<std::int64_t>(source.size()), nt = static_cast<std::int64_t>(target.size());
    for (const char* set : {"encoder", "decoder", "cross"}) {
      SCOPED_TRACE(set);
      const bool encoder = std::string(set) == "encoder", cross = std::string(set) == "cross";
      const std::int64_t layers = encoder ? info.encoder_layers : info.layers;
      const std::int64_t i = encoder ? ns - 1 : nt - 1, j = cross ? ns / 2 : encoder ? 0 : nt / 2;
      const ScoreExplanation e = model->explain_score(rt, input, {}, score_query(layers - 1, 1, i, j, set));
      EXPECT_LE(identity_error(e.terms, e.score, e.position_bias), 1e-5);
      // T5's relative position bias is part of a self-attention score, and of no source.
      const bool t5 = info.architecture == "T5ForConditionalGeneration";
      EXPECT_EQ(e.position_bias != 0, t5 && !cross);
      // Cross-attention: the query's sources are the decoder's, the key's the encoder's, through its final norm.
      for (const Source& s : e.key_sources) EXPECT_EQ(s.stack, encoder || cross ? 0 : 1);
      for (const Source& s : e.query_sources) EXPECT_EQ(s.stack, encoder ? 0 : 1);
      if (cross)
        EXPECT_TRUE(std::any_of(e.query_sources.begin(), e.query_sources.end(), [&](const Source& s) {
          return s.kind == Source::Kind::head && s.layer == layers - 1;  // its own layer's self-attention
        }));
    }
    LogitQuery q;
    q.position = nt - 1, q.token = 3;
    const LogitExplanation e = model->explain_logit(rt, input, {}, q);
    EXPECT_LE(identity_error(e.terms, e.logit), 1e-5);
    RunOptions o;
    o.return_logits = true;
    const RunResult r = model->run(rt, input, o);
    EXPECT_NEAR(e.logit, r.logits.data[(nt - 1) * info.vocab_size + 3], 1e-4);
    EXPECT_TRUE(
        std::any_of(e.sources.begin(), e.sources.end(), [](const Source& s) { return s.kind == Source::Kind::cross; }));
  }
}

TEST(Explain, AVisionModelsClsAndPatchRowsAddUp) {
  Runtime rt(2);
  const Json json = testing::read_golden("vision.json");
  for (const Json& g : json.find("cases")->array()) {
    SCOPED_TRACE(g.find("name")->string());
    const auto model = Model::load(testing::files_of(g));
    const Tensor pixels = testing::golden_tensor(*g.find("runs")->array().front().find("pixels"));
    const ModelInfo& info = model->info();
    const std::int64_t first_patch = info.prefix_tokens + info.registers;
    for (auto [i, j] : {std::pair<std::int64_t, std::int64_t>{0, first_patch + 1}, {first_patch + 2, 0}}) {
      const ScoreExplanation e =
          model->explain_score(rt, Input::pixels(pixels), {}, score_query(info.layers - 1, 0, i, j));
      EXPECT_LE(identity_error(e.terms, e.score), 1e-5);
      const Source::Kind first = e.key_sources.front().kind;
      EXPECT_EQ(first, j == 0 ? Source::Kind::prefix : Source::Kind::patch);
    }
    if (info.registers) {
      const ScoreExplanation e =
          model->explain_score(rt, Input::pixels(pixels), {}, score_query(0, 0, 0, info.prefix_tokens));
      EXPECT_EQ(e.key_sources.front().kind, Source::Kind::register_token);
    }
    LogitQuery q;
    EXPECT_THROW(model->explain_logit(rt, Input::pixels(pixels), {}, q), Error);
  }
}

TEST(Explain, BadQueriesAreErrorsThatSayWhatIsWrong) {
  Runtime rt(1);
  const testing::decoders::Case c = testing::decoders::cases()[2];  // mistral: a window of 3
  const auto model = Model::load(c.files);
  const Input input = Input::ids(testing::decoders::some_ids(8, model->info().vocab_size, 1));
  const auto message = [&](const ScoreQuery& q) {
    try {
      model->explain_score(rt, input, {}, q);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(score_query(0, 0, 2, 5)).find("key 5 comes after query 2"), std::string::npos);
  EXPECT_NE(message(score_query(0, 0, 7, 1)).find("sliding window of 3"), std::string::npos);
  EXPECT_NE(message(score_query(9, 0, 2, 1)).find("layer 9 is outside"), std::string::npos);
  EXPECT_NE(message(score_query(0, 99, 2, 1)).find("head 99 is outside"), std::string::npos);
  EXPECT_NE(message(score_query(0, 0, 8, 1)).find("query 8 is outside the text's 8 tokens"), std::string::npos);
  EXPECT_NE(message(score_query(0, 0, 2, 1, "cross")).find("set \"cross\" is not one of"), std::string::npos);
  LogitQuery q;
  q.position = 1, q.token = -1;
  EXPECT_THROW(model->explain_logit(rt, input, {}, q), Error);
  // The model is still usable.
  EXPECT_LE(identity_error(model->explain_score(rt, input, {}, score_query(0, 0, 2, 1)).terms,
                           model->explain_score(rt, input, {}, score_query(0, 0, 2, 1)).score),
            1e-5);
}

}  // namespace
}  // namespace attnscope
