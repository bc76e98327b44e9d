// Pillow's resize and transformers' image processors, followed line by line (image.hpp names the sources). The
// point is equality with Pillow's bytes, so the arithmetic keeps Pillow's types and order: coefficients in double,
// normalized to 22-bit fixed point, integer sums, a uint8 image between the horizontal and the vertical pass.
#include "vision/image.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <set>
#include <utility>

#include "attnscope/error.hpp"
#include "models/config.hpp"

// A fused multiply-add rounds once where Pillow (built for baseline x86-64, without FMA) rounds twice: in the
// bicubic and Hamming filters it could move a coefficient by one ulp, and so a pixel by one level. Compilers may
// fuse on their own when the target has FMA (-march=native, -ffp-contract=fast is GCC's default).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace attnscope::vision {
namespace {

constexpr const char* kFile = "preprocessor_config.json";
constexpr double kPi = 3.14159265358979323846;  // M_PI, which Pillow uses

// ---------------------------------------------------------------------------------------------------------------
// Pillow's filters (Resample.c), each with its support in source pixels at scale 1.

double box_filter(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double hamming_filter(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * kPi;
  // Pillow's constants are floats (0.54f, 0.46f), widened to double.
  return std::sin(x) / x * (static_cast<double>(0.54f) + static_cast<double>(0.46f) * std::cos(x));
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;  // Keys' a (Catmull-Rom); torch's and OpenCV's bicubic use -0.75
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc_filter(double x) {
  if (x == 0.0) return 1.0;
  x = x * kPi;
  return std::sin(x) / x;
}

double lanczos_filter(double x) { return -3.0 <= x && x < 3.0 ? sinc_filter(x) * sinc_filter(x / 3) : 0.0; }

struct Filter {
  double (*weight)(double);
  double support;
};

Filter filter_of(Resample r) {
  switch (r) {
    case Resample::BOX:
      return {box_filter, 0.5};
    case Resample::BILINEAR:
      return {bilinear_filter, 1.0};
    case Resample::HAMMING:
      return {hamming_filter, 1.0};
    case Resample::BICUBIC:
      return {bicubic_filter, 2.0};
    case Resample::LANCZOS:
      return {lanczos_filter, 3.0};
    case Resample::NEAREST:  // not a filter: resize_pixels takes it elsewhere
      break;
  }
  throw Error("resize: resample " + std::to_string(static_cast<int>(r)) + " has no filter");
}

// Fixed point of the coefficients: 8 bits for the value, 2 for the overflow of negative lobes and of sums above 1.
constexpr int kPrecisionBits = 32 - 8 - 2;

// One pass's weights: output pixel i reads `count[i]` source pixels from `first[i]`, with weights
// k[i * ksize, i * ksize + count[i]) in 22-bit fixed point. Pillow's precompute_coeffs + normalize_coeffs_8bpc.
struct Coefficients {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<std::int32_t> k;
};

Coefficients precompute(int in_size, int out_size, const Filter& filter) {
  // The box is (0, in_size) as floats; (in1 - in0) is computed in float, then widened.
  const double scale = static_cast<double>(static_cast<float>(in_size) - 0.0f) / out_size;
  // Downscaling widens the filter to cover every source pixel (antialiasing); upscaling keeps it at scale 1.
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = filter.support * filterscale;
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.k.assign(static_cast<std::size_t>(out_size) * c.ksize, 0);
  std::vector<double> w(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = 0.0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // Rounded by truncation toward zero, as C's (int) cast: a negative xmin becomes 0 below either way.
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = filter.weight((x + xmin - center + 0.5) * ss);
      ww += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? w[x] / ww : w[x];
      // Rounded half away from zero into fixed point.
      c.k[static_cast<std::size_t>(xx) * c.ksize + x] =
          static_cast<std::int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    c.first[xx] = xmin;
    c.count[xx] = xmax;
  }
  return c;
}

// Pillow's clip8: the sum (with its 0.5 rounding bias added first) shifted down and clamped to a byte. Sums are
// 64-bit here; Pillow's are int, which its 2 spare bits keep from overflowing, so the values are the same.
std::uint8_t clip8(std::int64_t sum) {
  const std::int64_t v = sum >> kPrecisionBits;
  return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// An RGB image whose pixel (x, y) has its R, G, B at data[(y * width + x) * stride + 0..2]: stride 3 for RGB,
// 4 for RGBA read as PIL's convert("RGB") would leave it (alpha dropped).
struct Pixels {
  const std::uint8_t* data;
  int width, height, stride;
  const std::uint8_t* at(int x, int y) const {
    return data + (static_cast<std::size_t>(y) * width + x) * static_cast<std::size_t>(stride);
  }
};

// Pillow's ImagingResampleInner for an 8-bit, 3-band image. Returns [out_height, out_width, 3].
std::vector<std::uint8_t> resample_passes(const Pixels& in, int out_width, int out_height, const Filter& filter) {
  const bool need_horizontal = out_width != in.width;
  const bool need_vertical = out_height != in.height;
  const Coefficients horiz = precompute(in.width, out_width, filter);
  Coefficients vert = precompute(in.height, out_height, filter);
  // The source rows the vertical pass reads: the horizontal pass resamples only these.
  const int ybox_first = vert.first[0];
  const int ybox_last = vert.first[out_height - 1] + vert.count[out_height - 1];

  std::vector<std::uint8_t> temp;  // [ybox_last - ybox_first, out_width, 3], uint8 as Pillow's imTemp
  Pixels source = in;
  if (need_horizontal) {
    for (int& f : vert.first) f -= ybox_first;
    const int rows = ybox_last - ybox_first;
    temp.resize(static_cast<std::size_t>(rows) * out_width * 3);
    for (int yy = 0; yy < rows; ++yy) {
      std::uint8_t* out = temp.data() + static_cast<std::size_t>(yy) * out_width * 3;
      for (int xx = 0; xx < out_width; ++xx) {
        const std::int32_t* k = &horiz.k[static_cast<std::size_t>(xx) * horiz.ksize];
        const std::uint8_t* p = in.at(horiz.first[xx], yy + ybox_first);
        std::int64_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
        for (int x = 0; x < horiz.count[xx]; ++x, p += in.stride) {
          s0 += p[0] * k[x];
          s1 += p[1] * k[x];
          s2 += p[2] * k[x];
        }
        out[xx * 3 + 0] = clip8(s0);
        out[xx * 3 + 1] = clip8(s1);
        out[xx * 3 + 2] = clip8(s2);
      }
    }
    source = Pixels{temp.data(), out_width, rows, 3};
  }

  // At scale 1 the vertical window covers rows [0, height): the horizontal pass made them all. resize_pixels
  // handles an unchanged size, so one pass at least is needed.
  if (!need_vertical) return temp;

  std::vector<std::uint8_t> out(static_cast<std::size_t>(out_height) * source.width * 3);
  for (int yy = 0; yy < out_height; ++yy) {
    const std::int32_t* k = &vert.k[static_cast<std::size_t>(yy) * vert.ksize];
    std::uint8_t* row = out.data() + static_cast<std::size_t>(yy) * source.width * 3;
    for (int xx = 0; xx < source.width; ++xx) {
      std::int64_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int y = 0; y < vert.count[yy]; ++y) {
        const std::uint8_t* p = source.at(xx, y + vert.first[yy]);
        s0 += p[0] * k[y];
        s1 += p[1] * k[y];
        s2 += p[2] * k[y];
      }
      row[xx * 3 + 0] = clip8(s0);
      row[xx * 3 + 1] = clip8(s1);
      row[xx * 3 + 2] = clip8(s2);
    }
  }
  return out;
}

// NEAREST does not go through the resampler: _imaging.c's _resize hands it to ImagingTransform as an affine
// scale (Geometry.c ImagingScaleAffine). The source position advances by repeated addition in double, as there,
// so its rounding is Pillow's; a position past the last source pixel leaves the output pixel 0 (its `fill`).
std::vector<std::uint8_t> nearest(const Pixels& in, int out_width, int out_height) {
  const double a0 = static_cast<double>(static_cast<float>(in.width)) / out_width;
  const double a4 = static_cast<double>(static_cast<float>(in.height)) / out_height;
  std::vector<int> xin(out_width, -1);
  double xo = 0.0 + a0 * 0.5;
  for (int x = 0; x < out_width; ++x) {
    const int xi = xo < 0.0 ? -1 : static_cast<int>(xo);
    if (xi >= 0 && xi < in.width) xin[x] = xi;
    xo += a0;
  }
  std::vector<std::uint8_t> out(static_cast<std::size_t>(out_width) * out_height * 3, 0);
  double yo = 0.0 + a4 * 0.5;
  for (int y = 0; y < out_height; ++y) {
    const int yi = yo < 0.0 ? -1 : static_cast<int>(yo);
    if (yi >= 0 && yi < in.height) {
      std::uint8_t* row = out.data() + static_cast<std::size_t>(y) * out_width * 3;
      for (int x = 0; x < out_width; ++x)
        if (xin[x] >= 0) std::memcpy(row + x * 3, in.at(xin[x], yi), 3);
    }
    yo += a4;
  }
  return out;
}

void check_image(const char* op, const std::uint8_t* data, std::int64_t width, std::int64_t height) {
  if (width < 1 || height < 1 || width > kMaxImageSide || height > kMaxImageSide)
    throw Error(std::string(op) + ": the image is " + std::to_string(width) + " × " + std::to_string(height) +
                " pixels; each side must be from 1 to " + std::to_string(kMaxImageSide));
  if (!data) throw Error(std::string(op) + ": the image has no pixel data");
}

void check_target(const char* op, const std::string& what, std::int64_t width, std::int64_t height) {
  if (width < 1 || height < 1 || width > kMaxTargetSide || height > kMaxTargetSide)
    throw Error(std::string(op) + ": " + what + " " + std::to_string(width) + " × " + std::to_string(height) +
                " pixels; each side must be from 1 to " + std::to_string(kMaxTargetSide));
}

// Bytes one resize holds at most: the horizontal pass's rows, the output, and each pass's coefficients. A pass
// from `in` to `out` pixels keeps out·ksize weights of 4 bytes, ksize ≤ 6·in/out + 3 (LANCZOS's support of 3,
// widened by in/out when downscaling) or 7 when upscaling, so ≤ 6·in + 9·out; plus 8 bytes of bounds per output
// pixel and one row of ksize doubles.
double resize_bytes(std::int64_t width, std::int64_t height, std::int64_t out_width, std::int64_t out_height) {
  const double temp = static_cast<double>(out_width) * height * 3;
  const double out = static_cast<double>(out_width) * out_height * 3;
  auto pass = [](double from, double to) { return 4 * (6 * from + 9 * to) + 8 * to + 8 * (6 * from + 9); };
  return temp + out + pass(width, out_width) + pass(height, out_height);
}

std::vector<std::uint8_t> resize_pixels(const Pixels& in, int out_width, int out_height, Resample resample) {
  // Image.resize returns a copy when the size is unchanged, for every filter.
  if (out_width == in.width && out_height == in.height) {
    std::vector<std::uint8_t> copy(static_cast<std::size_t>(in.width) * in.height * 3);
    for (int y = 0; y < in.height; ++y)
      for (int x = 0; x < in.width; ++x)
        std::memcpy(&copy[(static_cast<std::size_t>(y) * in.width + x) * 3], in.at(x, y), 3);
    return copy;
  }
  if (resample == Resample::NEAREST) return nearest(in, out_width, out_height);
  return resample_passes(in, out_width, out_height, filter_of(resample));
}

// ---------------------------------------------------------------------------------------------------------------
// preprocessor_config.json

// models/config.hpp's readers, with their messages naming this file and where the field sits ("size.height").
template <typename Read>
auto in_file(const std::string& parent, Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error& e) {
    std::string message = e.what();
    const std::string theirs = "config.json: ";
    if (message.compare(0, theirs.size(), theirs) == 0) message.erase(0, theirs.size());
    throw Error(std::string(kFile) + ": " + parent + message);
  }
}

[[noreturn]] void fail(const std::string& field, const std::string& what) {
  throw Error(std::string(kFile) + ": " + field + " " + what);
}

std::int64_t side(const Json& v, const std::string& field) {
  if (!v.is_number() || std::floor(v.number()) != v.number() || v.number() < 1 ||
      v.number() > static_cast<double>(kMaxTargetSide))
    fail(field, "must be a whole number from 1 to " + std::to_string(kMaxTargetSide));
  return static_cast<std::int64_t>(v.number());
}

// The four processors as transformers 4.x sets them up when a field is absent.
enum class Kind { vit, deit, bit, clip };

struct Defaults {
  Kind kind;
  const char* name;
  Size size;
  bool square;  // what a bare int size means (get_size_dict's default_to_square): {n, n}, else {shortest_edge: n}
  Resample resample;
  bool crops;  // preprocess has a centre crop (default on, crop_size 224 × 224)
  std::array<double, 3> mean, std;
  bool convert_rgb;
};

constexpr std::array<double, 3> kImagenetStandardMean{0.5, 0.5, 0.5}, kImagenetStandardStd{0.5, 0.5, 0.5};
constexpr std::array<double, 3> kClipMean{0.48145466, 0.4578275, 0.40821073};
constexpr std::array<double, 3> kClipStd{0.26862954, 0.26130258, 0.27577711};

const Defaults kProcessors[] = {
    {Kind::vit,
     "ViTImageProcessor",
     {224, 224, 0, 0},
     true,
     Resample::BILINEAR,
     false,
     kImagenetStandardMean,
     kImagenetStandardStd,
     false},
    {Kind::deit,
     "DeiTImageProcessor",
     {256, 256, 0, 0},
     true,
     Resample::BICUBIC,
     true,
     kImagenetStandardMean,
     kImagenetStandardStd,
     false},
    // BiT's defaults are CLIP's, OpenAI's mean and std included; DINOv2's file overrides them with ImageNet's.
    {Kind::bit, "BitImageProcessor", {0, 0, 224, 0}, false, Resample::BICUBIC, true, kClipMean, kClipStd, true},
    {Kind::clip, "CLIPImageProcessor", {0, 0, 224, 0}, false, Resample::BICUBIC, true, kClipMean, kClipStd, true},
};

// image_processor_type, else feature_extractor_type (older files: ViTFeatureExtractor, a subclass that only
// warns), with the Fast names (torchvision's path; AttnScope follows Pillow's) and transformers 5's Pil names.
const Defaults& processor_of(const Json& file) {
  const char* key = file.find("image_processor_type") && !file.find("image_processor_type")->is_null()
                        ? "image_processor_type"
                        : "feature_extractor_type";
  const std::string type = in_file("", [&] { return optional_string(file, key, "ViTImageProcessor"); });
  std::string name = type;
  const std::string feature_extractor = "FeatureExtractor";
  if (name.size() > feature_extractor.size() &&
      name.compare(name.size() - feature_extractor.size(), std::string::npos, feature_extractor) == 0)
    name.replace(name.size() - feature_extractor.size(), std::string::npos, "ImageProcessor");
  for (const char* suffix : {"Fast", "Pil"}) {
    const std::size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) name.erase(name.size() - n);
  }
  for (const Defaults& d : kProcessors)
    if (name == d.name) return d;
  fail(key, quote(type) +
                " is not a processor AttnScope reads; it reads ViTImageProcessor, DeiTImageProcessor, "
                "BitImageProcessor and CLIPImageProcessor (and their Fast and FeatureExtractor names)");
}

std::string key_list(const Json& object) {
  std::string keys;
  for (const auto& [k, v] : object.object()) keys += (keys.empty() ? "" : ", ") + quote(k);
  return "{" + keys + "}";
}

// transformers' get_size_dict: an int (square or shortest edge, by `square`), [height, width], or an object with
// exactly the keys {height, width}, {shortest_edge}, {shortest_edge, longest_edge} or {longest_edge}.
Size read_size(const Json& file, const char* key, const Size& fallback, bool square) {
  const Json* v = file.find(key);
  if (!v || v->is_null()) return fallback;
  Size s;
  if (v->is_number()) {
    const std::int64_t n = side(*v, key);
    if (square) {
      s.height = s.width = n;
    } else {
      s.shortest_edge = n;
    }
  } else if (v->is_array() && v->array().size() == 2) {
    s.height = side(v->array()[0], std::string(key) + "[0]");
    s.width = side(v->array()[1], std::string(key) + "[1]");
  } else if (v->is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, value] : v->object()) keys.insert(k);
    const std::set<std::set<std::string>> valid = {
        {"height", "width"}, {"shortest_edge"}, {"shortest_edge", "longest_edge"}, {"longest_edge"}};
    if (!valid.count(keys))
      fail(key, "must have the keys {height, width}, {shortest_edge} or {shortest_edge, longest_edge}; it has " +
                    key_list(*v));
    for (const auto& [k, value] : v->object()) {
      const std::int64_t n = side(value, std::string(key) + "." + k);
      if (k == "height") s.height = n;
      if (k == "width") s.width = n;
      if (k == "shortest_edge") s.shortest_edge = n;
      if (k == "longest_edge") s.longest_edge = n;
    }
  } else {
    fail(key, "must be a whole number, [height, width] or an object such as {\"height\": 224, \"width\": 224}");
  }
  return s;
}

// image_mean or image_std: one number for every channel, or one for each of R, G, B.
std::array<double, 3> read_channels(const Json& file, const char* key, const std::array<double, 3>& fallback,
                                    bool positive) {
  const Json* v = file.find(key);
  if (!v || v->is_null()) return fallback;
  const std::string range = positive ? "a number above 0 and at most 1000" : "a number from -1000 to 1000";
  auto number = [&](const Json& x, const std::string& field) {
    const double n = x.is_number() ? x.number() : NAN;
    if (!(positive ? n > 0 && n <= 1000 : n >= -1000 && n <= 1000)) fail(field, "must be " + range);
    return n;
  };
  if (v->is_number()) {
    const double n = number(*v, key);
    return {n, n, n};
  }
  if (!v->is_array() || v->array().size() != 3)
    fail(key, "must be " + range + " or a list of three, one for each of R, G and B");
  std::array<double, 3> out{};
  for (int c = 0; c < 3; ++c) out[c] = number(v->array()[c], std::string(key) + "[" + std::to_string(c) + "]");
  return out;
}

bool fixed(const Size& s) { return s.height > 0 && s.width > 0; }

}  // namespace

Preprocess read_preprocess(const Json* file, std::int64_t image_height, std::int64_t image_width) {
  Preprocess p;  // ViTImageProcessor's defaults
  if (!file) {
    check_target("read_preprocess", "the model's image size is", image_width, image_height);
    p.size = Size{image_height, image_width, 0, 0};
    return p;
  }
  if (!file->is_object()) throw Error(std::string(kFile) + ": the file is not a JSON object");
  const Json& f = *file;
  const Defaults& d = processor_of(f);
  p.processor = d.name;
  p.do_resize = in_file("", [&] { return optional_bool(f, "do_resize", true); });
  p.size = read_size(f, "size", d.size, d.square);
  p.resample = static_cast<Resample>(
      in_file("", [&] { return optional_int(f, "resample", static_cast<int>(d.resample), 0, 5); }));
  if (p.do_resize) {
    // ViT's and DeiT's resize takes (height, width) only; BiT's and CLIP's the shortest edge or (height, width).
    if ((d.kind == Kind::vit || d.kind == Kind::deit) && !fixed(p.size))
      fail("size", std::string("must be {height, width} for ") + d.name + ", which resizes to a fixed size");
    if (!fixed(p.size) && p.size.shortest_edge == 0)
      fail("size", std::string("must be {height, width} or {shortest_edge} for ") + d.name);
  }
  // ViT's preprocess has no crop: transformers keeps do_center_crop and crop_size as attributes it never reads.
  if (d.crops) {
    p.do_center_crop = in_file("", [&] { return optional_bool(f, "do_center_crop", true); });
    const Size crop = read_size(f, "crop_size", Size{224, 224, 0, 0}, true);
    if (p.do_center_crop && !fixed(crop)) fail("crop_size", "must be {height, width}");
    p.crop_height = crop.height;
    p.crop_width = crop.width;
  }
  p.do_rescale = in_file("", [&] { return optional_bool(f, "do_rescale", true); });
  p.rescale_factor = in_file("", [&] { return optional_number(f, "rescale_factor", 1.0 / 255, 0, 1000); });
  p.do_normalize = in_file("", [&] { return optional_bool(f, "do_normalize", true); });
  p.image_mean = read_channels(f, "image_mean", d.mean, false);
  p.image_std = read_channels(f, "image_std", d.std, true);
  if (d.kind != Kind::deit)  // DeiT's processor has no do_convert_rgb
    p.do_convert_rgb = in_file("", [&] { return optional_bool(f, "do_convert_rgb", d.convert_rgb); });
  return p;
}

std::vector<std::uint8_t> resize(const std::uint8_t* rgb, std::int64_t width, std::int64_t height,
                                 std::int64_t out_width, std::int64_t out_height, Resample resample) {
  check_image("resize", rgb, width, height);
  check_target("resize", "the target is", out_width, out_height);
  if (static_cast<int>(resample) < 0 || static_cast<int>(resample) > 5)
    throw Error("resize: resample " + std::to_string(static_cast<int>(resample)) + " is not one of Pillow's (0 to 5)");
  check_budget("resize", resize_bytes(width, height, out_width, out_height));
  const Pixels in{rgb, static_cast<int>(width), static_cast<int>(height), 3};
  return resize_pixels(in, static_cast<int>(out_width), static_cast<int>(out_height), resample);
}

Prepared preprocess(const Preprocess& config, const std::uint8_t* rgba, std::int64_t width, std::int64_t height) {
  check_image("preprocess", rgba, width, height);
  Prepared result;
  result.resized_width = width;
  result.resized_height = height;
  if (config.do_resize) {
    if (config.size.shortest_edge > 0) {
      // get_resize_output_image_size(default_to_square=False): the long side truncated, not rounded.
      const std::int64_t short_side = std::min(width, height), long_side = std::max(width, height);
      const std::int64_t new_short = config.size.shortest_edge;
      const auto new_long = static_cast<std::int64_t>(static_cast<double>(new_short * long_side) / short_side);
      result.resized_width = width <= height ? new_short : new_long;
      result.resized_height = width <= height ? new_long : new_short;
    } else {
      result.resized_width = config.size.width;
      result.resized_height = config.size.height;
    }
    check_target("preprocess",
                 "resizing the " + std::to_string(width) + " × " + std::to_string(height) + " image gives",
                 result.resized_width, result.resized_height);
  }
  const std::int64_t out_width = config.do_center_crop ? config.crop_width : result.resized_width;
  const std::int64_t out_height = config.do_center_crop ? config.crop_height : result.resized_height;
  check_target("preprocess", "the model's input would be", out_width, out_height);
  check_budget("preprocess",
               (config.do_resize ? resize_bytes(width, height, result.resized_width, result.resized_height) : 0.0) +
                   12.0 * out_width * out_height);

  const Pixels image{rgba, static_cast<int>(width), static_cast<int>(height), 4};
  std::vector<std::uint8_t> resized;
  Pixels source = image;
  if (config.do_resize) {
    resized = resize_pixels(image, static_cast<int>(result.resized_width), static_cast<int>(result.resized_height),
                            config.resample);
    source = Pixels{resized.data(), static_cast<int>(result.resized_width), static_cast<int>(result.resized_height), 3};
  }

  // Each byte's value after rescale (float64 product cast to float32) and normalize (float32 throughout, with the
  // mean and std cast to float32), as transformers' numpy path computes them.
  std::array<std::array<float, 256>, 3> value{};
  for (int c = 0; c < 3; ++c) {
    const float mean = static_cast<float>(config.image_mean[c]);
    const float deviation = static_cast<float>(config.image_std[c]);
    for (int v = 0; v < 256; ++v) {
      float x = config.do_rescale ? static_cast<float>(v * config.rescale_factor) : static_cast<float>(v);
      if (config.do_normalize) x = (x - mean) / deviation;
      value[c][v] = x;
    }
  }

  // center_crop: top = (height - crop) // 2 where the crop fits; where it does not, the image sits at
  // ceil((crop - height) / 2) in zeros. Both are floor((height - crop) / 2) as a source offset.
  auto floor_half = [](std::int64_t d) { return d >= 0 ? d / 2 : -((-d + 1) / 2); };
  const std::int64_t top = floor_half(source.height - out_height), left = floor_half(source.width - out_width);
  result.pixels = Tensor::unfilled({3, out_height, out_width});
  float* out = result.pixels.data.data();
  const std::size_t plane = static_cast<std::size_t>(out_width) * out_height;
  for (std::int64_t y = 0; y < out_height; ++y) {
    const std::int64_t sy = y + top;
    for (std::int64_t x = 0; x < out_width; ++x) {
      const std::int64_t sx = x + left;
      const bool inside = sy >= 0 && sy < source.height && sx >= 0 && sx < source.width;
      const std::uint8_t* p = inside ? source.at(static_cast<int>(sx), static_cast<int>(sy)) : nullptr;
      const std::size_t i = static_cast<std::size_t>(y) * out_width + x;
      for (int c = 0; c < 3; ++c) out[c * plane + i] = value[c][p ? p[c] : 0];
    }
  }
  return result;
}

}  // namespace attnscope::vision
