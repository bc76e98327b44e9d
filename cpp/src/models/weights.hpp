// A model's weights across its safetensors files: one `model.safetensors`, or
// shards listed by `model.safetensors.index.json` ({ "weight_map": { name: file } }).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnscope/error.hpp"
#include "attnscope/model.hpp"
#include "io/json.hpp"
#include "io/safetensors.hpp"

namespace attnscope {

class WeightStore {
 public:
  explicit WeightStore(const ModelFiles& files) {
    const auto index = files.find("model.safetensors.index.json");
    if (index == files.end()) {
      const auto single = files.find("model.safetensors");
      if (single == files.end())
        throw Error("loadModel: model.safetensors (or model.safetensors.index.json with its shards) is missing");
      add(single->first, single->second);
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
      const auto shard = files.find(file.string());
      if (shard == files.end())
        throw Error("loadModel: shard " + quote(file.string()) + " is missing from the model's files");
      add(shard->first, shard->second);
    }
  }

  bool contains(const std::string& name) const {
    for (const auto& s : shards_)
      if (s.second->contains(name)) return true;
    return false;
  }

  // How the files store the tensor, as ModelInfo says it: "f32", "f16" or "bf16".
  std::string dtype(const std::string& name) const {
    for (const auto& s : shards_)
      if (s.second->contains(name)) {
        const std::string& d = s.second->tensors().at(name).dtype;
        return d == "BF16" ? "bf16" : d == "F16" ? "f16" : "f32";
      }
    throw Error("loadModel: tensor " + quote(name) + " is missing from the model's weights");
  }

  // The tensor as float32, checked against `expected` (-1 matches any dimension).
  Tensor read(const std::string& name, const Shape& expected) const {
    for (const auto& s : shards_)
      if (s.second->contains(name)) return s.second->read(name, expected);
    throw Error("loadModel: tensor " + quote(name) + " is missing from the model's weights");
  }

  // Linear layers store [out, in]; AttnScope multiplies x·W, so W is read transposed to [in, out].
  Tensor read_linear(const std::string& name, std::int64_t in, std::int64_t out) const {
    const Tensor w = read(name, {out, in});
    Tensor t({in, out});
    t.head(0) = w.head(0).transpose();
    return t;
  }

 private:
  void add(const std::string& name, const std::string& bytes) {
    shards_.emplace_back(
        name, std::make_unique<SafeTensors>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), name));
  }
  std::vector<std::pair<std::string, std::unique_ptr<SafeTensors>>> shards_;
};

}  // namespace attnscope
