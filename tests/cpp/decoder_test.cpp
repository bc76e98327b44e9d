// Decoders (Llama, Mistral, Qwen 2 and 3, Gemma 2 and 3, GPT-2) loaded from checkpoints in the
// Hub's names and layout, held to the float64 plain-loop reference; generation against runs.
#include "models/decoder.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>

#include "attnscope/model.hpp"
#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::expect_error;

// A safetensors file of F32 tensors, in the given order.
std::string safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::ostringstream header;
  std::string data;
  header << "{";
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    header << (i ? "," : "") << "\"" << name << "\":{\"dtype\":\"F32\",\"shape\":[";
    for (std::size_t d = 0; d < t.shape.size(); ++d) header << (d ? "," : "") << t.shape[d];
    header << "],\"data_offsets\":[" << data.size() << "," << data.size() + 4 * t.data.size() << "]}";
    data.append(reinterpret_cast<const char*>(t.data.data()), 4 * t.data.size());
  }
  header << "}";
  const std::string h = header.str();
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return file + h + data;
}

struct Shape {
  std::int64_t vocab = 40, d = 32, heads = 4, kv = 2, hd = 8, ffn = 48, layers = 2;
};

// A random checkpoint in the Llama family's names: [out, in] linears, norms near 1 (near 0 for Gemma).
std::vector<std::pair<std::string, Tensor>> llama_family(const Shape& s, bool qkv_bias, bool o_bias, bool qk_norm,
                                                         bool sandwich, bool gemma, bool lm_head) {
  std::uint32_t seed = 1;
  const auto random = [&](attnscope::Shape shape, float scale) { return testing::random_tensor(shape, seed++, scale); };
  const auto norm = [&](std::int64_t n) {
    Tensor t = random({n}, 0.1f);
    if (!gemma)
      for (float& x : t.data) x += 1.0f;
    return t;
  };
  std::vector<std::pair<std::string, Tensor>> t;
  t.emplace_back("model.embed_tokens.weight", random({s.vocab, s.d}, 1.0f));
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.emplace_back(p + "input_layernorm.weight", norm(s.d));
    t.emplace_back(p + "self_attn.q_proj.weight", random({s.heads * s.hd, s.d}, 0.3f));
    t.emplace_back(p + "self_attn.k_proj.weight", random({s.kv * s.hd, s.d}, 0.3f));
    t.emplace_back(p + "self_attn.v_proj.weight", random({s.kv * s.hd, s.d}, 0.3f));
    t.emplace_back(p + "self_attn.o_proj.weight", random({s.d, s.heads * s.hd}, 0.2f));
    if (qkv_bias) {
      t.emplace_back(p + "self_attn.q_proj.bias", random({s.heads * s.hd}, 0.2f));
      t.emplace_back(p + "self_attn.k_proj.bias", random({s.kv * s.hd}, 0.2f));
      t.emplace_back(p + "self_attn.v_proj.bias", random({s.kv * s.hd}, 0.2f));
    }
    if (o_bias) t.emplace_back(p + "self_attn.o_proj.bias", random({s.d}, 0.2f));
    if (qk_norm) {
      t.emplace_back(p + "self_attn.q_norm.weight", norm(s.hd));
      t.emplace_back(p + "self_attn.k_norm.weight", norm(s.hd));
    }
    t.emplace_back(p + "post_attention_layernorm.weight", norm(s.d));
    if (sandwich) {
      t.emplace_back(p + "pre_feedforward_layernorm.weight", norm(s.d));
      t.emplace_back(p + "post_feedforward_layernorm.weight", norm(s.d));
    }
    t.emplace_back(p + "mlp.gate_proj.weight", random({s.ffn, s.d}, 0.3f));
    t.emplace_back(p + "mlp.up_proj.weight", random({s.ffn, s.d}, 0.3f));
    t.emplace_back(p + "mlp.down_proj.weight", random({s.d, s.ffn}, 0.2f));
  }
  t.emplace_back("model.norm.weight", norm(s.d));
  if (lm_head) t.emplace_back("lm_head.weight", random({s.vocab, s.d}, 0.5f));
  return t;
}

std::string dims(const Shape& s) {
  return "\"vocab_size\": " + std::to_string(s.vocab) + ", \"hidden_size\": " + std::to_string(s.d) +
         ", \"num_attention_heads\": " + std::to_string(s.heads) +
         ", \"num_key_value_heads\": " + std::to_string(s.kv) + ", \"head_dim\": " + std::to_string(s.hd) +
         ", \"intermediate_size\": " + std::to_string(s.ffn) + ", \"num_hidden_layers\": " + std::to_string(s.layers) +
         ", \"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-5";
}

struct Case {
  const char* name;
  std::string config;  // config.json
  ModelFiles files;
};

std::vector<Case> cases() {
  Shape s;
  std::vector<Case> c;
  const auto add = [&](const char* name, const std::string& arch, const std::string& extra,
                       std::vector<std::pair<std::string, Tensor>> tensors) {
    const std::string config = "{\"architectures\": [\"" + arch + "\"], " + dims(s) + extra + "}";
    c.push_back({name, config, {{"config.json", config}, {"model.safetensors", safetensors(tensors)}}});
  };
  add("llama: GQA, tied, llama3 rope scaling", "LlamaForCausalLM",
      ", \"tie_word_embeddings\": true, \"rope_theta\": 500000, \"rope_scaling\": {\"rope_type\": \"llama3\", "
      "\"factor\": 8, \"low_freq_factor\": 1, \"high_freq_factor\": 4, \"original_max_position_embeddings\": 8}",
      llama_family(s, false, false, false, false, false, false));
  add("llama: untied, attention and MLP bias false", "LlamaForCausalLM",
      ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}",
      llama_family(s, false, false, false, false, false, true));
  add("mistral: a sliding window of 3", "MistralForCausalLM", ", \"sliding_window\": 3",
      llama_family(s, false, false, false, false, false, true));
  add("qwen2: q, k, v biases, tied", "Qwen2ForCausalLM", ", \"tie_word_embeddings\": true, \"rope_theta\": 1000000",
      llama_family(s, true, false, false, false, false, false));
  add("qwen3: QK-norm, head_dim apart from hidden / heads", "Qwen3ForCausalLM",
      ", \"tie_word_embeddings\": true, \"attention_bias\": true",
      llama_family(s, true, true, true, false, false, false));
  add("gemma2: soft-caps, windows on even layers, query_pre_attn_scalar", "Gemma2ForCausalLM",
      ", \"sliding_window\": 3, \"query_pre_attn_scalar\": 24, \"attn_logit_softcapping\": 2.5, "
      "\"final_logit_softcapping\": 3.0, \"hidden_activation\": \"gelu_pytorch_tanh\"",
      llama_family(s, false, false, false, true, true, false));
  add("gemma3: QK-norm, local and global RoPE, layer_types", "Gemma3ForCausalLM",
      ", \"sliding_window\": 4, \"query_pre_attn_scalar\": 24, \"rope_theta\": 1000000, \"rope_local_base_freq\": "
      "10000, "
      "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8}, "
      "\"layer_types\": [\"sliding_attention\", \"full_attention\"]",
      llama_family(s, false, false, true, true, true, false));
  return c;
}

std::vector<std::int32_t> some_ids(std::int64_t n, std::int64_t vocab, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (auto& id : ids) id = static_cast<std::int32_t>(rng() % vocab);
  return ids;
}

TEST(Decoder, EveryArchitectureMatchesTheFloat64Reference) {
  Runtime rt(2);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files);
    const decoder::Parts parts = decoder::parts_of(*model);
    ASSERT_NE(parts.config, nullptr);
    const std::vector<std::int32_t> ids = some_ids(11, parts.config->vocab, 3);
    RunOptions o;
    o.return_logits = true;
    const ModelRun r = model->run_ids(rt, ids, o);
    const decoder::ReferenceRun ref = decoder::reference_forward(*parts.config, *parts.weights, ids);
    double attention = 0, logits = 0;
    for (std::size_t i = 0; i < ref.attentions.size(); ++i)
      attention = std::max(attention, std::abs(r.attentions.data[i] - ref.attentions[i]));
    for (std::size_t i = 0; i < ref.logits.size(); ++i)
      logits = std::max(logits, std::abs(r.logits.data[i] - ref.logits[i]));
    EXPECT_LE(attention, 1e-5);
    EXPECT_LE(logits, 1e-4);
  }
}

TEST(Decoder, SlidingWindowsHideKeysTooFarBack) {
  Runtime rt(1);
  const Case c = cases()[2];  // Mistral, window 3
  const ModelRun r = Model::load(c.files)->run_ids(rt, some_ids(9, 40, 5));
  const std::int64_t n = 9;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const float p = r.attentions.data[i * n + j];  // layer 0, head 0
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
    auto g = model->generate(rt, some_ids(5, 40, 7), 42);
    SamplingOptions greedy;
    greedy.temperature = 0;
    for (int t = 0; t < 6; ++t) g->step(rt, greedy);
    const std::vector<std::int32_t> ids = g->ids();
    ASSERT_EQ(ids.size(), 11u);
    RunOptions o;
    o.return_logits = true;
    const ModelRun r = model->run_ids(rt, ids, o);
    const Tensor maps = g->attentions();
    ASSERT_EQ(maps.shape, r.attentions.shape);
    double diff = 0;
    for (std::size_t i = 0; i < maps.data.size(); ++i)
      diff = std::max(diff, double(std::abs(maps.data[i] - r.attentions.data[i])));
    EXPECT_LE(diff, 1e-5);
    // Greedy: each generated token is the run's most likely next token at the position before it.
    const std::int64_t vocab = r.logits.shape[1];
    for (std::size_t i = 5; i < ids.size(); ++i) {
      const float* row = r.logits.data.data() + (i - 1) * vocab;
      EXPECT_EQ(ids[i], std::max_element(row, row + vocab) - row) << "token " << i;
    }
  }
}

TEST(Decoder, SamplingIsSeededAndHonoursTopKAndTopP) {
  Runtime rt(1);
  const auto model = Model::load(cases()[0].files);
  SamplingOptions o;
  o.temperature = 1.5f;
  const auto text = [&](std::uint64_t seed, const SamplingOptions& s) {
    auto g = model->generate(rt, {1, 2, 3}, seed);
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
  expect_error([&] { Model::load(with("\"rope_type\": \"llama3\"", "\"rope_type\": \"longrope\"")); },
               "rope_scaling type \"longrope\" is not supported");
  expect_error([&] { Model::load(with("\"head_dim\": 8", "\"head_dim\": 8, \"partial_rotary_factor\": 0.5")); },
               "partial_rotary_factor is not supported");
  expect_error([&] { Model::load(with("\"hidden_size\": 32", "\"hidden_size\": 1e12")); },
               "hidden_size must be a whole number from 1 to 65536");
  expect_error([&] { Model::load(with("\"head_dim\": 8", "\"head_dim\": 16")); },
               "has shape [32, 32] but the config needs [64, 32]");
  expect_error([&] { Model::load(with("LlamaForCausalLM", "FalconForCausalLM")); },
               "architecture \"FalconForCausalLM\" is not supported");
  const auto model = Model::load(base.files);
  auto g = model->generate(rt, {1, 2}, 0);
  SamplingOptions o;
  o.temperature = NAN;
  expect_error([&] { g->step(rt, o); }, "temperature must be a finite number");
  o.temperature = 1;
  o.top_p = 1.5f;
  expect_error([&] { g->step(rt, o); }, "topP must be in (0, 1]");
  expect_error([&] { model->generate(rt, std::vector<std::int32_t>(65, 1), 0); }, "beyond the model's 64");
  expect_error([&] { model->generate(rt, {1, 99}, 0); }, "id 99 at position 1 is outside the vocabulary [0, 40)");
  o.top_p = 1;
  for (int i = 0; i < 62; ++i) g->step(rt, o);
  expect_error([&] { g->step(rt, o); }, "the sequence would have 65 tokens, beyond the model's 64");
}

}  // namespace
}  // namespace attnscope
