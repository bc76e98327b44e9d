// The architectures: one row each (checkpoints.cpp reads their tensors). A row says
// how its config.json reads into transformer::Config; defaults are those of the transformers config class, used when a
// field is absent, as transformers uses them. A field this engine does not implement (a rope_scaling type, partial
// rotary where the class does not apply it) is an Error naming it, never a silently different model.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "models/config.hpp"
#include "models/spec.hpp"

namespace attnscope::transformer {

namespace {

enum class Bias { none, qkv, attention_bias, llama };          // Qwen 2: q, k, v always; attention_bias: q, k, v, o
enum class Windows { none, all, qwen, every_other, pattern };  // which layers attend through a sliding window
// What reads the last stack: an LM head, nothing, a pooler, a classifier on [CLS] (with DeiT's distillation head
// too: teacher), or CLIP's projection.
enum class Output { lm, none, pooler, classifier, teacher, projection };
// What else a row's name decides.
enum Trait : unsigned {
  kGemma = 1,    // (1 + w) norms, sandwich norms, √d embedding scale, query_pre_attn_scalar, tied by default
  kQkNorm = 2,   // Qwen 3, Gemma 3
  kPartial = 4,  // transformers applies partial_rotary_factor (Phi-3); the others' classes fail on it or ignore it
  kSoftcap = 8,  // attention scores soft-capped (Gemma 2; Gemma 3 never caps them)
  kDistillation = 16,  // DeiT: a distillation token after [CLS]
  kRegisters = 32,     // DINOv2 with registers: register tokens, and the antialiased position interpolation
};

struct Row {
  const char* architecture;
  const char* model_type;  // config.json's model_type, when it gives one
  Family family;
  Bias bias;
  Windows windows;
  unsigned traits;
  Output output;
  const char* nested;  // the sub-config that holds the model's settings ("" for config.json itself)
  // The config class's defaults.
  std::int64_t vocab, hidden, ffn, layers, heads, kv_heads, head_dim, max_positions;
  double theta, eps;
  const char* activation;

  bool has(Trait t) const { return traits & t; }
};

constexpr unsigned kGemma2 = kGemma | kSoftcap, kGemma3 = kGemma | kQkNorm;

// clang-format off
const Row kRows[] = {
  // architecture                    model_type     family         bias                  windows               traits    output           nested          vocab   hidden ffn    layers heads kv head_dim max_pos theta eps   activation
  {"LlamaForCausalLM",               "llama",       Family::llama, Bias::llama,          Windows::none,        0,        Output::lm,      "",             32000,  4096,  11008, 32,    32,   0, 0,       2048,   1e4,  1e-6, "silu"},
  {"MistralForCausalLM",             "mistral",     Family::llama, Bias::none,           Windows::all,         0,        Output::lm,      "",             32000,  4096,  14336, 32,    32,   8, 0,       131072, 1e4,  1e-6, "silu"},
  {"Qwen2ForCausalLM",               "qwen2",       Family::llama, Bias::qkv,            Windows::qwen,        0,        Output::lm,      "",             151936, 4096,  22016, 32,    32,   0, 0,       32768,  1e4,  1e-6, "silu"},
  {"Qwen3ForCausalLM",               "qwen3",       Family::llama, Bias::attention_bias, Windows::qwen,        kQkNorm,  Output::lm,      "",             151936, 4096,  22016, 32,    32,   0, 128,     32768,  1e4,  1e-6, "silu"},
  {"Gemma2ForCausalLM",              "gemma2",      Family::llama, Bias::attention_bias, Windows::every_other, kGemma2,  Output::lm,      "",             256000, 2304,  9216,  26,    8,    4, 256,     8192,   1e4,  1e-6, "gelu_pytorch_tanh"},
  {"Gemma3ForCausalLM",              "gemma3_text", Family::llama, Bias::attention_bias, Windows::pattern,     kGemma3,  Output::lm,      "",             262208, 2304,  9216,  26,    8,    4, 256,     131072, 1e6,  1e-6, "gelu_pytorch_tanh"},
  {"Gemma3ForConditionalGeneration", "gemma3",      Family::llama, Bias::attention_bias, Windows::pattern,     kGemma3,  Output::lm,      "text_config",  262208, 2304,  9216,  26,    8,    4, 256,     131072, 1e6,  1e-6, "gelu_pytorch_tanh"},
  {"Phi3ForCausalLM",                "phi3",        Family::phi3,  Bias::none,           Windows::all,         kPartial, Output::lm,      "",             32064,  3072,  8192,  32,    32,   0, 0,       4096,   1e4,  1e-5, "silu"},
  {"GPT2LMHeadModel",                "gpt2",        Family::gpt2,  Bias::none,           Windows::none,        0,        Output::lm,      "",             50257,  768,   0,     12,    12,   0, 0,       1024,   0,    1e-5, "gelu_new"},
  {"GPT2Model",                      "gpt2",        Family::gpt2,  Bias::none,           Windows::none,        0,        Output::lm,      "",             50257,  768,   0,     12,    12,   0, 0,       1024,   0,    1e-5, "gelu_new"},
  // Encoders: every size field is required, as their configs always write them.
  {"BertModel",                      "bert",        Family::bert,  Bias::none,           Windows::none,        0,        Output::pooler,  "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"BertForMaskedLM",                "bert",        Family::bert,  Bias::none,           Windows::none,        0,        Output::pooler,  "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"BertForPreTraining",             "bert",        Family::bert,  Bias::none,           Windows::none,        0,        Output::pooler,  "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"BertForSequenceClassification",  "bert",        Family::bert,  Bias::none,           Windows::none,        0,        Output::pooler,  "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"BertForTokenClassification",     "bert",        Family::bert,  Bias::none,           Windows::none,        0,        Output::pooler,  "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"BertForQuestionAnswering",       "bert",        Family::bert,  Bias::none,           Windows::none,        0,        Output::pooler,  "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"BertForNextSentencePrediction",  "bert",        Family::bert,  Bias::none,           Windows::none,        0,        Output::pooler,  "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"BertForMultipleChoice",          "bert",        Family::bert,  Bias::none,           Windows::none,        0,        Output::pooler,  "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"DistilBertModel",                "distilbert",  Family::distilbert, Bias::none,      Windows::none,        0,        Output::none,    "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"DistilBertForMaskedLM",          "distilbert",  Family::distilbert, Bias::none,      Windows::none,        0,        Output::none,    "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"DistilBertForSequenceClassification", "distilbert", Family::distilbert, Bias::none,  Windows::none,        0,        Output::none,    "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"DistilBertForTokenClassification", "distilbert", Family::distilbert, Bias::none,     Windows::none,        0,        Output::none,    "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"DistilBertForQuestionAnswering", "distilbert",  Family::distilbert, Bias::none,      Windows::none,        0,        Output::none,    "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"DistilBertForMultipleChoice",    "distilbert",  Family::distilbert, Bias::none,      Windows::none,        0,        Output::none,    "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-12, "gelu"},
  {"UniversalSentenceEncoderLite",   "",            Family::use_lite, Bias::none,        Windows::none,        0,        Output::pooler,  "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-6, "relu"},
  // Encoder-decoders: every size field is required too.
  {"BartForConditionalGeneration",   "bart",        Family::bart,  Bias::none,           Windows::none,        0,        Output::lm,      "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-5, "gelu"},
  {"BartModel",                      "bart",        Family::bart,  Bias::none,           Windows::none,        0,        Output::none,    "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-5, "gelu"},
  {"MarianMTModel",                  "marian",      Family::marian, Bias::none,          Windows::none,        0,        Output::lm,      "",             0,      0,     0,     0,     0,    0, 0,       0,      0,    1e-5, "gelu"},
  {"T5ForConditionalGeneration",     "t5",          Family::t5,    Bias::none,           Windows::none,        0,        Output::lm,      "",             32128,  512,   2048,  6,     8,    0, 64,      512,    0,    1e-6, "relu"},
  // Speech: an audio front end on an encoder-decoder (WhisperConfig's defaults: whisper-tiny's sizes).
  {"WhisperForConditionalGeneration", "whisper",    Family::whisper, Bias::none,         Windows::none,        0,        Output::lm,      "",             51865,  384,   1536,  4,     6,    0, 0,       448,    0,    1e-5, "gelu"},
  // Vision transformers: an image's patches in, no vocabulary (the patch front end). The defaults are ViTConfig's,
  // Dinov2Config's (its FFN from mlp_ratio) and CLIPVisionConfig's; read_vision has their image and patch sizes.
  {"ViTModel",                       "vit",         Family::vit,   Bias::none,           Windows::none,        0,        Output::pooler,  "",             0,      768,   3072,  12,    12,   0, 0,       0,      0,    1e-12, "gelu"},
  {"ViTForImageClassification",      "vit",         Family::vit,   Bias::none,           Windows::none,        0,        Output::classifier, "",          0,      768,   3072,  12,    12,   0, 0,       0,      0,    1e-12, "gelu"},
  {"DeiTModel",                      "deit",        Family::vit,   Bias::none,           Windows::none,        kDistillation, Output::pooler, "",         0,      768,   3072,  12,    12,   0, 0,       0,      0,    1e-12, "gelu"},
  {"DeiTForImageClassification",     "deit",        Family::vit,   Bias::none,           Windows::none,        kDistillation, Output::classifier, "",     0,      768,   3072,  12,    12,   0, 0,       0,      0,    1e-12, "gelu"},
  {"DeiTForImageClassificationWithTeacher", "deit", Family::vit,   Bias::none,           Windows::none,        kDistillation, Output::teacher, "",        0,      768,   3072,  12,    12,   0, 0,       0,      0,    1e-12, "gelu"},
  {"Dinov2Model",                    "dinov2",      Family::dinov2, Bias::none,          Windows::none,        0,        Output::none,    "",             0,      768,   0,     12,    12,   0, 0,       0,      0,    1e-6, "gelu"},
  {"Dinov2WithRegistersModel",       "dinov2_with_registers", Family::dinov2, Bias::none, Windows::none,       kRegisters, Output::none,  "",             0,      768,   0,     12,    12,   0, 0,       0,      0,    1e-6, "gelu"},
  {"CLIPVisionModel",                "clip_vision_model", Family::clip, Bias::none,      Windows::none,        0,        Output::none,    "",             0,      768,   3072,  12,    12,   0, 0,       0,      0,    1e-5, "quick_gelu"},
  {"CLIPVisionModelWithProjection",  "clip_vision_model", Family::clip, Bias::none,      Windows::none,        0,        Output::projection, "",          0,      768,   3072,  12,    12,   0, 0,       0,      0,    1e-5, "quick_gelu"},
  {"CLIPModel",                      "clip",        Family::clip,  Bias::none,           Windows::none,        0,        Output::projection, "vision_config", 0,   768,   3072,  12,    12,   0, 0,       0,      0,    1e-5, "quick_gelu"},
};
// clang-format on

const Row* row_of(const std::string& architecture) {
  for (const Row& r : kRows)
    if (architecture == r.architecture) return &r;
  return nullptr;
}

Activation activation_of(const std::string& name) {
  if (name == "silu" || name == "swish") return Activation::silu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast") return Activation::gelu_tanh;
  if (name == "gelu") return Activation::gelu;
  if (name == "relu") return Activation::relu;
  if (name == "quick_gelu") return Activation::quick_gelu;
  throw Error("config.json: activation " + quote(name) +
              " is not supported (silu, gelu_pytorch_tanh, gelu_new, gelu, relu, quick_gelu)");
}

std::string context(const std::string& what) { return "config.json: " + what; }

// RoPE as one kind of layer rotates: inverse frequencies [dim / 2] over the head's first `dim` dims, the factor cos and
// sin are scaled by, and the longest sequence the frequencies hold for.
struct Rotary {
  std::vector<double> inv_freq;
  double attention_factor = 1.0;
  std::int64_t max_tokens;
};

// longrope (Phi-3 128k, Phi-4-mini): inv_freq[i] = 1 / (short_factor[i] · base^(2i / dim)), cos and sin × attention
// factor. transformers turns every position to long_factor once a sequence passes original_max_position_embeddings,
// which would change keys already cached; AttnScope stops at that length instead.
void longrope(Rotary& r, const Json& c, const Json& scaling, double max_positions) {
  const Json* top = c.find("original_max_position_embeddings");
  const bool from_config = top && !top->is_null();
  const double original = from_config
                              ? config_number(c, "original_max_position_embeddings", 1, 1e8)
                              : optional_number(scaling, "original_max_position_embeddings", max_positions, 1, 1e8);
  const double factor = from_config ? max_positions / original : optional_number(scaling, "factor", 1.0, 1e-6, 1e6);
  const double computed = factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(original));
  r.attention_factor = optional_number(scaling, "attention_factor", computed, 1e-6, 1e6);
  for (const char* key : {"short_factor", "long_factor"}) {
    const Json* f = scaling.find(key);
    if (!f || !f->is_array() || f->array().size() != r.inv_freq.size())
      throw Error(context(std::string("rope_scaling.") + key + " must list " + std::to_string(r.inv_freq.size()) +
                          " numbers (rotary dims / 2)"));
    for (const Json& x : f->array())
      if (!x.is_number() || !(x.number() > 0) || !std::isfinite(x.number()))
        throw Error(context(std::string("rope_scaling.") + key + " must hold positive numbers"));
  }
  const std::vector<Json>& short_factor = scaling.find("short_factor")->array();
  for (std::size_t i = 0; i < r.inv_freq.size(); ++i) r.inv_freq[i] /= short_factor[i].number();
  r.max_tokens = std::min(r.max_tokens, static_cast<std::int64_t>(original));
}

// inv_freq[i] = 1 / base^(2i / dim), then the rope_scaling type's change (transformers'
// modeling_rope_utils: default, linear, dynamic, llama3, longrope). `scaling` may be null.
Rotary rotary(double base, std::int64_t dim, const Json* scaling, const Json& c, std::int64_t max_positions) {
  Rotary r{std::vector<double>(static_cast<std::size_t>(dim / 2)), 1.0, max_positions};
  std::vector<double>& inv = r.inv_freq;
  for (std::size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0 / std::pow(base, 2.0 * double(i) / double(dim));
  if (!scaling || scaling->is_null()) return r;
  if (!scaling->is_object()) throw Error(context("rope_scaling must be an object or null"));
  std::string type = optional_string(*scaling, "rope_type", optional_string(*scaling, "type", "default"));
  if (type == "default") return r;
  // Dynamic NTK changes the base only past max_position_embeddings, and AttnScope stops there.
  if (type == "dynamic") return r;
  if (type == "longrope" || type == "su") {  // "su": early Phi-3 configs' name for it
    longrope(r, c, *scaling, double(max_positions));
    return r;
  }
  if (type == "frequency_factors") {  // a GGUF's: inv_freq[i] / factors[i], as llama.cpp's rope_freqs tensor holds them
    const Json* f = scaling->find("factors");
    if (!f || !f->is_array() || f->array().size() != inv.size())
      throw Error(context("rope_scaling.factors must list " + std::to_string(inv.size()) + " numbers"));
    for (std::size_t i = 0; i < inv.size(); ++i) inv[i] /= f->array()[i].number();
    return r;
  }
  const double factor = config_number(*scaling, "factor", 1e-6, 1e6);
  if (type == "linear") {
    for (double& f : inv) f /= factor;
    return r;
  }
  if (type == "llama3") {
    const double low = optional_number(*scaling, "low_freq_factor", 1.0, 1e-6, 1e6);
    const double high = optional_number(*scaling, "high_freq_factor", 4.0, 1e-6, 1e6);
    if (!(high > low)) throw Error(context("rope_scaling: high_freq_factor must be above low_freq_factor"));
    const double old =
        static_cast<double>(optional_int(*scaling, "original_max_position_embeddings", max_positions, 1, 100'000'000));
    const double low_wavelen = old / low, high_wavelen = old / high;
    for (double& f : inv) {
      const double wavelen = 2.0 * M_PI / f;
      const double scaled = wavelen > low_wavelen ? f / factor : f;
      const double smooth = (old / wavelen - low) / (high - low);
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      f = medium ? (1.0 - smooth) * scaled / factor + smooth * scaled : scaled;
    }
    return r;
  }
  throw Error(
      context("rope_scaling type " + quote(type) + " is not supported (default, linear, dynamic, llama3, longrope)"));
}

// Whether layer i attends through a sliding window, from layer_types when given, else the row's rule.
std::vector<std::int64_t> windows_of(const Row& row, const Json& c, std::int64_t layers) {
  std::vector<std::int64_t> window(static_cast<std::size_t>(layers), 0);
  if (row.windows == Windows::none) return window;
  const std::int64_t width = optional_int(c, "sliding_window", 4096, 1, 100'000'000);
  const Json* sliding = c.find("sliding_window");
  if (row.windows == Windows::all) {  // Mistral: every layer when sliding_window is set
    if (sliding && !sliding->is_null()) std::fill(window.begin(), window.end(), width);
    return window;
  }
  if (row.windows == Windows::qwen && !optional_bool(c, "use_sliding_window", false)) return window;
  const Json* types = c.find("layer_types");
  if (types && !types->is_null()) {
    if (!types->is_array() || static_cast<std::int64_t>(types->array().size()) != layers)
      throw Error(context("layer_types must list one type per layer (" + std::to_string(layers) + ")"));
    for (std::size_t i = 0; i < window.size(); ++i) {
      const Json& t = types->array()[i];
      const std::string type = t.is_string() ? t.string() : "";
      if (type != "sliding_attention" && type != "full_attention")
        throw Error(
            context("layer_types[" + std::to_string(i) + "] must be \"sliding_attention\" or \"full_attention\""));
      window[i] = type == "sliding_attention" ? width : 0;
    }
    return window;
  }
  std::int64_t pattern = 2;  // Gemma 2: every other layer, from layer 0
  if (row.windows == Windows::pattern)
    pattern = optional_int(c, "sliding_window_pattern", optional_int(c, "_sliding_window_pattern", 6, 1, 1 << 20), 1,
                           1 << 20);
  for (std::int64_t i = 0; i < layers; ++i) {
    if (row.windows == Windows::qwen)
      window[i] = i >= optional_int(c, "max_window_layers", 28, 0, 1 << 20) ? width : 0;
    else
      window[i] = (i + 1) % pattern ? width : 0;
  }
  return window;
}

// A decoder's LM head: tied to the token embedding, or its own.
HeadConfig lm_head(std::int64_t vocab, bool tied) {
  HeadConfig h;
  h.language_model = true;
  h.vocab = vocab;
  h.tied = tied;
  return h;
}

Spec read_gpt2(const Row& row, const Json& c) {
  Spec s;
  Config& k = s.stacks.emplace_back();
  k.d_model = optional_int(c, "n_embd", row.hidden, 1, 65536);
  k.layers = optional_int(c, "n_layer", row.layers, 1, 512);
  k.heads = optional_int(c, "n_head", row.heads, 1, 1024);
  k.kv_heads = k.heads;
  if (k.d_model % k.heads)
    throw Error(context("n_head=" + std::to_string(k.heads) + " does not divide n_embd=" + std::to_string(k.d_model)));
  k.head_dim = k.d_model / k.heads;
  k.ffn = optional_int(c, "n_inner", 4 * k.d_model, 1, 1 << 20);
  const std::int64_t vocab = optional_int(c, "vocab_size", row.vocab, 1, 1'000'000);
  k.max_tokens = optional_int(c, "n_positions", row.max_positions, 1, 1'000'000);
  k.norm = Norm::layer;
  k.eps = static_cast<float>(optional_number(c, "layer_norm_epsilon", 1e-5, 0, 1));
  s.checkpoint.qkv_bias = s.checkpoint.o_bias = s.checkpoint.mlp_bias = true;
  k.gated = false;
  k.act = activation_of(optional_string(c, "activation_function", row.activation));
  k.positions = Positions::none;
  s.tokens = {vocab, k.d_model, k.max_tokens, TokenPositions::learned, 1.0f, k.eps};
  k.scale = optional_bool(c, "scale_attn_weights", true) ? 1.0f / std::sqrt(static_cast<float>(k.head_dim)) : 1.0f;
  if (optional_bool(c, "scale_attn_by_inverse_layer_idx", false))
    throw Error(context("scale_attn_by_inverse_layer_idx is not supported"));
  k.window.assign(static_cast<std::size_t>(k.layers), 0);
  s.head = lm_head(vocab, true);
  return s;
}

Spec read_llama_family(const Row& row, const Json& c) {
  Spec s;
  Config& k = s.stacks.emplace_back();
  k.d_model = optional_int(c, "hidden_size", row.hidden, 1, 65536);
  k.layers = optional_int(c, "num_hidden_layers", row.layers, 1, 512);
  k.heads = optional_int(c, "num_attention_heads", row.heads, 1, 1024);
  k.kv_heads = optional_int(c, "num_key_value_heads", row.kv_heads ? row.kv_heads : k.heads, 1, 1024);
  if (k.heads % k.kv_heads)
    throw Error(context("num_key_value_heads=" + std::to_string(k.kv_heads) +
                        " does not divide num_attention_heads=" + std::to_string(k.heads)));
  const Json* head_dim = c.find("head_dim");
  if ((!head_dim || head_dim->is_null()) && !row.head_dim && k.d_model % k.heads)
    throw Error(context("num_attention_heads=" + std::to_string(k.heads) +
                        " does not divide hidden_size=" + std::to_string(k.d_model) + " and there is no head_dim"));
  k.head_dim = optional_int(c, "head_dim", row.head_dim ? row.head_dim : k.d_model / k.heads, 2, 4096);
  if (k.head_dim % 2) throw Error(context("head_dim=" + std::to_string(k.head_dim) + " must be even for RoPE"));
  k.ffn = optional_int(c, "intermediate_size", row.ffn, 1, 1 << 20);
  const std::int64_t vocab = optional_int(c, "vocab_size", row.vocab, 1, 1'000'000);
  k.max_tokens = optional_int(c, "max_position_embeddings", row.max_positions, 1, 100'000'000);
  k.eps = static_cast<float>(optional_number(c, "rms_norm_eps", row.eps, 0, 1));
  const bool gemma = row.has(kGemma);
  s.checkpoint.stacked = row.family == Family::phi3;
  const bool attention_bias = optional_bool(c, "attention_bias", false);
  s.checkpoint.qkv_bias =
      row.bias == Bias::qkv || ((row.bias == Bias::attention_bias || row.bias == Bias::llama) && attention_bias);
  s.checkpoint.o_bias = (row.bias == Bias::attention_bias || row.bias == Bias::llama) && attention_bias;
  s.checkpoint.mlp_bias = row.bias == Bias::llama && optional_bool(c, "mlp_bias", false);
  k.act = activation_of(
      optional_string(c, gemma ? "hidden_activation" : "hidden_act", optional_string(c, "hidden_act", row.activation)));
  k.qk_norm = row.has(kQkNorm);
  s.checkpoint.norm_plus_one = gemma;
  if (gemma) k.placement = Placement::sandwich;
  s.head = lm_head(vocab, optional_bool(c, "tie_word_embeddings", gemma));
  s.tokens = {vocab, k.d_model, k.max_tokens, TokenPositions::none, 1.0f, k.eps};
  k.scale = 1.0f / std::sqrt(static_cast<float>(k.head_dim));
  if (gemma) {
    s.tokens.embed_scale = std::sqrt(static_cast<float>(k.d_model));
    const double scalar = optional_number(c, "query_pre_attn_scalar", 256, 1e-6, 1e9);
    k.scale = static_cast<float>(1.0 / std::sqrt(scalar));
    s.head.final_softcap = static_cast<float>(optional_number(c, "final_logit_softcapping", 0, 0, 1e9));
  }
  if (row.has(kSoftcap)) k.attn_softcap = static_cast<float>(optional_number(c, "attn_logit_softcapping", 0, 0, 1e9));
  // transformers: rotary dims = int(head_dim × partial_rotary_factor), the rest of each head unrotated.
  const double partial = optional_number(c, "partial_rotary_factor", 1.0, 0, 1);
  if (partial != 1.0 && !row.has(kPartial))
    throw Error(context("partial_rotary_factor is not supported for " + std::string(row.architecture) +
                        ": transformers rotates the whole head for it (v4 fails on a factor below 1, v5 ignores it)"));
  const std::int64_t dims = static_cast<std::int64_t>(double(k.head_dim) * partial);
  if (dims < 2 || dims % 2)
    throw Error(context("partial_rotary_factor × head_dim = " + std::to_string(dims) +
                        " rotary dims; RoPE needs an even number, at least 2"));
  // RoPE: transformers v4 writes rope_theta and rope_scaling, v5 rope_parameters (per layer type for Gemma 3).
  const Json* params = c.find("rope_parameters");
  const Json* scaling = c.find("rope_scaling");
  const Json* full = params && params->is_object() ? params->find("full_attention") : nullptr;
  const Json* local = params && params->is_object() ? params->find("sliding_attention") : nullptr;
  const Json* global = full ? full : (scaling && !scaling->is_null() ? scaling : params);
  const double theta = global && global->is_object() && global->find("rope_theta")
                           ? config_number(*global, "rope_theta", 1e-6, 1e12)
                           : optional_number(c, "rope_theta", row.theta, 1e-6, 1e12);
  const Rotary rope = rotary(theta, dims, global, c, k.max_tokens);
  k.inv_freq_global = rope.inv_freq;
  k.rope_attention_factor = static_cast<float>(rope.attention_factor);
  k.max_tokens = rope.max_tokens;
  if (row.windows == Windows::pattern) {  // Gemma 3's local layers: their own base, never scaled
    const double local_theta = local && local->find("rope_theta")
                                   ? config_number(*local, "rope_theta", 1e-6, 1e12)
                                   : optional_number(c, "rope_local_base_freq", 1e4, 1e-6, 1e12);
    k.inv_freq_local = rotary(local_theta, dims, local, c, k.max_tokens).inv_freq;
  } else {
    k.inv_freq_local = k.inv_freq_global;
  }
  k.window = windows_of(row, c, k.layers);
  s.tokens.max_tokens = k.max_tokens;
  return s;
}

// The settings every encoder row shares: bidirectional, LayerNorm, biases everywhere, a plain FFN, no LM head.
Config encoder_defaults(std::int64_t layers, std::int64_t heads, std::int64_t d_model, const char* heads_key) {
  Config k;
  k.layers = layers, k.heads = k.kv_heads = heads, k.d_model = d_model;
  if (k.d_model % k.heads)
    throw Error(context(std::string(heads_key) + "=" + std::to_string(k.heads) + " does not divide the width " +
                        std::to_string(k.d_model)));
  k.head_dim = k.d_model / k.heads;
  k.causal = false;
  k.norm = Norm::layer;
  k.positions = Positions::none;
  k.gated = false;
  k.scale = 1.0f / std::sqrt(static_cast<float>(k.head_dim));
  k.window.assign(static_cast<std::size_t>(k.layers), 0);
  return k;
}

// BERT: post-LN, learned positions, an embedding LayerNorm, the [CLS] pooler.
Spec read_bert(const Row& row, const Json& c) {
  Spec s;
  Config& k = s.stacks.emplace_back(encoder_defaults(config_int(c, "num_hidden_layers", 1, 256),
                                                     config_int(c, "num_attention_heads", 1, 1024),
                                                     config_int(c, "hidden_size", 1, 65536), "num_attention_heads"));
  s.checkpoint.qkv_bias = s.checkpoint.o_bias = s.checkpoint.mlp_bias = true;
  k.ffn = config_int(c, "intermediate_size", 1, 262144);
  k.max_tokens = config_int(c, "max_position_embeddings", 1, 1'000'000);
  k.eps = static_cast<float>(optional_number(c, "layer_norm_eps", row.eps, 0, 1));
  k.act = activation_of(optional_string(c, "hidden_act", row.activation));
  const std::string pe = optional_string(c, "position_embedding_type", "absolute");
  if (pe != "absolute") throw Error(context("position_embedding_type " + quote(pe) + " is not supported (absolute)"));
  k.placement = Placement::post;
  s.tokens = {config_int(c, "vocab_size", 1, 1'000'000), k.d_model, k.max_tokens, TokenPositions::learned, 1.0f, k.eps};
  if (row.output == Output::pooler) s.head.pooler = Pooler::first_tanh;
  return s;
}

// DistilBERT: BERT without token types or pooler, under other names.
Spec read_distilbert(const Row& row, const Json& c) {
  Spec s;
  Config& k = s.stacks.emplace_back(encoder_defaults(
      config_int(c, "n_layers", 1, 256), config_int(c, "n_heads", 1, 1024), config_int(c, "dim", 1, 65536), "n_heads"));
  s.checkpoint.qkv_bias = s.checkpoint.o_bias = s.checkpoint.mlp_bias = true;
  k.ffn = config_int(c, "hidden_dim", 1, 262144);
  k.max_tokens = config_int(c, "max_position_embeddings", 1, 1'000'000);
  k.eps = static_cast<float>(row.eps);
  k.act = activation_of(optional_string(c, "activation", row.activation));
  k.placement = Placement::post;
  s.tokens = {config_int(c, "vocab_size", 1, 1'000'000), k.d_model, k.max_tokens, TokenPositions::learned, 1.0f, k.eps};
  return s;
}

// USE-lite: pre-LN, sinusoidal timing added to 2 · the embedding, a first block that widens the stream, ReLU, the
// mean pooler. web/models/convert-default.mjs writes its config.
Spec read_use_lite(const Row&, const Json& c) {
  const std::int64_t embed = config_int(c, "embedding_size", 2, 16384);
  Spec s;
  Config& k = s.stacks.emplace_back(encoder_defaults(config_int(c, "num_hidden_layers", 1, 64),
                                                     config_int(c, "num_attention_heads", 1, 256),
                                                     config_int(c, "hidden_size", 1, 16384), "num_attention_heads"));
  if (embed % 2) throw Error(context("embedding_size must be even (sin and cos halves)"));
  if (embed % k.heads)
    throw Error(context("num_attention_heads=" + std::to_string(k.heads) +
                        " does not divide embedding_size=" + std::to_string(embed)));
  k.ffn = config_int(c, "intermediate_size", 1, 65536);
  k.max_tokens = config_int(c, "max_position_embeddings", 1, 100000);
  k.eps = static_cast<float>(config_number(c, "layer_norm_eps", 0, 1));
  k.act = Activation::relu;
  k.first_width = embed == k.d_model ? 0 : embed;
  // the graph adds the embedding to AddTimingSignal's output, which already holds it: 2 · the embedding
  s.tokens = {config_int(c, "vocab_size", 1, 1'000'000), embed, k.max_tokens, TokenPositions::sinusoidal, 2.0f, k.eps};
  s.checkpoint.qkv_bias = s.checkpoint.o_bias = s.checkpoint.mlp_bias = true;
  s.head.pooler = Pooler::mean_tanh_l2;
  s.tokenizer_required = true;
  const std::string name = optional_string(c, "name", "");
  s.name = !name.empty() && name.size() <= 200 ? name : "Universal Sentence Encoder lite";
  return s;
}

// A token id field of config.json or generation_config.json (null or absent: `fallback`).
std::int32_t token_field(const Json& c, const char* key, std::int64_t fallback, std::int64_t vocab) {
  return static_cast<std::int32_t>(optional_int(c, key, fallback, 0, vocab - 1));
}

// An encoder-decoder's search settings, from generation_config.json's fields (else config.json's, where older
// checkpoints keep them), as transformers reads them; max_length only when a file sets it (transformers' default of 20
// would cut every generation that does not ask for more).
BeamOptions read_search(const Json* generation, const Json& c, std::int64_t vocab) {
  const Json& g = generation && generation->is_object() && generation->find("num_beams") ? *generation : c;
  BeamOptions o;
  o.beams = optional_int(g, "num_beams", 1, 1, 1'000'000);
  o.length_penalty = static_cast<float>(optional_number(g, "length_penalty", 1.0, -1e6, 1e6));
  o.no_repeat_ngram = optional_int(g, "no_repeat_ngram_size", 0, 0, 1'000'000);
  const Json* early = g.find("early_stopping");
  o.early_stopping = early && early->type() == Json::Type::boolean && early->boolean();  // "never": false
  o.max_length = optional_int(g, "max_length", 0, 0, 1'000'000'000);
  if (const Json* bad = g.find("bad_words_ids"); bad && bad->is_array())
    for (const Json& word : bad->array())
      if (word.is_array() && word.array().size() == 1 && word.array()[0].is_number() && word.array()[0].number() >= 0 &&
          word.array()[0].number() < double(vocab))
        o.banned.push_back(static_cast<std::int32_t>(word.array()[0].number()));
  return o;
}

// BART: two post-LN stacks of its own sizes, learned positions (the checkpoint's table starts 2 rows in), a LayerNorm
// of each stack's embeddings, GELU, the shared embedding (× √d_model with scale_embedding) and the LM head tied to it.
// Marian is BART with static sinusoidal positions, no embedding LayerNorm (both in checkpoints.cpp) and its own
// defaults: decoding starts at <pad>, and no BOS is forced.
Spec read_bart(const Row& row, const Json& c, const Json* generation) {
  const std::int64_t d = config_int(c, "d_model", 1, 65536);
  const bool marian = row.family == Family::marian;
  if (marian) {
    if (!optional_bool(c, "share_encoder_decoder_embeddings", true))
      throw Error(context("share_encoder_decoder_embeddings false (a target vocabulary of its own) is not supported"));
    const Json* target_vocab = c.find("decoder_vocab_size");
    if (target_vocab && !target_vocab->is_null() &&
        config_int(c, "decoder_vocab_size", 1, 1'000'000) != config_int(c, "vocab_size", 1, 1'000'000))
      throw Error(context("a decoder_vocab_size other than vocab_size is not supported"));
  }
  for (const char* key : {"normalize_before", "add_final_layer_norm"})
    if (optional_bool(c, key, false))
      throw Error(context(std::string(key) + " is not supported for " + row.architecture + " (mBART's pre-LN)"));
  Spec s;
  const std::int64_t vocab = config_int(c, "vocab_size", 1, 1'000'000);
  const auto stack = [&](const char* layers, const char* heads, const char* ffn) {
    Config k = encoder_defaults(config_int(c, layers, 1, 256), config_int(c, heads, 1, 1024), d, heads);
    k.ffn = config_int(c, ffn, 1, 262144);
    k.max_tokens = config_int(c, "max_position_embeddings", 1, 1'000'000);
    k.eps = static_cast<float>(row.eps);
    k.act = activation_of(optional_string(c, "activation_function", row.activation));
    k.placement = Placement::post;
    return k;
  };
  s.stacks.push_back(stack("encoder_layers", "encoder_attention_heads", "encoder_ffn_dim"));
  Config& k = s.stacks.emplace_back(stack("decoder_layers", "decoder_attention_heads", "decoder_ffn_dim"));
  k.causal = k.cross_attention = true;
  s.checkpoint.qkv_bias = s.checkpoint.o_bias = s.checkpoint.mlp_bias = true;
  const float scale = optional_bool(c, "scale_embedding", false) ? std::sqrt(static_cast<float>(d)) : 1.0f;
  s.tokens = {vocab, d, k.max_tokens, TokenPositions::learned, scale, k.eps};
  s.target_tokens = s.tokens;
  s.head.vocab = vocab;
  s.head.language_model = row.output == Output::lm;  // BartModel has no LM head
  s.head.tied = true;
  const Json& g = generation && generation->is_object() ? *generation : c;
  const std::int32_t start = marian ? token_field(c, "pad_token_id", 58100, vocab) : 2;
  s.generation.decoder_start =
      token_field(g, "decoder_start_token_id", token_field(c, "decoder_start_token_id", start, vocab), vocab);
  s.generation.forced_bos =
      token_field(g, "forced_bos_token_id", token_field(c, "forced_bos_token_id", -1, vocab), vocab);
  s.generation.search = read_search(generation, c, vocab);
  return s;
}

// T5: pre-norm blocks with RMS norm and no biases, no 1/√d scaling, a relative position bias per stack (layer 0's
// table, shared by its layers; none in cross-attention), ReLU or gated FFN (feed_forward_proj), and a head tied to the
// shared embedding reading the hidden state × d_model^-0.5 (an untied head reads it as it is).
Spec read_t5(const Row& row, const Json& c, const Json* generation) {
  const std::int64_t d = optional_int(c, "d_model", row.hidden, 1, 65536);
  const std::int64_t heads = optional_int(c, "num_heads", row.heads, 1, 1024);
  const std::int64_t head_dim = optional_int(c, "d_kv", row.head_dim, 1, 4096);
  const std::string proj = optional_string(c, "feed_forward_proj", row.activation);
  const bool gated = proj.rfind("gated-", 0) == 0;
  const std::string act = gated ? proj.substr(6) : proj;
  const std::int64_t vocab = optional_int(c, "vocab_size", row.vocab, 1, 1'000'000);
  // Relative positions have no table to run out of: the page's own limits apply.
  const std::int64_t max_tokens = optional_int(c, "n_positions", row.max_positions, 1, 1'000'000);
  const auto stack = [&](std::int64_t layers) {
    Config k;
    k.layers = layers, k.heads = k.kv_heads = heads, k.head_dim = head_dim, k.d_model = d;
    k.ffn = optional_int(c, "d_ff", row.ffn, 1, 1 << 20);
    k.max_tokens = max_tokens;
    k.eps = static_cast<float>(optional_number(c, "layer_norm_epsilon", row.eps, 0, 1));
    k.norm = Norm::rms;
    k.gated = gated;
    k.act = activation_of(act == "gelu" ? "gelu_new" : act);  // transformers reads "gated-gelu" as gelu_new
    k.positions = Positions::relative;
    k.relative_buckets = optional_int(c, "relative_attention_num_buckets", 32, 2, 4096);
    k.relative_max_distance = optional_int(c, "relative_attention_max_distance", 128, 2, 1'000'000);
    k.scale = 1.0f;
    k.window.assign(static_cast<std::size_t>(layers), 0);
    return k;
  };
  Spec s;
  const std::int64_t layers = optional_int(c, "num_layers", row.layers, 1, 256);
  Config& encoder = s.stacks.emplace_back(stack(layers));
  encoder.causal = false;
  Config& k = s.stacks.emplace_back(stack(optional_int(c, "num_decoder_layers", layers, 1, 256)));
  k.causal = k.cross_attention = true;
  s.tokens = {vocab, d, max_tokens, TokenPositions::none, 1.0f, k.eps};
  s.target_tokens = s.tokens;
  s.head = lm_head(vocab, optional_bool(c, "tie_word_embeddings", true));
  if (s.head.tied) s.head.head_scale = 1.0f / std::sqrt(static_cast<float>(d));
  const Json& g = generation && generation->is_object() ? *generation : c;
  s.generation.decoder_start =
      token_field(g, "decoder_start_token_id", token_field(c, "decoder_start_token_id", 0, vocab), vocab);
  s.generation.search = read_search(generation, c, vocab);
  return s;
}

// Whisper: the audio front end (two Conv1d with GELU, the checkpoint's sinusoidal positions) under a pre-LN encoder,
// a pre-LN decoder with learned positions and cross-attention, a final LayerNorm on each stack, biases on every
// projection but k_proj (the converter finds none), exact GELU, and the LM head tied to the decoder's embedding.
// 128-mel checkpoints (large-v3) and distil-whisper's shallower decoders are these fields' values.
Spec read_whisper(const Row& row, const Json& c, const Json* generation) {
  const std::int64_t d = optional_int(c, "d_model", row.hidden, 1, 65536);
  const std::int64_t vocab = optional_int(c, "vocab_size", row.vocab, 1, 1'000'000);
  const auto stack = [&](const char* layers, const char* heads, const char* ffn, std::int64_t positions) {
    Config k = encoder_defaults(optional_int(c, layers, row.layers, 1, 256), optional_int(c, heads, row.heads, 1, 1024),
                                d, heads);
    k.ffn = optional_int(c, ffn, row.ffn, 1, 262144);
    k.max_tokens = positions;
    k.eps = static_cast<float>(row.eps);
    k.act = activation_of(optional_string(c, "activation_function", row.activation));
    k.placement = Placement::pre;
    return k;
  };
  Spec s;
  s.input = InputKind::audio;
  s.audio.mel_bins = optional_int(c, "num_mel_bins", 80, 1, 512);
  s.audio.positions = optional_int(c, "max_source_positions", 1500, 1, 1'000'000);
  s.stacks.push_back(stack("encoder_layers", "encoder_attention_heads", "encoder_ffn_dim", s.audio.positions));
  Config& k = s.stacks.emplace_back(stack("decoder_layers", "decoder_attention_heads", "decoder_ffn_dim",
                                          optional_int(c, "max_target_positions", row.max_positions, 1, 1'000'000)));
  k.causal = k.cross_attention = true;
  s.checkpoint.qkv_bias = s.checkpoint.o_bias = s.checkpoint.mlp_bias = true;
  // WhisperDecoder keeps embed_scale but never multiplies by it: scale_embedding changes nothing.
  s.target_tokens = {vocab, d, k.max_tokens, TokenPositions::learned, 1.0f, k.eps};
  s.tokens = s.target_tokens;
  s.head = lm_head(vocab, true);
  const Json& g = generation && generation->is_object() ? *generation : c;
  s.generation.decoder_start =
      token_field(g, "decoder_start_token_id", token_field(c, "decoder_start_token_id", 50257, vocab), vocab);
  s.generation.search = read_search(generation, c, vocab);
  return s;
}

// A vision config's image_size: one side, or [height, width].
std::pair<std::int64_t, std::int64_t> image_size(const Json& c, std::int64_t fallback) {
  const Json* v = c.find("image_size");
  if (v && v->is_array()) {
    const std::vector<Json>& hw = v->array();
    const auto side = [](const Json& x) {
      return x.is_number() && x.number() >= 1 && x.number() <= 16384 && std::floor(x.number()) == x.number();
    };
    if (hw.size() != 2 || !side(hw[0]) || !side(hw[1]))
      throw Error(context("image_size must be a whole number or [height, width], each from 1 to 16384"));
    return {static_cast<std::int64_t>(hw[0].number()), static_cast<std::int64_t>(hw[1].number())};
  }
  const std::int64_t side = optional_int(c, "image_size", fallback, 1, 16384);
  return {side, side};
}

// id2label's names by id: "0" … "n-1", every one there. Without it, num_labels' (2 by default) "LABEL_i", as
// transformers names them.
std::vector<std::string> labels_of(const Json& c) {
  const Json* map = c.find("id2label");
  std::vector<std::string> labels;
  if (!map || !map->is_object()) {
    const std::int64_t n = optional_int(c, "num_labels", 2, 1, 1'000'000);
    for (std::int64_t i = 0; i < n; ++i) labels.push_back("LABEL_" + std::to_string(i));
    return labels;
  }
  labels.resize(map->object().size());
  std::vector<bool> seen(labels.size());
  for (const auto& [key, name] : map->object()) {
    std::size_t id = 0, used = 0;
    try {
      id = std::stoul(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || key.empty() || id >= labels.size() || seen[id] || !name.is_string())
      throw Error(context("id2label must map each id from 0 to " + std::to_string(labels.size() - 1) +
                          " to a name, once; " + quote(key) + " does not"));
    seen[id] = true;
    labels[id] = name.string();
  }
  return labels;
}

// ViT, DeiT, DINOv2 and CLIP's vision tower: pre-LN encoders of LayerNorm blocks with biased q, k, v (CLIP always,
// the others unless qkv_bias is false), a plain FFN, GELU (CLIP: quick GELU), over an image's patches (VisionConfig).
// CLIPModel's vision settings are its vision_config (the row's nested config, `c`); its text tower is not read.
Spec read_vision(const Row& row, const Json& config, const Json& c) {
  const std::int64_t d = optional_int(c, "hidden_size", row.hidden, 1, 65536);
  Spec s;
  s.input = InputKind::image;
  Config& k = s.stacks.emplace_back(encoder_defaults(optional_int(c, "num_hidden_layers", row.layers, 1, 256),
                                                     optional_int(c, "num_attention_heads", row.heads, 1, 1024), d,
                                                     "num_attention_heads"));
  k.eps = static_cast<float>(optional_number(c, "layer_norm_eps", row.eps, 0, 1));
  k.act = activation_of(optional_string(c, "hidden_act", row.activation));
  s.checkpoint.o_bias = s.checkpoint.mlp_bias = true;
  s.checkpoint.qkv_bias = row.family == Family::clip || optional_bool(c, "qkv_bias", true);
  VisionConfig& v = s.vision;
  const std::int64_t default_patch = row.family == Family::dinov2 ? 14 : row.family == Family::clip ? 32 : 16;
  v.patch = optional_int(c, "patch_size", default_patch, 1, 1024);
  v.channels = optional_int(c, "num_channels", 3, 3, 3);
  v.eps = k.eps;
  std::tie(v.image_height, v.image_width) = image_size(c, 224);
  if (v.image_height < v.patch || v.image_width < v.patch)
    throw Error(context("image_size is smaller than patch_size=" + std::to_string(v.patch)));
  if (row.family == Family::dinov2) {
    if (optional_bool(c, "use_swiglu_ffn", false))
      throw Error(context("use_swiglu_ffn (DINOv2-giant's SwiGLU FFN) is not supported"));
    const double ratio = optional_number(c, "mlp_ratio", 4.0, 1e-3, 64);
    k.ffn = static_cast<std::int64_t>(double(d) * ratio);
    k.layer_scale = true;
  } else {
    k.ffn = optional_int(c, "intermediate_size", row.ffn, 1, 262144);
  }
  if (row.has(kRegisters)) {
    v.registers = optional_int(c, "num_register_tokens", 4, 0, 1024);
    v.antialias = true;
  }
  if (row.has(kDistillation)) v.prefix = 2;  // [CLS], distillation
  HeadConfig& h = s.head;
  h.pool_eps = k.eps;
  if (row.output == Output::pooler) {
    h.pooler = Pooler::first_tanh;
    const std::string act = optional_string(c, "pooler_act", "tanh");
    if (act != "tanh") throw Error(context("pooler_act " + quote(act) + " is not supported (tanh)"));
    if (optional_int(c, "pooler_output_size", d, 1, 65536) != d)
      throw Error(context("a pooler_output_size other than hidden_size is not supported"));
  }
  if (row.output == Output::classifier) h.classifier = Classifier::cls;
  if (row.output == Output::teacher) h.classifier = Classifier::cls_distillation;
  if (h.classifier != Classifier::none) h.labels = labels_of(config);
  // projection_dim: CLIPModel's at its top level; CLIPVisionModelWithProjection's config is that level
  if (row.output == Output::projection) h.projection = optional_int(config, "projection_dim", 512, 1, 65536);
  const std::int64_t grid = (v.image_height / v.patch) * (v.image_width / v.patch);
  k.max_tokens = v.prefix + v.registers + grid;  // at the trained size; other sizes interpolate the positions
  return s;
}

// The config that holds the model's settings: config.json itself, or the row's nested one (Gemma 3's image-text
// checkpoints' text_config, CLIPModel's vision_config).
const Json& settings_of(const Row& row, const Json& c) {
  if (!*row.nested) return c;
  const Json* t = c.find(row.nested);
  if (!t || !t->is_object()) throw Error(context(std::string(row.nested) + " is missing (" + row.architecture + ")"));
  return *t;
}

// eos_token_id: one id or a list of them (or null).
std::vector<std::int32_t> eos_ids(const Json& c, std::int64_t vocab) {
  const Json* e = c.find("eos_token_id");
  std::vector<std::int32_t> ids;
  if (!e || e->is_null()) return ids;
  const std::vector<Json> one = e->is_array() ? std::vector<Json>() : std::vector<Json>{*e};
  for (const Json& x : e->is_array() ? e->array() : one) {
    if (!x.is_number() || x.number() < 0 || x.number() >= double(vocab) || std::floor(x.number()) != x.number())
      throw Error(context("eos_token_id must be token ids below vocab_size=" + std::to_string(vocab)));
    ids.push_back(static_cast<std::int32_t>(x.number()));
  }
  return ids;
}

}  // namespace

bool is_supported(const std::string& architecture) { return row_of(architecture) != nullptr; }

std::string supported_architectures() {
  std::string list;
  for (const Row& r : kRows) list += (list.empty() ? "" : ", ") + std::string(r.architecture);
  return list;
}

Spec read_spec(const std::string& architecture, const Json& config, const Json* generation) {
  const Row* row = row_of(architecture);
  if (!row) throw Error("loadModel: architecture " + quote(architecture) + " is not one AttnScope runs");
  const std::string model_type = optional_string(config, "model_type", "");
  if (!model_type.empty() && *row->model_type && model_type != row->model_type)
    throw Error(context("model_type " + quote(model_type) + " contradicts architectures[0] " + quote(architecture) +
                        " (whose model_type is " + quote(row->model_type) + ")"));
  const Json& c = settings_of(*row, config);
  Spec s;
  switch (row->family) {
    case Family::gpt2:
      s = read_gpt2(*row, c);
      break;
    case Family::llama:
    case Family::phi3:
      s = read_llama_family(*row, c);
      break;
    case Family::bert:
      s = read_bert(*row, c);
      break;
    case Family::distilbert:
      s = read_distilbert(*row, c);
      break;
    case Family::use_lite:
      s = read_use_lite(*row, c);
      break;
    case Family::bart:
    case Family::marian:
      s = read_bart(*row, c, generation);
      break;
    case Family::t5:
      s = read_t5(*row, c, generation);
      break;
    case Family::whisper:
      s = read_whisper(*row, c, generation);
      break;
    case Family::vit:
    case Family::dinov2:
    case Family::clip:
      s = read_vision(*row, config, c);
      break;
  }
  s.architecture = architecture;
  for (const Config& k : s.stacks)
    if (static_cast<double>(k.heads) * static_cast<double>(k.head_dim) > 1e6 ||
        k.d_model * k.ffn > (std::int64_t{1} << 34))
      throw Error(context("the layer sizes are too large (hidden_size " + std::to_string(k.d_model) +
                          ", heads × head_dim " + std::to_string(k.heads * k.head_dim) + ", intermediate_size " +
                          std::to_string(k.ffn) + ")"));
  s.family = row->family;
  s.checkpoint.image_text = std::string(row->nested) == "text_config";
  const std::int64_t vocab = s.head.vocab ? s.head.vocab : s.tokens.vocab;
  if (s.head.language_model)
    s.generation.eos =
        eos_ids(generation && generation->is_object() && generation->find("eos_token_id") ? *generation : c, vocab);
  if (s.head.language_model && s.generation.eos.empty() && &c != &config) s.generation.eos = eos_ids(config, vocab);
  const std::string name = optional_string(config, "_name_or_path", "");
  if (s.name.empty()) s.name = !name.empty() && name.size() <= 200 ? name : architecture;
  return s;
}

}  // namespace attnscope::transformer
