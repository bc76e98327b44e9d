// A position table's patch rows resized to another grid, as torch.nn.functional.interpolate(mode="bicubic",
// align_corners=False) resizes them when Hugging Face's vision embeddings call it.
#pragma once

#include <cstdint>
#include <vector>

namespace attnscope::vision {

struct BicubicCall {
  // The ratio of input to output coordinates, per axis: in / out when interpolate is given a size, or
  // 1 / scale_factor when it is given a scale (as DINOv2's embeddings give (grid + 0.1) / side).
  double scale_y = 1.0, scale_x = 1.0;
  // antialias=True: a separable filter of support 2·max(scale, 1), Keys' cubic with a = −0.5, weights normalized
  // (torch's _upsample_bicubic2d_aa). False: the four-tap cubic convolution with a = −0.75 and indices clamped to the
  // edge (torch's upsample_bicubic2d).
  bool antialias = false;
};

// in [in_h, in_w, d] → [out_h, out_w, d], each of the d channels resized alone; float32 values, as the embeddings
// cast the table to float32 before they call it, with the weights and sums in double.
std::vector<float> bicubic(const float* in, std::int64_t in_h, std::int64_t in_w, std::int64_t d, std::int64_t out_h,
                           std::int64_t out_w, const BicubicCall& call);

}  // namespace attnscope::vision
