// A vision model's input from an image: preprocessor_config.json read as Hugging Face's image processors read it,
// and their Pillow path (resize, centre crop, rescale, normalize) done the same way, byte for byte.
//
// Followed from the source:
//   - Pillow 9.4.0 (Debian 12's python3-pil): Image.resize, _imaging.c _resize, libImaging/Resample.c (the filters,
//     the 8-bit fixed-point two-pass resample) and libImaging/Geometry.c ImagingScaleAffine (NEAREST);
//   - transformers 4.x: image_transforms.py (resize, get_resize_output_image_size, center_crop, rescale, normalize),
//     image_processing_utils.py (get_size_dict) and the ViT, DeiT, BiT and CLIP image processors' __init__ and
//     preprocess.
//
// Images are row-major, top row first: RGBA is 4 bytes a pixel, RGB 3.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/tensor.hpp"
#include "io/json.hpp"

namespace attnscope::vision {

// The largest image accepted, on either side, and the largest size an image is resized or cropped to: a model's
// input (DINOv2 at 518², ViT at 384²) is far below it, and 8192² RGB is 192 MiB.
inline constexpr std::int64_t kMaxImageSide = 16384;
inline constexpr std::int64_t kMaxTargetSide = 8192;

// Pillow's Image.Resampling, numbered as preprocessor_config.json's "resample" writes it.
enum class Resample : int { NEAREST = 0, LANCZOS = 1, BILINEAR = 2, BICUBIC = 3, BOX = 4, HAMMING = 5 };

// A size as preprocessor_config.json gives it, after transformers' get_size_dict: fixed {height, width}, or
// {shortest_edge}: the shorter side resized to it and the other to int(shortest_edge * long / short).
struct Size {
  std::int64_t height = 0, width = 0;  // fixed, when shortest_edge is 0
  std::int64_t shortest_edge = 0;
  // Read and checked, but not applied: the four processors' resize passes no max_size, so transformers 4.x
  // ignores it (transformers 5's backends would cap the longer side with it).
  std::int64_t longest_edge = 0;
};

// What the image processor does, with its class's defaults where preprocessor_config.json is silent.
struct Preprocess {
  // The class whose rules were applied: ViTImageProcessor, DeiTImageProcessor, BitImageProcessor (DINOv2's) or
  // CLIPImageProcessor. Their *Fast and *FeatureExtractor names map to these.
  std::string processor = "ViTImageProcessor";
  bool do_resize = true;
  Size size{224, 224, 0, 0};
  Resample resample = Resample::BILINEAR;
  bool do_center_crop = false;  // always false for ViT, whose preprocess has no crop
  std::int64_t crop_height = 224, crop_width = 224;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255;
  bool do_normalize = true;
  // As the file writes them; normalize() casts them to float32, as transformers' normalize does.
  std::array<double, 3> image_mean{0.5, 0.5, 0.5};
  std::array<double, 3> image_std{0.5, 0.5, 0.5};
  // Read for completeness: preprocess() always takes R, G and B and drops alpha (as PIL's convert("RGB")).
  bool do_convert_rgb = false;
};

// Reads preprocessor_config.json (`file`; null when the model has none: ViTImageProcessor's defaults at the
// model's image size, image_height × image_width). The class comes from image_processor_type, else
// feature_extractor_type, else is ViTImageProcessor. Every field it uses is checked; a wrong one is an Error
// naming preprocessor_config.json and the field.
Preprocess read_preprocess(const Json* file, std::int64_t image_height, std::int64_t image_width);

// Pillow 9.4's Image.resize((out_width, out_height), resample, reducing_gap=None) on an RGB image: `rgb` is
// [height, width, 3]; returns [out_height, out_width, 3]. Sides: 1..kMaxImageSide in, 1..kMaxTargetSide out.
std::vector<std::uint8_t> resize(const std::uint8_t* rgb, std::int64_t width, std::int64_t height,
                                 std::int64_t out_width, std::int64_t out_height, Resample resample);

struct Prepared {
  Tensor pixels;                                       // [3, H, W] float32: the model's pixel_values for this image
  std::int64_t resized_width = 0, resized_height = 0;  // after resize, before the crop
};

// The image processor's path on one image: `rgba` is [height, width, 4] (alpha dropped, not composited), resized
// with Pillow, centre-cropped (padded with zeros where the crop is larger), rescaled in float64 then cast to
// float32, and normalized in float32: transformers' ViT/DeiT/BiT/CLIP preprocess with the image read channels-last.
Prepared preprocess(const Preprocess& config, const std::uint8_t* rgba, std::int64_t width, std::int64_t height);

}  // namespace attnscope::vision
