// A model's weights across its safetensors files: one `model.safetensors`, or
// shards listed by `model.safetensors.index.json` ({ "weight_map": { name: file } }).
// A weight file may be in memory (ModelFiles) or read tensor by tensor (LargeFiles).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnscope/error.hpp"
#include "attnscope/model.hpp"
#include "io/json.hpp"
#include "io/safetensors.hpp"

namespace attnscope {

// A weight matrix as the GEMM reads it, x·W with W [in, out] (the GEMM's B [k = in, n = out]).
using Weight = std::shared_ptr<const kernels::PackedWeight>;

class WeightStore {
 public:
  explicit WeightStore(const ModelFiles& files, const LargeFiles& large = {}) {
    const auto index = files.find("model.safetensors.index.json");
    if (index == files.end()) {
      add("model.safetensors", files, large,
          "loadModel: model.safetensors (or model.safetensors.index.json with its shards) is missing");
      return;
    }
    const Json j = Json::parse(index->second, index->first);
    const Json* map = j.is_object() ? j.find("weight_map") : nullptr;
    if (!map || !map->is_object()) throw Error(index->first + ": weight_map is missing");
    for (const auto& [tensor, file] : map->object()) {
      if (!file.is_string()) throw Error(index->first + ": weight_map[" + quote(tensor) + "] is not a file name");
      bool seen = false;
      for (const auto& s : shards_) seen = seen || s.first == file.string();
      if (seen) continue;
      add(file.string(), files, large,
          "loadModel: shard " + quote(file.string()) + " is missing from the model's files");
    }
  }

  // Tables another format's reader made (a GGUF's, in transformers' names), by file name.
  explicit WeightStore(std::vector<std::pair<std::string, std::unique_ptr<SafeTensors>>> tables)
      : shards_(std::move(tables)) {}

  bool contains(const std::string& name) const { return shard_of(name) != nullptr; }

  // How the files store the tensor, as ModelInfo says it: "f32", "f16", "bf16", or a GGUF's "q8_0", "q4_0", "q4_k",
  // "q6_k".
  std::string dtype(const std::string& name) const {
    std::string d = shard(name).tensors().at(name).dtype;
    for (char& ch : d) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    return d;
  }

  // The tensor as float32, checked against `expected` (-1 matches any dimension).
  Tensor read(const std::string& name, const Shape& expected) const { return shard(name).read(name, expected); }

  // Linear layers store [out, in]; AttnScope multiplies x·W, so W is read transposed to [in, out].
  Tensor read_linear(const std::string& name, std::int64_t in, std::int64_t out) const {
    const Tensor w = read(name, {out, in});
    Tensor t({in, out});
    t.head(0) = w.head(0).transpose();
    return t;
  }

  // A Linear's [out, in] weight as the GEMM's B [in, out], packed in its own precision.
  Weight linear(const std::string& name, std::int64_t in, std::int64_t out) const {
    return matrix(name, out, in, /*transposed=*/true);
  }
  // Rows [first, first + count) of a Linear's [out, in] weight, as the GEMM's B [in, count] (Phi-3 stacks q, k, v).
  Weight linear_rows(const std::string& name, std::int64_t in, std::int64_t out, std::int64_t first,
                     std::int64_t count) const {
    return shard(name).matrix(name, out, in, /*transposed=*/true, first, count);
  }
  // A [rows, cols] tensor as the GEMM's B: as stored (Conv1D's [in, out]), or transposed. Packed in its own precision.
  Weight matrix(const std::string& name, std::int64_t rows, std::int64_t cols, bool transposed) const {
    return shard(name).matrix(name, rows, cols, transposed);
  }

 private:
  void add(const std::string& name, const ModelFiles& files, const LargeFiles& large, const std::string& missing) {
    const auto small = files.find(name);
    std::shared_ptr<const FileBytes> bytes;
    if (small != files.end()) {
      bytes = std::make_shared<MemoryBytes>(reinterpret_cast<const std::uint8_t*>(small->second.data()),
                                            small->second.size());
    } else if (const auto big = large.find(name); big != large.end()) {
      bytes = big->second;
    } else {
      throw Error(missing);
    }
    shards_.emplace_back(name, std::make_unique<SafeTensors>(std::move(bytes), name));
  }

  const SafeTensors* shard_of(const std::string& name) const {
    for (const auto& s : shards_)
      if (s.second->contains(name)) return s.second.get();
    return nullptr;
  }
  const SafeTensors& shard(const std::string& name) const {
    if (const SafeTensors* s = shard_of(name)) return *s;
    throw Error("loadModel: tensor " + quote(name) + " is missing from the model's weights");
  }

  std::vector<std::pair<std::string, std::unique_ptr<SafeTensors>>> shards_;
};

}  // namespace attnscope
