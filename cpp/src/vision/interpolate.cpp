#include "vision/interpolate.hpp"

#include <algorithm>
#include <cmath>

namespace attnscope::vision {

namespace {

// One output coordinate's taps along an axis: input indices and their weights.
struct Taps {
  std::vector<std::int64_t> index;
  std::vector<double> weight;
};

// Keys' cubic convolution kernel with parameter a, at distance x.
double cubic(double x, double a) {
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// upsample_bicubic2d: source = scale · (o + 0.5) − 0.5, four taps around floor(source), clamped to the edge.
Taps four_taps(std::int64_t o, std::int64_t in, double scale) {
  const double source = scale * (double(o) + 0.5) - 0.5;
  const double floor = std::floor(source);
  const double t = source - floor;
  Taps taps;
  for (int k = -1; k <= 2; ++k) {
    taps.index.push_back(std::clamp<std::int64_t>(static_cast<std::int64_t>(floor) + k, 0, in - 1));
    taps.weight.push_back(cubic(t - k, -0.75));
  }
  return taps;
}

// _upsample_bicubic2d_aa: the filter stretched by the scale when it shrinks, its taps those within its support,
// normalized to sum to 1.
Taps filtered_taps(std::int64_t o, std::int64_t in, double scale) {
  const double support = 2.0 * std::max(scale, 1.0);
  const double inverse = scale >= 1.0 ? 1.0 / scale : 1.0;
  const double center = scale * (double(o) + 0.5);
  const std::int64_t first = std::max<std::int64_t>(static_cast<std::int64_t>(center - support + 0.5), 0);
  const std::int64_t last = std::min<std::int64_t>(static_cast<std::int64_t>(center + support + 0.5), in);
  Taps taps;
  double total = 0.0;
  for (std::int64_t j = first; j < last; ++j) {
    const double w = cubic((double(j) - center + 0.5) * inverse, -0.5);
    taps.index.push_back(j);
    taps.weight.push_back(w);
    total += w;
  }
  for (double& w : taps.weight) w = total != 0.0 ? w / total : 0.0;
  return taps;
}

std::vector<Taps> axis(std::int64_t in, std::int64_t out, double scale, bool antialias) {
  std::vector<Taps> taps;
  for (std::int64_t o = 0; o < out; ++o)
    taps.push_back(antialias ? filtered_taps(o, in, scale) : four_taps(o, in, scale));
  return taps;
}

}  // namespace

std::vector<float> bicubic(const float* in, std::int64_t in_h, std::int64_t in_w, std::int64_t d, std::int64_t out_h,
                           std::int64_t out_w, const BicubicCall& call) {
  const std::vector<Taps> ys = axis(in_h, out_h, call.scale_y, call.antialias);
  const std::vector<Taps> xs = axis(in_w, out_w, call.scale_x, call.antialias);
  std::vector<float> out(static_cast<std::size_t>(out_h * out_w * d));
  std::vector<double> sum(static_cast<std::size_t>(d));
  for (std::int64_t oy = 0; oy < out_h; ++oy)
    for (std::int64_t ox = 0; ox < out_w; ++ox) {
      std::fill(sum.begin(), sum.end(), 0.0);
      const Taps& ty = ys[static_cast<std::size_t>(oy)];
      const Taps& tx = xs[static_cast<std::size_t>(ox)];
      for (std::size_t a = 0; a < ty.index.size(); ++a)
        for (std::size_t b = 0; b < tx.index.size(); ++b) {
          const double w = ty.weight[a] * tx.weight[b];
          const float* row = in + (ty.index[a] * in_w + tx.index[b]) * d;
          for (std::int64_t c = 0; c < d; ++c) sum[static_cast<std::size_t>(c)] += w * row[c];
        }
      float* dest = out.data() + (oy * out_w + ox) * d;
      for (std::int64_t c = 0; c < d; ++c) dest[c] = static_cast<float>(sum[static_cast<std::size_t>(c)]);
    }
  return out;
}

}  // namespace attnscope::vision
