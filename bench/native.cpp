// AttnScope built natively (-march=native) as a benchmark engine: the ceiling on
// this machine. Same protocol as bench/engines/*.mjs: one JSON request per stdin
// line ({"op":"setup","work":"mha","n":128}, {"op":"run"}, {"op":"sample"}), one
// JSON reply per stdout line.
//
//   attnscope_bench <threads> <dir>      (run by bench/index.mjs)
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "attnscope/attnscope.hpp"
#include "attnscope/model.hpp"
#include "io/json.hpp"
#include "io/safetensors.hpp"

namespace {

using namespace attnscope;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A safetensors file's tensors, read once and kept.
class Tensors {
 public:
  explicit Tensors(const std::string& path)
      : bytes_(read_file(path)), file_(reinterpret_cast<const std::uint8_t*>(bytes_.data()), bytes_.size(), path) {}
  Tensor get(const std::string& name) const { return file_.read(name, file_.tensors().at(name).shape); }

 private:
  std::string bytes_;
  SafeTensors file_;
};

// The first rows of the weights [.., n, n] and the first row of the output, as the JS engines report them.
std::vector<float> sample(const float* weights, std::int64_t n, const float* output, std::int64_t width) {
  std::vector<float> s(weights, weights + std::min<std::int64_t>(n, 3) * n);
  s.insert(s.end(), output, output + width);
  return s;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + '"';
}

std::string json_array(const std::vector<float>& v) {
  std::ostringstream s;
  s.precision(9);
  s << '[';
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  return s.str() + ']';
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: attnscope_bench <threads> <dir>\n";
    return 2;
  }
  const std::string dir = argv[2];
  Runtime rt(std::stoi(argv[1]));
  const Tensors inputs(dir + "/inputs.safetensors"), mha(dir + "/mha.safetensors");
  std::unique_ptr<Model> bert, default_model;
  std::function<std::vector<float>()> job;
  std::vector<float> last;
  std::vector<Tensor> keep;  // what the current job reads

  for (std::string line; std::getline(std::cin, line);) {
    try {
      const Json request = Json::parse(line, "request");
      const auto field = [&](const char* key) -> const Json& {
        const Json* value = request.find(key);
        if (!value) throw Error(std::string("request has no \"") + key + "\"");
        return *value;
      };
      const auto number = [&](const char* key) { return static_cast<std::int64_t>(field(key).number()); };
      const std::string op = field("op").string();
      if (op == "quit") break;
      if (op == "setup") {
        const std::string work = field("work").string();
        keep.clear();
        if (work == "mha") {
          const std::int64_t n = number("n");
          keep = {inputs.get("x" + std::to_string(n)), mha.get("wq"), mha.get("wk"), mha.get("wv"), mha.get("wo")};
          job = [&rt, &keep, n] {
            MultiHeadOptions o;
            o.heads = 12;
            const MultiHeadParams p{keep[1].view(), keep[2].view(), keep[3].view(), keep[4].view(), {}, {}, {}, {}};
            const MultiHeadResult r = rt.multi_head_attention(keep[0].view(), p, o);
            return sample(r.weights.data.data(), n, r.output.data.data(), 768);
          };
        } else if (work == "bert") {
          if (!bert)
            bert = Model::load({{"config.json", read_file(dir + "/bert/config.json")},
                                {"model.safetensors", read_file(dir + "/bert/model.safetensors")}});
          const std::int64_t n = number("n");
          job = [&rt, &bert, n] {
            std::vector<std::int32_t> ids;
            for (std::int64_t i = 0; i < n; ++i) ids.push_back(static_cast<std::int32_t>(1000 + i));
            const RunResult r = bert->run(rt, Input::ids(ids));
            const Tensor& maps = r.map("self").attentions;
            const std::int64_t layers = maps.shape[0], heads = maps.shape[1];
            return sample(maps.data.data() + (layers - 1) * heads * n * n, n, r.hidden().data.data(), 768);
          };
        } else if (work == "gemm") {
          const std::int64_t rows = number("rows"), k = number("k"), m = number("m");
          const Tensors w(dir + "/gemm_" + std::to_string(k) + "x" + std::to_string(m) + ".safetensors");
          keep = {inputs.get("a" + std::to_string(rows) + "x" + std::to_string(k)), w.get("w")};
          job = [&rt, &keep, m] {
            const Matrix y = rt.linear(keep[0].view(), keep[1].view());
            return std::vector<float>(y.data(), y.data() + m);
          };
        } else if (work == "default") {
          if (!default_model) {
            const std::string models = field("models").string();
            ModelFiles files;
            for (const char* f : {"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                                  "model-00002-of-00002.safetensors", "vocab.json"})
              files[f] = read_file(models + f);
            default_model = Model::load(files);
          }
          const std::string text = field("text").string();
          job = [&rt, &default_model, text] {
            const RunResult r = default_model->run(rt, Input::text(text));
            const Tensor& maps = r.map("self").attentions;
            const std::int64_t n = maps.shape[2];
            return sample(maps.data.data(), n, r.hidden().data.data(), r.hidden().shape[1]);
          };
        } else {
          throw Error("unknown work " + work);
        }
        std::cout << "{\"ok\":true}" << std::endl;
      } else if (op == "run") {
        const auto start = std::chrono::steady_clock::now();
        last = job();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::cout << "{\"ms\":" << ms << "}" << std::endl;
      } else if (op == "sample") {
        std::cout << "{\"sample\":" << json_array(last) << "}" << std::endl;
      } else {
        throw Error("unknown op " + op);
      }
    } catch (const std::exception& e) {
      std::cout << "{\"error\":" << json_string(e.what()) << "}" << std::endl;
    }
  }
  return 0;
}
