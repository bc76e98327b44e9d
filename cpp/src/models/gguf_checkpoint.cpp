#include "models/gguf_checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "attnscope/error.hpp"
#include "io/gguf.hpp"
#include "io/json.hpp"
#include "io/text.hpp"
#include "kernels/quantized.hpp"
#include "tokenizers/gguf_vocab.hpp"

namespace attnscope {

namespace {

enum Flags : unsigned {
  kInterleaved = 1,  // the converter interleaved q's and k's RoPE halves (llama.cpp's "normal" RoPE)
  kGemma = 2,        // norms stored as 1 + w; queries scaled as llama.cpp scales Gemma's
  kPhi3 = 4,         // q, k, v in one tensor, gate and up in another; partial rotary; longrope factors as tensors
};

// general.architecture → the transformers class the converter read. Mistral's files say "llama": llama.cpp runs
// them as Llama, without the sliding window, and so does AttnScope.
struct Row {
  const char* gguf;
  const char* architecture;
  const char* model_type;
  unsigned flags;
};
// clang-format off
constexpr Row kRows[] = {
  {"llama",  "LlamaForCausalLM",  "llama",       kInterleaved},
  {"qwen2",  "Qwen2ForCausalLM",  "qwen2",       0},
  {"qwen3",  "Qwen3ForCausalLM",  "qwen3",       0},
  {"gemma2", "Gemma2ForCausalLM", "gemma2",      kGemma},
  {"gemma3", "Gemma3ForCausalLM", "gemma3_text", kGemma},
  {"phi3",   "Phi3ForCausalLM",   "phi3",        kPhi3},
};
// clang-format on

// What a tensor is to the reading: as stored, a norm (Gemma's 1 + w), or RoPE'd rows (q's or k's heads).
enum class Role { plain, norm, query, key };
// Which rows a name applies to.
enum Only : unsigned { kAll = 0, kGemmaOnly = 1, kNotGemma = 2, kPhi3Only = 4, kNotPhi3 = 8 };

// A block's tensors: llama.cpp's name after "blk.N.", transformers' after "model.layers.N.".
struct Name {
  const char* gguf;
  const char* hf;
  Role role;
  unsigned only;
};
// clang-format off
constexpr Name kLayerNames[] = {
  {"attn_norm.weight",           "input_layernorm.weight",            Role::norm,  kAll},
  {"attn_q.weight",              "self_attn.q_proj.weight",           Role::query, kNotPhi3},
  {"attn_q.bias",                "self_attn.q_proj.bias",             Role::query, kNotPhi3},
  {"attn_k.weight",              "self_attn.k_proj.weight",           Role::key,   kNotPhi3},
  {"attn_k.bias",                "self_attn.k_proj.bias",             Role::key,   kNotPhi3},
  {"attn_v.weight",              "self_attn.v_proj.weight",           Role::plain, kNotPhi3},
  {"attn_v.bias",                "self_attn.v_proj.bias",             Role::plain, kNotPhi3},
  {"attn_qkv.weight",            "self_attn.qkv_proj.weight",         Role::plain, kPhi3Only},
  {"attn_output.weight",         "self_attn.o_proj.weight",           Role::plain, kAll},
  {"attn_output.bias",           "self_attn.o_proj.bias",             Role::plain, kAll},
  {"attn_q_norm.weight",         "self_attn.q_norm.weight",           Role::norm,  kAll},
  {"attn_k_norm.weight",         "self_attn.k_norm.weight",           Role::norm,  kAll},
  {"post_attention_norm.weight", "post_attention_layernorm.weight",   Role::norm,  kGemmaOnly},
  {"ffn_norm.weight",            "pre_feedforward_layernorm.weight",  Role::norm,  kGemmaOnly},
  {"ffn_norm.weight",            "post_attention_layernorm.weight",   Role::norm,  kNotGemma},
  {"post_ffw_norm.weight",       "post_feedforward_layernorm.weight", Role::norm,  kGemmaOnly},
  {"ffn_gate.weight",            "mlp.gate_proj.weight",              Role::plain, kAll},
  {"ffn_up.weight",              "mlp.up_proj.weight",                Role::plain, kNotPhi3},
  {"ffn_up.weight",              "mlp.gate_up_proj.weight",           Role::plain, kPhi3Only},  // gate rows, then up
  {"ffn_down.weight",            "mlp.down_proj.weight",              Role::plain, kAll},
};
constexpr Name kModelNames[] = {
  {"token_embd.weight",  "model.embed_tokens.weight", Role::plain, kAll},
  {"output_norm.weight", "model.norm.weight",         Role::norm,  kAll},
  {"output.weight",      "lm_head.weight",            Role::plain, kAll},
};
// clang-format on
// Tensors the metadata's reading takes in (RoPE's frequency factors), not weights.
constexpr const char* kRopeTensors[] = {"rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"};

bool applies(const Name& n, unsigned flags) {
  const bool gemma = flags & kGemma, phi3 = flags & kPhi3;
  return !((n.only & kGemmaOnly && !gemma) || (n.only & kNotGemma && gemma) || (n.only & kPhi3Only && !phi3) ||
           (n.only & kNotPhi3 && phi3));
}

// config.json's text, a field at a time.
class ConfigText {
 public:
  void number(const char* key, double v) { append(text_, {comma(), "\"", key, "\":", Num(v)}); }
  void string(const char* key, std::string_view v) {
    append(text_, {comma(), "\"", key, "\":"});
    append_json_string(text_, v);
  }
  void boolean(const char* key, bool v) { append(text_, {comma(), "\"", key, "\":", v ? "true" : "false"}); }
  void numbers(const char* key, const std::vector<double>& v) {
    append(text_, {comma(), "\"", key, "\":["});
    for (std::size_t i = 0; i < v.size(); ++i) append(text_, {i ? "," : "", Num(v[i])});
    text_ += "]";
  }
  void raw(const char* key, std::string_view json) { append(text_, {comma(), "\"", key, "\":", json}); }
  std::string done() const { return text_ + "}"; }

 private:
  const char* comma() const { return text_.size() > 1 ? "," : ""; }
  std::string text_ = "{";
};

// The file's metadata, read as the converter wrote it: "<arch>.<key>" for the model's own keys.
class Metadata {
 public:
  Metadata(const Gguf& g, std::string arch) : g_(g), arch_(std::move(arch)) {}
  // "general." and "tokenizer." keys as they are; the others under the architecture's name.
  std::string key_of(const std::string& key) const {
    return key.rfind("general.", 0) == 0 || key.rfind("tokenizer.", 0) == 0 ? key : arch_ + "." + key;
  }
  const GgufValue* find(const std::string& key) const { return g_.find(key_of(key)); }
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // A number: required when `fallback` is NaN.
  double number(const std::string& key, double min, double max, double fallback = NAN) const {
    const GgufValue* v = find(key);
    const std::string name = key_of(key);
    if (!v) {
      if (std::isnan(fallback)) fail({g_.what(), ": metadata ", quote(name), " is missing"});
      return fallback;
    }
    if (v->type == GgufValue::Type::string || v->type == GgufValue::Type::array)
      fail({g_.what(), ": metadata ", quote(name), " must be a number (per-layer values are not supported)"});
    if (!(v->number >= min && v->number <= max))
      fail({g_.what(), ": metadata ", quote(name), " is ", Num(double(v->number)), ", outside ", Num(double(min)),
            " to ", Num(double(max))});
    return v->number;
  }

 private:
  const Gguf& g_;
  std::string arch_;
};

// The string at `key`, or null when absent or not a string.
const std::string* first_string(const Gguf& g, const char* key) {
  const GgufValue* v = g.find(key);
  return v && v->type == GgufValue::Type::string ? &v->text : nullptr;
}

// A small float32 tensor's values (RoPE's factors).
std::vector<double> values_of(const Gguf& g, const std::string& name) {
  const GgufTensor& t = g.tensors().at(name);
  if (t.type != kGgmlF32 || t.dims.size() != 1)
    fail({g.what(), ": tensor ", quote(name), " must be a float32 vector, as llama.cpp's converter writes it"});
  std::vector<float> f(static_cast<std::size_t>(t.dims[0]));
  g.file()->read(t.offset, t.bytes, reinterpret_cast<std::uint8_t*>(f.data()));
  std::vector<double> out;
  for (float x : f) {
    if (!(std::isfinite(x) && x > 0)) fail({g.what(), ": tensor ", quote(name), " must hold positive numbers"});
    out.push_back(x);
  }
  return out;
}

// The first file of a split GGUF ("split.no" 0), or the one file; the others' tensors join its.
std::string config_of(const Gguf& g, const Row& row, const std::map<std::string, const Gguf*>& where) {
  const Metadata m(g, row.gguf);
  const auto has = [&](const std::string& tensor) { return where.count(tensor) != 0; };
  ConfigText c;
  c.raw("architectures", std::string("[\"") + row.architecture + "\"]");
  c.string("model_type", row.model_type);
  if (const std::string* name = first_string(g, "general.name")) c.string("_name_or_path", *name);
  if (!where.count("token_embd.weight")) fail({g.what(), ": tensor \"token_embd.weight\" is missing"});
  const GgufTensor& embedding = where.at("token_embd.weight")->tensors().at("token_embd.weight");
  if (embedding.dims.size() != 2) fail({g.what(), ": tensor \"token_embd.weight\" must be a matrix"});
  const double d = m.number("embedding_length", 1, 65536), layers = m.number("block_count", 1, 512);
  const double heads = m.number("attention.head_count", 1, 1024);
  const double kv_heads = m.number("attention.head_count_kv", 1, 1024, heads);
  const double head_dim = m.number("attention.key_length", 2, 4096, std::floor(d / heads));
  if (m.number("attention.value_length", 2, 4096, head_dim) != head_dim)
    fail({g.what(), ": attention.value_length differs from attention.key_length, which these models never do"});
  c.number("vocab_size", static_cast<double>(embedding.dims[1]));
  c.number("hidden_size", d);
  c.number("num_hidden_layers", layers);
  c.number("intermediate_size", m.number("feed_forward_length", 1, 1 << 20));
  c.number("num_attention_heads", heads);
  c.number("num_key_value_heads", kv_heads);
  c.number("head_dim", head_dim);
  c.number("max_position_embeddings", m.number("context_length", 1, 1e8));
  c.number("rms_norm_eps", m.number("attention.layer_norm_rms_epsilon", 0, 1));
  c.number("rope_theta", m.number("rope.freq_base", 1e-6, 1e12, 1e4));
  c.boolean("tie_word_embeddings", !has("output.weight"));
  c.boolean("attention_bias", has("blk.0.attn_q.bias"));  // Qwen 2 has its q, k, v biases whatever it says
  if (m.has("tokenizer.ggml.bos_token_id")) c.number("bos_token_id", m.number("tokenizer.ggml.bos_token_id", 0, 1e7));
  // A text ends at EOS, and an instruction model's turn at its end-of-turn (Llama 3's <|eot_id|>) or end-of-message
  // token, as llama.cpp ends generation at each.
  std::vector<double> ends;
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (m.has(key)) {
      const double id = m.number(key, 0, 1e7);
      if (std::find(ends.begin(), ends.end(), id) == ends.end()) ends.push_back(id);
    }
  if (!ends.empty()) c.numbers("eos_token_id", ends);

  // RoPE's scaling: linear as a factor; Llama 3's as the per-frequency divisors the converter computed; longrope's
  // factors as tensors.
  const GgufValue* type = m.find("rope.scaling.type");
  const std::string scaling = type && type->type == GgufValue::Type::string ? type->text : "none";
  if (has("rope_freqs.weight")) {
    const std::vector<double> f = values_of(*where.at("rope_freqs.weight"), "rope_freqs.weight");
    ConfigText r;
    r.string("rope_type", "frequency_factors");
    r.numbers("factors", f);
    c.raw("rope_scaling", r.done());
  } else if (scaling == "linear") {
    ConfigText r;
    r.string("rope_type", "linear");
    r.number("factor", m.number("rope.scaling.factor", 1e-6, 1e6));
    c.raw("rope_scaling", r.done());
  } else if (scaling != "none" && !(row.flags & kPhi3 && scaling == "longrope")) {
    fail({g.what(), ": RoPE scaling ", quote(scaling), " is not supported (linear, Llama 3's, longrope)"});
  }

  if (row.flags & kGemma) {
    // llama.cpp scales Gemma's queries by 1/√head_dim, and its 27B models' by 1/√(d / heads) (46 and 62 layers).
    const bool big =
        (row.gguf == std::string("gemma2") && layers == 46) || (row.gguf == std::string("gemma3") && layers == 62);
    c.number("query_pre_attn_scalar", big ? std::floor(d / heads) : head_dim);
    c.number("sliding_window", m.number("attention.sliding_window", 1, 1e8, 4096));
    if (m.has("final_logit_softcapping"))
      c.number("final_logit_softcapping", m.number("final_logit_softcapping", 0, 1e9));
    if (row.gguf == std::string("gemma2"))
      c.number("attn_logit_softcapping", m.number("attn_logit_softcapping", 0, 1e9, 50));
    if (row.gguf == std::string("gemma3")) {
      c.number("rope_local_base_freq", m.number("rope.freq_base_swa", 1e-6, 1e12, 1e4));
      const GgufValue* pattern = m.find("attention.sliding_window_pattern");
      if (pattern && pattern->type == GgufValue::Type::array) {
        if (pattern->numbers.size() != static_cast<std::size_t>(layers))
          fail({g.what(), ": attention.sliding_window_pattern must say for each of the ",
                Num(double(static_cast<int>(layers))), " layers whether it slides"});
        std::string types = "[";
        for (std::size_t i = 0; i < pattern->numbers.size(); ++i)
          types += std::string(i ? "," : "") + (pattern->numbers[i] ? "\"sliding_attention\"" : "\"full_attention\"");
        c.raw("layer_types", types + "]");
      } else if (pattern) {
        c.number("sliding_window_pattern", m.number("attention.sliding_window_pattern", 1, 1 << 20));
      }
    }
  }
  if (row.flags & kPhi3) {
    // The converter writes int(partial_rotary_factor × d) / heads rotary dims; transformers takes
    // int(head_dim × factor), so the factor is the least one that gives those dims back.
    const double dims = m.number("rope.dimension_count", 2, head_dim, head_dim);
    double factor = dims / head_dim;
    while (static_cast<std::int64_t>(head_dim * factor) < static_cast<std::int64_t>(dims))
      factor = std::nextafter(factor, 2.0);
    c.number("partial_rotary_factor", factor);
    const double window = m.number("attention.sliding_window", 0, 1e8, 0);
    if (window > 0) c.number("sliding_window", window);
    if (has("rope_factors_long.weight") != has("rope_factors_short.weight"))
      fail({g.what(), ": longrope needs both rope_factors_long.weight and rope_factors_short.weight"});
    if (has("rope_factors_long.weight")) {
      ConfigText r;
      r.string("rope_type", "longrope");
      r.numbers("long_factor", values_of(*where.at("rope_factors_long.weight"), "rope_factors_long.weight"));
      r.numbers("short_factor", values_of(*where.at("rope_factors_short.weight"), "rope_factors_short.weight"));
      if (m.has("rope.scaling.attn_factor"))
        r.number("attention_factor", m.number("rope.scaling.attn_factor", 1e-6, 1e6));
      c.raw("rope_scaling", r.done());
      c.number("original_max_position_embeddings", m.number("rope.scaling.original_context_length", 1, 1e8));
    }
  }
  return c.done();
}

}  // namespace

bool is_gguf_name(const std::string& name) { return ends_with(name, ".gguf"); }

// llama.h's llama_ftype names of general.file_type: what a file is called by (…-Q4_K_M.gguf).
std::string file_type_name(const Gguf& g) {
  static const char* const names[] = {"F32",    "F16",    "Q4_0",   "Q4_1",   "",       "",       "",
                                      "Q8_0",   "Q5_0",   "Q5_1",   "Q2_K",   "Q3_K_S", "Q3_K_M", "Q3_K_L",
                                      "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K"};
  const GgufValue* v = g.find("general.file_type");
  if (!v || v->type == GgufValue::Type::string || v->type == GgufValue::Type::array) return "";
  const double t = v->number;
  if (t >= 0 && t < 19 && t == std::floor(t)) return names[static_cast<int>(t)];
  return t == 32 ? "BF16" : "";
}

namespace {

// A GGUF's files read (their headers: tensors stay where they are), in their split order, with the architecture's row.
struct Parts {
  std::vector<std::unique_ptr<Gguf>> files;
  const Row* row = nullptr;
};

Parts read_parts(const std::vector<std::pair<std::string, std::shared_ptr<const FileBytes>>>& files) {
  Parts out;
  std::vector<std::unique_ptr<Gguf>>& parts = out.files;
  for (const auto& [name, bytes] : files) parts.push_back(std::make_unique<Gguf>(bytes, name));
  // A split file's parts say which they are and how many there are; the first holds the model's metadata.
  const auto split = [](const Gguf& g, const char* key, double fallback) {
    const GgufValue* v = g.find(key);
    return v && v->type != GgufValue::Type::string && v->type != GgufValue::Type::array ? v->number : fallback;
  };
  std::sort(parts.begin(), parts.end(),
            [&](const auto& a, const auto& b) { return split(*a, "split.no", 0) < split(*b, "split.no", 0); });
  const Gguf& first = *parts.front();
  const double count = split(first, "split.count", 1);
  if (count != static_cast<double>(parts.size()) || split(first, "split.no", 0) != 0)
    fail({first.what(), ": a split GGUF of ", Num(double(static_cast<long long>(count))), " files, given ",
          Num(double(parts.size())), (parts.size() == 1 ? " file" : " files"), " (every part is needed, once)"});
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (split(*parts[i], "split.no", 0) != static_cast<double>(i))
      fail({parts[i]->what(), ": part ", Num(double(i + 1)), " of the split GGUF is missing or given twice"});

  const GgufValue* arch = first.find("general.architecture");
  if (!arch || arch->type != GgufValue::Type::string)
    fail({first.what(), ": metadata \"general.architecture\" is missing"});
  for (const Row& r : kRows)
    if (arch->text == r.gguf) out.row = &r;
  if (!out.row) {
    std::string known;
    for (const Row& r : kRows) known += std::string(known.empty() ? "" : ", ") + r.gguf;
    fail({first.what(), ": GGUF architecture ", quote(arch->text), " is not supported (supported: ", known, ")"});
  }
  return out;
}

bool is_rope_tensor(const std::string& name) {
  return std::find_if(std::begin(kRopeTensors), std::end(kRopeTensors), [&](const char* r) { return name == r; }) !=
         std::end(kRopeTensors);
}

// How the GEMM's panels hold a tensor of the file's type; a type AttnScope does not read is an Error naming it.
kernels::Precision precision_of(const Gguf& g, const std::string& name, const GgufTensor& t) {
  const char* type = ggml_type(t.type)->name;
  const kernels::Precision p = t.type == kGgmlF16    ? kernels::Precision::f16
                               : t.type == kGgmlBF16 ? kernels::Precision::bf16
                                                     : kernels::quantized_named(type);
  if (p == kernels::Precision::f32 && t.type != kGgmlF32)
    fail({g.what(), ": tensor ", quote(name), " is ", type,
          "; AttnScope reads GGUF tensors in F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K"});
  return p;
}

// The heap one tensor takes once read: a vector as float32; a matrix [n, k] (dims {k, n}) as the GEMM's panels of 8
// columns in its own type, one set of panels per stretch of rows in `splits` (Phi-3's q, k, v), each padded to 8.
std::uint64_t stored_bytes(const GgufTensor& t, kernels::Precision p, std::initializer_list<std::uint64_t> splits) {
  std::uint64_t count = 1;
  for (std::uint64_t d : t.dims) count *= d;
  if (t.dims.size() == 1) return count * 4;
  const std::uint64_t k = t.dims[0];
  const std::uint64_t panel = static_cast<std::uint64_t>(kernels::panel_bytes(static_cast<std::int64_t>(k), p));
  std::uint64_t panels = 0;
  constexpr auto kColumns = static_cast<std::uint64_t>(kernels::kPanelColumns);
  for (std::uint64_t rows : splits) panels += (rows + kColumns - 1) / kColumns;
  return panels * panel;
}

}  // namespace

GgufCheckpoint read_gguf_checkpoint(
    const std::vector<std::pair<std::string, std::shared_ptr<const FileBytes>>>& files) {
  const Parts read = read_parts(files);
  const std::vector<std::unique_ptr<Gguf>>& parts = read.files;
  const Gguf& first = *parts.front();
  const Row* row = read.row;

  std::map<std::string, const Gguf*> where;  // every tensor's file
  for (const auto& g : parts)
    for (const auto& [name, t] : g->tensors())
      if (!where.emplace(name, g.get()).second) fail({g->what(), ": tensor ", quote(name), " appears in two parts"});

  GgufCheckpoint out;
  out.config = config_of(first, *row, where);
  out.tokenizer = tokenizers::tokenizer_files(first);
  out.file_type = file_type_name(first);
  const Metadata m(first, row->gguf);
  const std::int64_t layers = static_cast<std::int64_t>(m.number("block_count", 1, 512));
  const std::int64_t heads = static_cast<std::int64_t>(m.number("attention.head_count", 1, 1024));
  const std::int64_t kv_heads = static_cast<std::int64_t>(m.number("attention.head_count_kv", 1, 1024, double(heads)));

  std::map<const Gguf*, std::map<std::string, SafeTensorInfo>> tables;
  std::int64_t blocks = 0;  // the highest block a tensor is in, + 1
  for (const auto& entry : where) {
    const std::string& name = entry.first;
    const Gguf* g = entry.second;
    if (is_rope_tensor(name)) continue;
    // blk.N.<name> → model.layers.N.<name>, by the tables.
    const Name* found = nullptr;
    std::string hf;
    if (name.rfind("blk.", 0) == 0) {
      const std::size_t dot = name.find('.', 4);
      const std::string number = name.substr(4, dot == std::string::npos ? std::string::npos : dot - 4);
      const bool digits = !number.empty() && number.size() < 5 &&
                          std::all_of(number.begin(), number.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
      if (!digits || dot == std::string::npos)
        fail({g->what(), ": tensor ", quote(name), " is not a block's tensor as llama.cpp names them"});
      if (std::stoll(number) >= layers)
        fail({g->what(), ": tensor ", quote(name), " is in block ", number, ", but block_count is ",
              Num(double(layers))});
      blocks = std::max<std::int64_t>(blocks, std::stoll(number) + 1);
      for (const Name& n : kLayerNames)
        if (applies(n, row->flags) && name.compare(dot + 1, std::string::npos, n.gguf) == 0) found = &n;
      if (found) hf = "model.layers." + number + "." + found->hf;
    } else {
      for (const Name& n : kModelNames)
        if (name == n.gguf) found = &n;
      if (found) hf = found->hf;
    }
    if (!found) fail({g->what(), ": tensor ", quote(name), " is not one a ", row->gguf, " model has"});
    const GgufTensor& t = g->tensors().at(name);
    const GgmlType& type = *ggml_type(t.type);
    precision_of(*g, name, t);
    SafeTensorInfo info;
    info.dtype = type.name;
    for (auto d = t.dims.rbegin(); d != t.dims.rend(); ++d) info.shape.push_back(static_cast<std::int64_t>(*d));
    info.begin = t.offset;
    info.end = t.offset + t.bytes;
    if (found->role == Role::norm && (row->flags & kGemma)) info.add = -1.0f;
    if ((found->role == Role::query || found->role == Role::key) && (row->flags & kInterleaved)) {
      info.interleaved = found->role == Role::query ? heads : kv_heads;
      if (info.shape[0] % (2 * info.interleaved))
        fail({g->what(), ": tensor ", quote(name), " has ", Num(double(info.shape[0])),
              " rows, not whole heads of even width for ", Num(double(info.interleaved)), " heads"});
    }
    tables[g].emplace(hf, std::move(info));
  }
  if (blocks != layers)
    fail({first.what(), ": block_count is ", Num(double(layers)), ", but the tensors are of ", Num(double(blocks)),
          (blocks == 1 ? " block" : " blocks")});
  for (const auto& g : parts)
    out.tensors.emplace_back(g->what(),
                             std::make_unique<SafeTensors>(g->file(), g->what(), std::move(tables[g.get()])));
  return out;
}

std::uint64_t gguf_weight_bytes(const std::vector<std::pair<std::string, std::shared_ptr<const FileBytes>>>& files) {
  const Parts read = read_parts(files);
  const Metadata m(*read.files.front(), read.row->gguf);
  const bool phi3 = read.row->flags & kPhi3;
  const auto heads = static_cast<std::uint64_t>(m.number("attention.head_count", 1, 1024));
  const auto kv_heads = static_cast<std::uint64_t>(m.number("attention.head_count_kv", 1, 1024, double(heads)));
  std::uint64_t bytes = 0;
  for (const auto& g : read.files)
    for (const auto& [name, t] : g->tensors()) {
      if (is_rope_tensor(name)) continue;
      const kernels::Precision p = precision_of(*g, name, t);
      const std::uint64_t n = t.dims.size() > 1 ? t.dims[1] : 0;
      if (phi3 && ends_with(name, ".attn_qkv.weight")) {
        const std::uint64_t head_dim = n / (heads + 2 * kv_heads);
        bytes += stored_bytes(t, p, {heads * head_dim, kv_heads * head_dim, kv_heads * head_dim});
      } else if (phi3 && ends_with(name, ".ffn_up.weight")) {
        bytes += stored_bytes(t, p, {n / 2, n / 2});
      } else {
        std::uint64_t rows = 1;
        for (std::size_t d = 1; d < t.dims.size(); ++d) rows *= t.dims[d];
        bytes += stored_bytes(t, p, {rows});
      }
    }
  return bytes;
}

}  // namespace attnscope
