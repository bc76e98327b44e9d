// Small decoder checkpoints in the Hub's names and layout, built in memory, for the native and
// wasm decoder tests: one per architecture row, each with what makes it itself.
#pragma once

#include <algorithm>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/model.hpp"

namespace attnscope::testing::decoders {

inline Tensor random_tensor(Shape shape, std::uint32_t seed, float scale) {
  Tensor t(std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (auto& x : t.data) x = dist(rng);
  return t;
}

// float32 bits cut to 16: bfloat16's top half, or float16 (exponent rebiased, mantissa truncated, tiny values to
// zero). The tests compare against the values the model widens back, so the cut need not round.
inline std::uint16_t to_16(float f, bool bf16) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if (bf16) return static_cast<std::uint16_t>(x >> 16);
  const int exponent = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  const std::uint32_t sign = (x >> 16) & 0x8000;
  if (exponent <= 0) return static_cast<std::uint16_t>(sign);
  return static_cast<std::uint16_t>(sign | (std::min(exponent, 30) << 10) | ((x & 0x7fffff) >> 13));
}

// A safetensors file of the tensors, in the given order, stored as dtype F32, BF16 or F16.
inline std::string safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                               const std::string& dtype = "F32") {
  std::ostringstream header;
  std::string data;
  header << "{";
  const std::size_t size = dtype == "F32" ? 4 : 2;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    header << (i ? "," : "") << "\"" << name << "\":{\"dtype\":\"" << dtype << "\",\"shape\":[";
    for (std::size_t d = 0; d < t.shape.size(); ++d) header << (d ? "," : "") << t.shape[d];
    header << "],\"data_offsets\":[" << data.size() << "," << data.size() + size * t.data.size() << "]}";
    if (size == 4) {
      data.append(reinterpret_cast<const char*>(t.data.data()), 4 * t.data.size());
      continue;
    }
    for (float v : t.data) {
      const std::uint16_t h = to_16(v, dtype == "BF16");
      data.push_back(static_cast<char>(h & 0xff));
      data.push_back(static_cast<char>(h >> 8));
    }
  }
  header << "}";
  const std::string h = header.str();
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return file + h + data;
}

struct Sizes {
  std::int64_t vocab = 40, d = 32, heads = 4, kv = 2, hd = 8, ffn = 48, layers = 2;
};

// A random checkpoint in the Llama family's names: [out, in] linears, norms near 1 (near 0 for Gemma).
inline std::vector<std::pair<std::string, Tensor>> llama_family(const Sizes& s, bool qkv_bias, bool o_bias,
                                                                bool qk_norm, bool sandwich, bool gemma, bool lm_head) {
  std::uint32_t seed = 1;
  const auto random = [&](attnscope::Shape shape, float scale) { return random_tensor(shape, seed++, scale); };
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

// The same tensors as Phi-3 stores them: q, k, v stacked by rows in qkv_proj, gate and up in gate_up_proj.
inline std::vector<std::pair<std::string, Tensor>> phi3(std::vector<std::pair<std::string, Tensor>> llama) {
  const auto stack = [&](const std::vector<std::string>& names, const std::string& into) {
    std::vector<float> data;
    std::int64_t rows = 0, cols = 0;
    std::size_t at = 0;
    for (const std::string& name : names) {
      const auto it = std::find_if(llama.begin(), llama.end(), [&](const auto& t) { return t.first == name; });
      data.insert(data.end(), it->second.data.begin(), it->second.data.end());
      rows += it->second.shape[0], cols = it->second.shape[1];
      at = static_cast<std::size_t>(it - llama.begin());
      llama.erase(it);
    }
    Tensor t({rows, cols});
    t.data.assign(data.begin(), data.end());
    llama.insert(llama.begin() + static_cast<std::ptrdiff_t>(at), {into, t});
  };
  for (std::int64_t l = 0;; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    if (std::none_of(llama.begin(), llama.end(), [&](const auto& t) { return t.first.rfind(p, 0) == 0; })) break;
    stack({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"},
          p + "self_attn.qkv_proj.weight");
    stack({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"}, p + "mlp.gate_up_proj.weight");
  }
  return llama;
}

inline std::string dims(const Sizes& s) {
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

inline std::vector<Case> cases() {
  Sizes s;
  std::vector<Case> c;
  const auto add = [&](const char* name, const std::string& arch, const std::string& extra,
                       std::vector<std::pair<std::string, Tensor>> tensors, const std::string& dtype = "F32") {
    const std::string config = "{\"architectures\": [\"" + arch + "\"], " + dims(s) + extra + "}";
    c.push_back({name, config, {{"config.json", config}, {"model.safetensors", safetensors(tensors, dtype)}}});
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
  // Phi-4-mini's RoPE: a quarter of each head unrotated, longrope's short factors and attention factor (64 / 32
  // positions: √(1 + ln 2 / ln 32)).
  add("phi3: stacked q, k, v and gate, up; partial rotary; longrope", "Phi3ForCausalLM",
      ", \"partial_rotary_factor\": 0.75, \"original_max_position_embeddings\": 32, \"rope_scaling\": {\"type\": "
      "\"longrope\", \"short_factor\": [1.0, 1.5, 3.0], \"long_factor\": [2.0, 4.0, 8.0]}",
      phi3(llama_family(s, false, false, false, false, false, true)));
  // 16-bit checkpoints: matrices stay 16-bit in the packed panels, widened inside the multiply.
  add("qwen3 in bf16", "Qwen3ForCausalLM", ", \"tie_word_embeddings\": true",
      llama_family(s, false, false, true, false, false, false), "BF16");
  add("llama in f16, untied", "LlamaForCausalLM", "", llama_family(s, false, false, false, false, false, true), "F16");
  return c;
}

inline std::vector<std::int32_t> some_ids(std::int64_t n, std::int64_t vocab, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (auto& id : ids) id = static_cast<std::int32_t>(rng() % vocab);
  return ids;
}

}  // namespace attnscope::testing::decoders
