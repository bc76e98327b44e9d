#include "audio/fft.hpp"

#include <algorithm>
#include <cmath>

namespace attnscope::audio {

namespace {

std::complex<double> root(std::int64_t k, std::int64_t n) {
  const double a = -2.0 * M_PI * static_cast<double>(k % n) / static_cast<double>(n);
  return {std::cos(a), std::sin(a)};
}

}  // namespace

Fft::Fft(std::int64_t n) : n_(n) {
  std::vector<std::int64_t> radices;
  std::int64_t left = n;
  for (std::int64_t r : {4, 2, 3, 5})
    while (left % r == 0) radices.push_back(r), left /= r;
  for (std::int64_t r = 7; left > 1; r += 2)
    while (left % r == 0) radices.push_back(r), left /= r;
  std::int64_t length = n, stride = 1;
  for (std::int64_t r : radices) {
    Stage s{r, length / r, stride, {}, {}};
    for (std::int64_t p = 0; p < s.m; ++p)
      for (std::int64_t u = 0; u < r; ++u) s.twiddles.push_back(root(p * u, length));
    for (std::int64_t t = 0; t < r; ++t)
      for (std::int64_t u = 0; u < r; ++u) s.roots.push_back(root(t * u, r));
    stages_.push_back(std::move(s));
    length /= r;
    stride *= r;
  }
}

void Fft::forward(double* re, double* im, double* work_re, double* work_im, std::int64_t batch) const {
  double *xr = re, *xi = im, *yr = work_re, *yi = work_im;
  for (const Stage& s : stages_) {
    // Lengths radix · m at stride `stride`: x[(stride (p + t m) + q) batch + b] → y[(stride (radix p + u) + q) batch
    // + b], q < stride, b < batch; a run of stride · batch values for each (p, t) and each (p, u).
    const std::int64_t r = s.radix, m = s.m, run = s.stride * batch;
    for (std::int64_t p = 0; p < m; ++p) {
      for (std::int64_t u = 0; u < r; ++u) {
        double* __restrict out_r = yr + (r * p + u) * run;
        double* __restrict out_i = yi + (r * p + u) * run;
        std::fill_n(out_r, run, 0.0);
        std::fill_n(out_i, run, 0.0);
        for (std::int64_t t = 0; t < r; ++t) {
          const double* __restrict in_r = xr + (p + t * m) * run;
          const double* __restrict in_i = xi + (p + t * m) * run;
          const std::complex<double> w = s.roots[static_cast<std::size_t>(t * r + u)];
          const double cr = w.real(), ci = w.imag();
          for (std::int64_t e = 0; e < run; ++e) {
            out_r[e] += in_r[e] * cr - in_i[e] * ci;
            out_i[e] += in_r[e] * ci + in_i[e] * cr;
          }
        }
        if (p * u == 0) continue;
        const std::complex<double> w = s.twiddles[static_cast<std::size_t>(p * r + u)];
        const double cr = w.real(), ci = w.imag();
        for (std::int64_t e = 0; e < run; ++e) {
          const double a = out_r[e], b = out_i[e];
          out_r[e] = a * cr - b * ci;
          out_i[e] = a * ci + b * cr;
        }
      }
    }
    std::swap(xr, yr);
    std::swap(xi, yi);
  }
  if (xr != re) {
    std::copy_n(xr, n_ * batch, re);
    std::copy_n(xi, n_ * batch, im);
  }
}

std::vector<std::complex<double>> dft_reference(const std::vector<std::complex<double>>& x) {
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  std::vector<std::complex<double>> out(x.size());
  for (std::int64_t k = 0; k < n; ++k)
    for (std::int64_t t = 0; t < n; ++t)
      out[static_cast<std::size_t>(k)] += x[static_cast<std::size_t>(t)] * root(t * k, n);
  return out;
}

}  // namespace attnscope::audio
