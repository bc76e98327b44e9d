// A tokenizer.json tokenizer (model BPE or Unigram) as Hugging Face's JS tokenizers (@huggingface/tokenizers) run
// one, step by step:
//
//   1. split the text on added tokens (longest first, left to right), trimming whitespace
//      beside those marked lstrip/rstrip;
//   2. each other section: the normalizer (Prepend, Replace, Strip, SentencePiece's Precompiled charsmap;
//      NFC/NFKC/NFD apply in JS first);
//   3. the pre-tokenizer: Split (regex or string), ByteLevel, Metaspace, Digits, Replace, WhitespaceSplit, Sequence;
//   4. the model on each pre-token (bpe.hpp, unigram.hpp);
//   5. the post-processor's template (TemplateProcessing: <bos> $A …), unless the model's
//      tokenizer_config.json sets add_bos_token/add_eos_token for a Llama or Gemma tokenizer;
//   and back: decode(ids) through the decoder chain (ByteLevel, Replace, ByteFallback, Fuse,
//   Strip, Metaspace), then transformers' clean_up_tokenization_spaces.
#pragma once

#include <memory>
#include <string>

#include "attnscope/tokenizer.hpp"

namespace attnscope {

class Json;

namespace tokenizers {

// From tokenizer.json (model type BPE or Unigram) and, when given, tokenizer_config.json.
std::unique_ptr<Tokenizer> make_pipeline(const Json& tokenizer_json, const Json* tokenizer_config);

// GPT-2's files: vocab.json (token → id) and merges.txt, as GPT-2's tokenizer.json would hold them.
std::unique_ptr<Tokenizer> make_gpt2_bpe(const Json& vocab, std::string_view merges);

}  // namespace tokenizers
}  // namespace attnscope
