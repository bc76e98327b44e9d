// The JSON goldens in tests/golden (written by its make_*_goldens.py with PyTorch), for the native tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "attnscope/tensor.hpp"
#include "io/json.hpp"

namespace attnscope::testing {

// tests/golden/<file>, parsed (callers keep it).
inline Json read_golden(const std::string& file) {
  std::ifstream in(std::string(ATTNSCOPE_GOLDEN_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str(), file);
}

// A golden tensor, { "shape": [...], "data": [...] } row-major.
inline Tensor golden_tensor(const Json& j) {
  Shape shape;
  for (const Json& d : j.find("shape")->array()) shape.push_back(static_cast<std::int64_t>(d.number()));
  Tensor t(shape);
  const auto& data = j.find("data")->array();
  for (std::size_t i = 0; i < data.size(); ++i) t.data[i] = static_cast<float>(data[i].number());
  return t;
}

}  // namespace attnscope::testing
