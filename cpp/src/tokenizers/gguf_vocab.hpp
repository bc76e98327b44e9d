// A GGUF's tokenizer (its tokenizer.ggml.* keys) written out as the tokenizer.json and tokenizer_config.json that
// the pipeline (pipeline.cpp) reads, so that one tokenizer implementation serves both kinds of file. Two kinds, as
// llama.cpp tokenizes them:
// - "gpt2": byte-level BPE from the file's merges, split first as its pre-tokenizer names (tokenizer.ggml.pre:
//   llama-bpe for Llama 3, qwen2, smollm, gpt-2);
// - "llama": SentencePiece BPE from the pieces' scores (merges ranked as transformers' SentencePieceExtractor ranks
//   them: by the merged piece's score, then its halves' ids), with byte fallback, "▁" for spaces and, with
//   add_space_prefix, a "▁" before the text and after each special token.
// Control and unknown tokens are special added tokens, user-defined ones plain added tokens; BOS and EOS are added
// as add_bos_token and add_eos_token say.
#pragma once

#include "attnscope/files.hpp"
#include "io/gguf.hpp"

namespace attnscope::tokenizers {

// tokenizer.json and tokenizer_config.json for the GGUF's tokenizer; none when the file names no kind this reads
// (tokenizer.ggml.model absent, "none", or a kind its architectures never use): the model then runs on token ids.
// Throws naming the key when a kind it reads is malformed or its pre-tokenizer unknown.
ModelFiles tokenizer_files(const Gguf& gguf);

}  // namespace attnscope::tokenizers
