// Image preprocessing against Debian's Pillow (python3-pil) and transformers' numpy path, as
// tests/reference/pil_reference.py computes them: resize byte for byte at odd sizes in every resample mode, and
// each processor's pixel_values from preprocessor_config.json files like the Hub's. Skipped without python3 + PIL.
#include "vision/image.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "io/json.hpp"
#include "test_util.hpp"

namespace attnscope::vision {
namespace {

using testing::expect_error;

// The test images, made as pil_reference.py makes them (its docstring defines the patterns): [height, width, 4].
std::vector<std::uint8_t> make_image(std::int64_t width, std::int64_t height, const std::string& pattern,
                                     std::uint32_t seed) {
  std::vector<std::uint8_t> img(static_cast<std::size_t>(width * height * 4), 255);
  std::uint32_t s = seed;
  auto draw = [&s] {
    s = s * 1664525u + 1013904223u;
    return static_cast<std::uint8_t>(s >> 24);
  };
  for (std::int64_t y = 0; y < height; ++y)
    for (std::int64_t x = 0; x < width; ++x) {
      std::uint8_t* p = &img[static_cast<std::size_t>((y * width + x) * 4)];
      if (pattern == "gradient") {
        p[0] = static_cast<std::uint8_t>(x * 255 / std::max<std::int64_t>(width - 1, 1));
        p[1] = static_cast<std::uint8_t>(y * 255 / std::max<std::int64_t>(height - 1, 1));
        p[2] = static_cast<std::uint8_t>((x + y) * 255 / std::max<std::int64_t>(width + height - 2, 1));
      } else if (pattern == "noise") {
        for (int c = 0; c < 3; ++c) p[c] = draw();
      } else if (pattern == "checker") {
        const std::int64_t cell = 1 + seed % 5;
        const std::uint8_t v = ((x / cell + y / cell) & 1) ? 255 : 0;
        p[0] = v;
        p[1] = static_cast<std::uint8_t>(255 - v);
        p[2] = v;
      } else if (pattern == "grey") {
        p[0] = p[1] = p[2] = draw();
      } else if (pattern == "alpha") {
        for (int c = 0; c < 4; ++c) p[c] = draw();
      }
    }
  return img;
}

std::vector<std::uint8_t> drop_alpha(const std::vector<std::uint8_t>& rgba) {
  std::vector<std::uint8_t> rgb(rgba.size() / 4 * 3);
  for (std::size_t i = 0; i < rgba.size() / 4; ++i)
    for (int c = 0; c < 3; ++c) rgb[i * 3 + c] = rgba[i * 4 + c];
  return rgb;
}

std::vector<std::uint8_t> from_hex(const std::string& hex) {
  std::vector<std::uint8_t> out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

bool have_pillow() {
  static const bool ok = std::system("/usr/bin/python3 -c 'import PIL, numpy' >/dev/null 2>&1") == 0;
  return ok;
}

// One image and what to do with it: `task` is the job's "resize_only" or "preprocess" member, as JSON.
struct Job {
  std::int64_t width, height;
  std::string pattern;
  std::uint32_t seed;
  std::string kind;  // "resize_only" or "preprocess"
  std::string task;
  std::string label() const {
    return std::to_string(width) + "x" + std::to_string(height) + " " + pattern + " " + kind + " " + task;
  }
};

// pil_reference.py's results for `jobs`, in order.
Json reference(const std::vector<Job>& jobs) {
  std::string input = "[";
  for (const Job& j : jobs)
    input += (input.size() > 1 ? ",\n" : "") + std::string("{\"width\": ") + std::to_string(j.width) +
             ", \"height\": " + std::to_string(j.height) + ", \"pattern\": \"" + j.pattern +
             "\", \"seed\": " + std::to_string(j.seed) + ", \"" + j.kind + "\": " + j.task + "}";
  input += "]";
  char path[] = "/tmp/attnscope_pil_jobs_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, input.data(), input.size()), static_cast<ssize_t>(input.size()));
  close(fd);
  const std::string script = std::string(ATTNSCOPE_GOLDEN_DIR) + "/../reference/pil_reference.py";
  FILE* pipe = popen(("/usr/bin/python3 '" + script + "' < '" + path + "'").c_str(), "r");
  std::string output;
  char buffer[1 << 16];
  for (std::size_t n; pipe && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = pipe ? pclose(pipe) : -1;
  unlink(path);
  EXPECT_EQ(status, 0) << "pil_reference.py failed";
  const Json out = Json::parse(output, "pil_reference.py's output");
  EXPECT_EQ(out.find("results")->array().size(), jobs.size());
  return out;
}

Resample resample_of(const Json& task) { return static_cast<Resample>(task.find("resample")->number()); }

// A resize job run here and compared with Pillow's bytes (`result`, the reference's entry for it).
struct Compared {
  Resample mode;
  std::size_t bytes = 0, pillow_bytes = 0;
  int max_difference = 0, differing = 0;
};
Compared compare_resize(const Job& j, const Json& result) {
  const Json task = Json::parse(j.task, "task");
  const auto rgb = drop_alpha(make_image(j.width, j.height, j.pattern, j.seed));
  const auto ours = resize(rgb.data(), j.width, j.height, static_cast<std::int64_t>(task.find("width")->number()),
                           static_cast<std::int64_t>(task.find("height")->number()), resample_of(task));
  const auto pillow = from_hex(result.find("rgb")->string());
  Compared c{resample_of(task), ours.size(), pillow.size()};
  for (std::size_t b = 0; b < ours.size() && b < pillow.size(); ++b) {
    const int d = std::abs(int(ours[b]) - int(pillow[b]));
    c.max_difference = std::max(c.max_difference, d);
    c.differing += d != 0;
  }
  return c;
}

constexpr const char* kModes[] = {"NEAREST", "LANCZOS", "BILINEAR", "BICUBIC", "BOX", "HAMMING"};

TEST(Image, ResizeMatchesPillowByteForByte) {
  if (!have_pillow()) GTEST_SKIP() << "no /usr/bin/python3 with PIL and numpy";
  struct Case {
    std::int64_t w, h, out_w, out_h;
    const char* pattern;
  };
  const Case cases[] = {{1, 1, 1, 1, "noise"},         {1, 1, 5, 3, "noise"},           {3, 7, 2, 2, "alpha"},
                        {3, 7, 7, 3, "checker"},       {37, 23, 16, 16, "noise"},       {37, 23, 101, 57, "checker"},
                        {97, 131, 64, 48, "gradient"}, {97, 131, 97, 50, "noise"},      {97, 131, 40, 131, "grey"},
                        {640, 427, 224, 224, "noise"}, {640, 427, 336, 224, "checker"}, {13, 11, 224, 224, "noise"},
                        {13, 11, 224, 224, "checker"}, {101, 3, 7, 1, "alpha"},         {4000, 5, 3, 2, "noise"},
                        {5, 3000, 2, 7, "checker"}};
  std::vector<Job> jobs;
  for (const Case& c : cases)
    for (int mode = 0; mode < 6; ++mode)
      jobs.push_back({c.w, c.h, c.pattern, static_cast<std::uint32_t>(7 * mode + c.w), "resize_only",
                      "{\"width\": " + std::to_string(c.out_w) + ", \"height\": " + std::to_string(c.out_h) +
                          ", \"resample\": " + std::to_string(mode) + "}"});
  const Json ref = reference(jobs);
  int worst_per_mode[6] = {};
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const Compared c = compare_resize(j, ref.find("results")->array()[i]);
    ASSERT_EQ(c.bytes, c.pillow_bytes) << j.label();
    const int mode = static_cast<int>(c.mode), max_difference = c.max_difference, differing = c.differing;
    worst_per_mode[mode] = std::max(worst_per_mode[mode], max_difference);
    EXPECT_EQ(max_difference, 0) << j.label() << ": " << differing << " bytes differ from Pillow's";
  }
  std::cout << "Pillow " << ref.find("pillow")->string() << ", " << jobs.size()
            << " resizes; largest difference from Pillow, by mode:";
  for (int mode = 0; mode < 6; ++mode) std::cout << " " << kModes[mode] << " " << worst_per_mode[mode];
  std::cout << "\n";
}

// Random small sizes, up and down in each direction: the windows' edges, 1-pixel sides, NEAREST's positions.
TEST(Image, ResizeMatchesPillowAtRandomSmallSizes) {
  if (!have_pillow()) GTEST_SKIP() << "no /usr/bin/python3 with PIL and numpy";
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> in_side(1, 40), out_side(1, 70), mode(0, 5);
  const char* patterns[] = {"noise", "checker", "gradient", "grey"};
  std::vector<Job> jobs;
  for (std::uint32_t i = 0; i < 240; ++i)
    jobs.push_back({in_side(rng), in_side(rng), patterns[i % 4], i, "resize_only",
                    "{\"width\": " + std::to_string(out_side(rng)) + ", \"height\": " + std::to_string(out_side(rng)) +
                        ", \"resample\": " + std::to_string(mode(rng)) + "}"});
  const Json ref = reference(jobs);
  int worst = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const Compared c = compare_resize(j, ref.find("results")->array()[i]);
    ASSERT_EQ(c.bytes, c.pillow_bytes) << j.label();
    const int max_difference = c.max_difference;
    worst = std::max(worst, max_difference);
    EXPECT_EQ(max_difference, 0) << j.label();
  }
  std::cout << jobs.size() << " random resizes; largest difference from Pillow " << worst << "\n";
}

// preprocessor_config.json as the Hub's repositories write them.
constexpr const char* kVit =  // google/vit-base-patch16-224 (and facebook/dino-vits16, with ImageNet's mean and std)
    R"({"do_normalize": true, "do_resize": true, "feature_extractor_type": "ViTFeatureExtractor",
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 2, "size": 224})";
constexpr const char* kDeit =  // facebook/deit-tiny-distilled-patch16-224
    R"({"crop_size": 224, "do_center_crop": true, "do_normalize": true, "do_resize": true,
        "feature_extractor_type": "DeiTFeatureExtractor", "image_mean": [0.485, 0.456, 0.406],
        "image_std": [0.229, 0.224, 0.225], "resample": 3, "size": 256})";
constexpr const char* kDinov2 =  // facebook/dinov2-small
    R"({"crop_size": {"height": 224, "width": 224}, "do_center_crop": true, "do_convert_rgb": true,
        "do_normalize": true, "do_rescale": true, "do_resize": true, "image_mean": [0.485, 0.456, 0.406],
        "image_processor_type": "BitImageProcessor", "image_std": [0.229, 0.224, 0.225], "resample": 3,
        "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 256}})";
constexpr const char* kClip =  // openai/clip-vit-base-patch32
    R"({"crop_size": 224, "do_center_crop": true, "do_normalize": true, "do_resize": true,
        "feature_extractor_type": "CLIPFeatureExtractor", "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711], "resample": 3, "size": 224})";

TEST(Image, PreprocessMatchesTransformers) {
  if (!have_pillow()) GTEST_SKIP() << "no /usr/bin/python3 with PIL and numpy";
  const std::vector<Job> jobs = {
      {640, 427, "noise", 1, "preprocess", kVit},
      {13, 11, "gradient", 2, "preprocess", kVit},
      {1, 1, "noise", 3, "preprocess", kVit},
      {3, 7, "alpha", 4, "preprocess", kVit},
      {97, 131, "checker", 5, "preprocess", kDeit},
      {640, 427, "alpha", 6, "preprocess", kDeit},
      {640, 427, "noise", 7, "preprocess", kDinov2},
      {427, 640, "gradient", 8, "preprocess", kDinov2},
      {37, 23, "noise", 9, "preprocess", kDinov2},
      {13, 11, "checker", 10, "preprocess", kDinov2},
      {1, 1, "grey", 11, "preprocess", kDinov2},
      {640, 427, "gradient", 12, "preprocess", kClip},
      {3, 7, "noise", 13, "preprocess", kClip},
      {97, 131, "grey", 14, "preprocess", kClip},
      // Class defaults: ViT's with no fields at all, BiT's OpenAI mean and std, DeiT's 256 → 224.
      {97, 131, "noise", 15, "preprocess", "{}"},
      {97, 131, "noise", 16, "preprocess", R"({"image_processor_type": "BitImageProcessor"})"},
      {97, 131, "noise", 17, "preprocess", R"({"image_processor_type": "DeiTImageProcessorFast"})"},
      // Non-square: a fixed size for CLIP, [height, width], a crop wider than tall, crops larger than the image.
      {97, 131, "gradient", 18, "preprocess",
       R"({"image_processor_type": "CLIPImageProcessor", "size": {"height": 50, "width": 70}, "crop_size": [40, 64]})"},
      {97, 131, "noise", 19, "preprocess",
       R"({"image_processor_type": "BitImageProcessor", "size": 128, "crop_size": {"height": 100, "width": 160}})"},
      {37, 23, "noise", 20, "preprocess",
       R"({"image_processor_type": "BitImageProcessor", "do_resize": false, "crop_size": {"height": 48, "width": 64}})"},
      {37, 23, "checker", 21, "preprocess",
       R"({"image_processor_type": "CLIPImageProcessor", "do_resize": false, "crop_size": {"height": 10, "width": 60}})"},
      {37, 23, "noise", 22, "preprocess", R"({"image_processor_type": "DeiTImageProcessor", "size": [31, 17]})"},
      // Rescale and normalize switched off, one by one; scalar mean and std; SigLIP-style 1/127.5.
      {37, 23, "noise", 23, "preprocess", R"({"do_rescale": false, "image_mean": 127.5, "image_std": 64})"},
      {37, 23, "noise", 24, "preprocess", R"({"do_normalize": false})"},
      {37, 23, "noise", 25, "preprocess", R"({"do_normalize": false, "do_rescale": false, "size": 40})"},
      {37, 23, "noise", 26, "preprocess",
       R"({"rescale_factor": 0.00784313725490196, "image_mean": 1, "image_std": 1})"},
      // The other filters, through the processor.
      {97, 131, "checker", 27, "preprocess", R"({"resample": 0, "size": {"height": 60, "width": 45}})"},
      {97, 131, "checker", 28, "preprocess", R"({"resample": 1, "size": {"height": 60, "width": 45}})"},
      {13, 11, "noise", 29, "preprocess", R"({"resample": 0})"},
  };
  const Json ref = reference(jobs);
  double worst = 0;
  int exact = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const Json file = Json::parse(j.task, "preprocessor_config.json");
    const Preprocess config = read_preprocess(&file, 224, 224);
    const auto rgba = make_image(j.width, j.height, j.pattern, j.seed);
    const Prepared ours = preprocess(config, rgba.data(), j.width, j.height);
    const Json& r = ref.find("results")->array()[i];
    EXPECT_EQ(ours.resized_width, static_cast<std::int64_t>(r.find("resized_width")->number())) << j.label();
    EXPECT_EQ(ours.resized_height, static_cast<std::int64_t>(r.find("resized_height")->number())) << j.label();
    const auto bytes = from_hex(r.find("pixels")->string());
    ASSERT_EQ(bytes.size(), ours.pixels.data.size() * 4) << j.label();
    const std::int64_t plane = ours.pixels.shape[1] * ours.pixels.shape[2];
    double max_difference = 0;
    bool within = true;
    for (std::size_t k = 0; k < ours.pixels.data.size(); ++k) {
      float theirs;
      std::memcpy(&theirs, &bytes[k * 4], 4);
      const int c = static_cast<int>(static_cast<std::int64_t>(k) / plane);
      const double scale = config.do_normalize ? config.image_std[c] : 1.0;
      const double tolerance = (config.do_rescale ? config.rescale_factor : 1.0) / scale + 1e-5;
      const double d = std::fabs(double(ours.pixels.data[k]) - double(theirs));
      max_difference = std::max(max_difference, d);
      within = within && d <= tolerance;
    }
    worst = std::max(worst, max_difference);
    exact += max_difference == 0;
    EXPECT_TRUE(within) << j.label() << ": off by up to " << max_difference;
  }
  std::cout << jobs.size() << " preprocessed images; " << exact << " equal to transformers' float32 values; "
            << "largest difference " << worst << "\n";
}

TEST(Image, ReadsEachProcessorsDefaults) {
  const Preprocess none = read_preprocess(nullptr, 384, 320);  // no file: ViT's defaults at the model's size
  EXPECT_EQ(none.processor, "ViTImageProcessor");
  EXPECT_EQ(none.size.height, 384);
  EXPECT_EQ(none.size.width, 320);
  EXPECT_EQ(none.resample, Resample::BILINEAR);
  EXPECT_FALSE(none.do_center_crop);
  EXPECT_EQ(none.image_mean[0], 0.5);

  auto read = [](const char* text) {
    const Json file = Json::parse(text, "preprocessor_config.json");
    return read_preprocess(&file, 224, 224);
  };
  const Preprocess dinov2 = read(kDinov2);
  EXPECT_EQ(dinov2.processor, "BitImageProcessor");
  EXPECT_EQ(dinov2.size.shortest_edge, 256);
  EXPECT_EQ(dinov2.resample, Resample::BICUBIC);
  EXPECT_TRUE(dinov2.do_center_crop);
  EXPECT_EQ(dinov2.image_std[2], 0.225);
  const Preprocess clip = read(kClip);  // a bare int is CLIP's shortest edge, but DeiT's square
  EXPECT_EQ(clip.processor, "CLIPImageProcessor");
  EXPECT_EQ(clip.size.shortest_edge, 224);
  EXPECT_EQ(clip.crop_height, 224);
  EXPECT_TRUE(clip.do_convert_rgb);
  const Preprocess deit = read(kDeit);
  EXPECT_EQ(deit.size.height, 256);
  EXPECT_EQ(deit.size.shortest_edge, 0);
  const Preprocess bit = read(R"({"image_processor_type": "BitImageProcessorFast"})");
  EXPECT_EQ(bit.image_mean[0], 0.48145466);
  EXPECT_EQ(bit.size.shortest_edge, 224);
  // ViT reads no crop fields; longest_edge is read, and not applied.
  const Preprocess vit = read(R"({"do_center_crop": true, "crop_size": "anything"})");
  EXPECT_FALSE(vit.do_center_crop);
  const Preprocess longest =
      read(R"({"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 224, "longest_edge": 500}})");
  EXPECT_EQ(longest.size.longest_edge, 500);
}

TEST(Image, RefusesBadFieldsAndSizes) {
  auto read = [](const char* text) {
    const Json file = Json::parse(text, "preprocessor_config.json");
    return read_preprocess(&file, 224, 224);
  };
  expect_error([&] { read("[]"); }, "preprocessor_config.json: the file is not a JSON object");
  expect_error([&] { read(R"({"size": "224"})"); },
               "preprocessor_config.json: size must be a whole number, [height, width] or an object");
  expect_error([&] { read(R"({"size": {"height": 224}})"); },
               "preprocessor_config.json: size must have the keys {height, width}, {shortest_edge} or "
               "{shortest_edge, longest_edge}; it has {\"height\"}");
  expect_error([&] { read(R"({"size": {"shortest_edge": 224}})"); },
               "preprocessor_config.json: size must be {height, width} for ViTImageProcessor");
  expect_error([&] { read(R"({"image_processor_type": "CLIPImageProcessor", "size": {"longest_edge": 224}})"); },
               "size must be {height, width} or {shortest_edge} for CLIPImageProcessor");
  expect_error([&] { read(R"({"size": 0})"); }, "preprocessor_config.json: size must be a whole number from 1 to 8192");
  expect_error([&] { read(R"({"size": {"height": 224, "width": 9000}})"); },
               "preprocessor_config.json: size.width must be a whole number from 1 to 8192");
  expect_error([&] { read(R"({"size": [224, 22.5]})"); }, "size[1] must be a whole number");
  expect_error([&] { read(R"({"do_resize": "yes"})"); }, "preprocessor_config.json: do_resize must be true or false");
  expect_error([&] { read(R"({"resample": 7})"); },
               "preprocessor_config.json: resample must be a whole number from 0 to 5");
  expect_error([&] { read(R"({"rescale_factor": "1/255"})"); },
               "preprocessor_config.json: rescale_factor must be a number from 0");
  expect_error([&] { read(R"({"image_mean": [0.5, 0.5]})"); },
               "preprocessor_config.json: image_mean must be a number from -1000 to 1000 or a list of three");
  expect_error([&] { read(R"({"image_std": [0.5, 0, 0.5]})"); },
               "preprocessor_config.json: image_std[1] must be a number above 0");
  expect_error([&] { read(R"({"image_processor_type": "ConvNextImageProcessor"})"); },
               "preprocessor_config.json: image_processor_type \"ConvNextImageProcessor\" is not a processor");
  expect_error([&] { read(R"({"image_processor_type": 3})"); },
               "preprocessor_config.json: image_processor_type must be a string");
  expect_error([&] { read(R"({"image_processor_type": "BitImageProcessor", "crop_size": {"shortest_edge": 10}})"); },
               "preprocessor_config.json: crop_size must be {height, width}");
  expect_error([&] { read(R"({"image_processor_type": "DeiTImageProcessor", "do_center_crop": 1})"); },
               "preprocessor_config.json: do_center_crop must be true or false");
  expect_error([] { read_preprocess(nullptr, 0, 224); }, "the model's image size is 224 × 0 pixels");

  const std::vector<std::uint8_t> pixels(16384 * 4, 128);
  expect_error([&] { resize(pixels.data(), 0, 5, 10, 10, Resample::BILINEAR); },
               "resize: the image is 0 × 5 pixels; each side must be from 1 to 16384");
  expect_error([&] { resize(pixels.data(), 16385, 1, 10, 10, Resample::BILINEAR); }, "the image is 16385 × 1 pixels");
  expect_error([&] { resize(pixels.data(), 10, 10, 8193, 10, Resample::BICUBIC); },
               "resize: the target is 8193 × 10 pixels; each side must be from 1 to 8192");
  expect_error([&] { resize(pixels.data(), 10, 10, 10, 0, Resample::BICUBIC); }, "the target is 10 × 0 pixels");
  expect_error([&] { resize(pixels.data(), 10, 10, 5, 5, static_cast<Resample>(9)); }, "resample 9 is not one");
  expect_error([&] { resize(nullptr, 10, 10, 5, 5, Resample::BOX); }, "the image has no pixel data");

  const Json dinov2 = Json::parse(kDinov2, "preprocessor_config.json");
  const Preprocess shortest = read_preprocess(&dinov2, 224, 224);
  expect_error([&] { preprocess(shortest, pixels.data(), 1, 16384); },
               "preprocess: resizing the 1 × 16384 image gives 256 × 4194304 pixels; each side must be from 1 to 8192");
  expect_error([&] { preprocess(shortest, pixels.data(), 0, 16); }, "preprocess: the image is 0 × 16 pixels");
  Preprocess as_is;
  as_is.do_resize = false;
  expect_error([&] { preprocess(as_is, pixels.data(), 9000, 1); },
               "preprocess: the model's input would be 9000 × 1 pixels");
}

}  // namespace
}  // namespace attnscope::vision
