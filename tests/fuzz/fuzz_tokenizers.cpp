// libFuzzer: every tokenizer on arbitrary text, and on vocabularies, SentencePiece models and charsmaps built from
// the input. The first byte picks the case; the rest is text or a vocabulary file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnscope/error.hpp"
#include "attnscope/model.hpp"
#include "attnscope/tokenizer.hpp"
#include "io/json.hpp"
#include "tokenizers/regex.hpp"
#include "tokenizers/sentencepiece.hpp"
#include "tokenizers/unicode.hpp"

namespace {

using attnscope::ModelFiles;

// Small fixed vocabularies, so that encoding explores the algorithms, not the loaders.
const ModelFiles& bert() {
  static const ModelFiles f{
      {"vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n##s\n,\n.\n\xe4\xb8\xad\na\n##a\n"}};
  return f;
}
const ModelFiles& gpt2() {
  static const ModelFiles f{{"vocab.json", R"({"a": 0, "b": 1, "c": 2, "\u0120": 3, "\u0120a": 4, "ab": 5, "!": 6})"},
                            {"merges.txt", "#version: 0.2\n\xc4\xa0 a\na b\n"}};
  return f;
}
const ModelFiles& use() {
  static const ModelFiles f{
      {"vocab.json",
       "[[\"<unk>\",0],[\"<s>\",0],[\"</s>\",0],[\"x\",0],[\"y\",0],[\"z\",0],[\"\\u2581the\",-1],"
       "[\"a\",-2],[\"b\",null],[\"\\u2581\",-3]]"}};
  return f;
}

// tokenizer.json pipelines: byte-level BPE behind Llama 3's Split regex, and SentencePiece-style BPE
// with Prepend, Replace and byte fallback behind TemplateProcessing's <s>.
const ModelFiles& llama3() {
  static const ModelFiles f{{"tokenizer.json", R"({"added_tokens": [{"id": 9, "content": "<|eot|>", "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
    "post_processor": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "ignore_merges": true, "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "Ġa": 4, "ab": 5, "!": 6, "1": 7, "12": 8}, "merges": ["Ġ a", "a b", "1 2"]}})"}};
  return f;
}
const ModelFiles& mistral() {
  static const ModelFiles f{
      {"tokenizer.json",
       R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null,
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>", "vocab": {"<unk>": 0, "<s>": 1, "<0xC3>": 2, "<0xA9>": 3, "▁": 4, "t": 5, "h": 6, "e": 7, "▁t": 8, "he": 9, "▁the": 10}, "merges": ["▁ t", "h e", "▁t he"]}})"}};
  return f;
}

// T5's tokenizer.json layout (Unigram behind WhitespaceSplit and Metaspace, </s> after the text), no charsmap.
const ModelFiles& t5() {
  static const ModelFiles f{{"tokenizer.json", R"({"added_tokens": [{"id": 1, "content": "</s>", "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Precompiled", "precompiled_charsmap": null},
      {"type": "Strip", "strip_left": false, "strip_right": true}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "▁"}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁", "add_prefix_space": true}]},
    "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}], "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
    "decoder": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": true},
    "model": {"type": "Unigram", "unk_id": 2, "byte_fallback": false, "vocab": [["<pad>", 0], ["</s>", 0], ["<unk>", 0], ["▁", -2], ["▁the", -3], ["a", -4], ["b", -4.5], ["ab", -5], ["▁cat", -6], ["s", -3.5]]}})"}};
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 12) {
      case 0:
        attnscope::make_tokenizer(bert())->encode(rest);
        break;
      case 1:
        attnscope::make_tokenizer(gpt2())->encode(rest);
        break;
      case 2:
        attnscope::make_tokenizer(use())->encode(rest);
        break;
      case 3:
        attnscope::make_tokenizer({{"vocab.txt", rest}})->encode("the cats, a\xe4\xb8\xad.");
        break;
      case 4:
        attnscope::make_tokenizer({{"tokenizer.json", rest}});
        break;
      case 5: {
        auto t = attnscope::make_tokenizer(llama3());
        const auto ids = t->encode(rest).ids;
        t->decode(ids, false);
        for (std::int32_t id : ids) t->label(id);
        break;
      }
      case 6: {
        auto t = attnscope::make_tokenizer(mistral());
        const auto ids = t->encode(rest).ids;
        t->decode(ids, true);
        for (std::int32_t id : ids) t->label(id);
        break;
      }
      case 7:  // a fuzzed regex on fixed text
        attnscope::tokenizers::Regex(rest).find_all(
            attnscope::unicode::decode_utf8("Hello, world! 123  \n\t\xe4\xb8\xad"));
        break;
      case 8: {
        auto t = attnscope::make_tokenizer({{"vocab.json", rest}});
        if (t) t->encode("the a b");
        break;
      }
      case 9: {  // the bytes as both of Marian's SentencePiece models
        auto t = attnscope::make_tokenizer({{"source.spm", rest},
                                            {"target.spm", rest},
                                            {"vocab.json", R"({"</s>": 0, "<unk>": 1, "▁the": 2, "<pad>": 3})"}});
        const auto ids = t->encode("the cats, ab \xe4\xb8\xad").ids;
        t->decode(ids, false);
        t->encode_target(rest);
        break;
      }
      case 10: {  // the bytes as a precompiled charsmap, on fixed text and on themselves
        const attnscope::tokenizers::CharsMap map(rest, "charsmap");
        map.normalize("Ａｂｃ ① \xe4\xb8\xad\xef\xbd\x9e x");
        map.normalize(rest);
        break;
      }
      default: {
        auto t = attnscope::make_tokenizer(t5());
        const auto ids = t->encode(rest).ids;
        t->decode(ids, true);
        for (std::int32_t id : ids) t->label(id);
      }
    }
  } catch (const attnscope::Error&) {
  }
  return 0;
}
