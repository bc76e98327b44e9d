// A GGUF (llama.cpp's file) read as the Hugging Face checkpoint it was converted from: config.json's fields from the
// GGUF's metadata, and its tensors under transformers' names, with what llama.cpp's converter
// (convert_hf_to_gguf.py) changed undone as they are read. The architecture table (architectures.cpp) and the
// checkpoint readers (checkpoints.cpp) then make the model as they make any other: a GGUF is a second way in, not a
// second model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnscope/files.hpp"
#include "io/safetensors.hpp"

namespace attnscope {

struct GgufCheckpoint {
  std::string config;  // config.json's text
  // tokenizer.json and tokenizer_config.json from its tokenizer.ggml.* keys (tokenizers/gguf_vocab.hpp); none when
  // the file has no tokenizer AttnScope reads.
  ModelFiles tokenizer;
  // general.file_type as llama.cpp names it (Q4_K_M, Q8_0, F16, ...); empty when the file does not say.
  std::string file_type;
  // One table per file of a split GGUF (-00001-of-0000N.gguf), in transformers' names.
  std::vector<std::pair<std::string, std::unique_ptr<SafeTensors>>> tensors;
};

// Whether a model's file is a GGUF (by its name).
bool is_gguf_name(const std::string& name);

// The checkpoint a GGUF holds, from its file or the files of a split one (any order). Throws naming the file and
// what in it is wrong or not supported.
GgufCheckpoint read_gguf_checkpoint(const std::vector<std::pair<std::string, std::shared_ptr<const FileBytes>>>& files);

// The heap the weights of a GGUF (its file, or the files of a split one) take once loaded, from the headers alone: each
// matrix in the GEMM's panels of 8 columns in its own type (quantized.hpp's super-blocks: a Q4_K panel keeps 148 bytes
// per 256 values a column where the file keeps 144), each vector as float32. A load is checked against it before it
// reads a tensor, and so is a download. Throws as read_gguf_checkpoint does for headers it cannot read.
std::uint64_t gguf_weight_bytes(const std::vector<std::pair<std::string, std::shared_ptr<const FileBytes>>>& files);

}  // namespace attnscope
