// A complex discrete Fourier transform of any length, run on a batch of signals at once: X_k = Σ_t x_t e^{−2πi tk/n}.
//
// Mixed-radix Stockham (self-sorting, no bit reversal), decimation in frequency, radices 4, 2, 3, 5 and then any
// prime left. A batch lays its signals side by side, sample-major: re[t · batch + b] is sample t of signal b, so each
// butterfly runs over whole contiguous rows of the batch and the compiler vectorizes it (SIMD across signals). In
// float64: a Hann-windowed tone's far bins sit 1e-8 below its peak, where a float32 transform's rounding would move
// Whisper's log10 features by more than their tolerance.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

namespace attnscope::audio {

class Fft {
 public:
  explicit Fft(std::int64_t n);  // n ≥ 1
  std::int64_t size() const { return n_; }
  // Transforms `batch` signals of length n in place: re and im [n, batch]; work re and im must hold as many.
  void forward(double* re, double* im, double* work_re, double* work_im, std::int64_t batch) const;

 private:
  struct Stage {
    std::int64_t radix, m, stride;  // this stage splits lengths radix · m; stride: the product of the radices before
    std::vector<std::complex<double>> twiddles;  // [m, radix]: e^{−2πi p u / (radix m)}
    std::vector<std::complex<double>> roots;     // [radix, radix]: e^{−2πi t u / radix}
  };
  std::int64_t n_;
  std::vector<Stage> stages_;
};

// The plain O(n²) DFT of one signal, in float64: the reference the tests hold Fft to.
std::vector<std::complex<double>> dft_reference(const std::vector<std::complex<double>>& x);

}  // namespace attnscope::audio
