#include "audio/features.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attnscope/error.hpp"
#include "audio/fft.hpp"
#include "models/config.hpp"

namespace attnscope::audio {

namespace {

constexpr const char* kFile = "preprocessor_config.json";

// The Slaney scale: linear below 1 kHz (3 mel per 200 Hz), logarithmic above.
constexpr double kMinLogHertz = 1000.0, kMinLogMel = 15.0;
const double kLogStep = 27.0 / std::log(6.4);

double hertz_to_mel(double f) {
  return f >= kMinLogHertz ? kMinLogMel + std::log(f / kMinLogHertz) * kLogStep : 3.0 * f / 200.0;
}
double mel_to_hertz(double m) {
  return m >= kMinLogMel ? kMinLogHertz * std::exp((m - kMinLogMel) / kLogStep) : 200.0 * m / 3.0;
}

// numpy.linspace(a, b, n): a + i · step, the last exactly b.
std::vector<double> linspace(double a, double b, std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  const double step = n > 1 ? (b - a) / static_cast<double>(n - 1) : 0.0;
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = a + static_cast<double>(i) * step;
  if (n > 1) v.back() = b;
  return v;
}

// models/config.hpp's reader, its message naming this file.
std::int64_t field(const Json& f, const char* key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  try {
    return optional_int(f, key, fallback, lo, hi);
  } catch (const Error& e) {
    std::string message = e.what();
    const std::string theirs = "config.json: ";
    if (message.compare(0, theirs.size(), theirs) == 0) message.erase(0, theirs.size());
    throw Error(std::string(kFile) + ": " + message);
  }
}

}  // namespace

std::vector<double> slaney_mel_filters(std::int64_t n_fft, std::int64_t mel_bins, std::int64_t sampling_rate) {
  const std::int64_t bins = n_fft / 2 + 1;
  const std::vector<double> fft_freqs = linspace(0.0, static_cast<double>(sampling_rate / 2), bins);
  std::vector<double> f = linspace(hertz_to_mel(0.0), hertz_to_mel(sampling_rate / 2.0), mel_bins + 2);
  for (double& m : f) m = mel_to_hertz(m);
  std::vector<double> filters(static_cast<std::size_t>(bins * mel_bins));
  for (std::int64_t k = 0; k < bins; ++k)
    for (std::int64_t m = 0; m < mel_bins; ++m) {
      const auto at = [&](std::int64_t i) { return f[static_cast<std::size_t>(i)]; };
      const double x = fft_freqs[static_cast<std::size_t>(k)];
      const double down = (x - at(m)) / (at(m + 1) - at(m)), up = (at(m + 2) - x) / (at(m + 2) - at(m + 1));
      const double area = 2.0 / (at(m + 2) - at(m));
      filters[static_cast<std::size_t>(k * mel_bins + m)] = std::max(0.0, std::min(down, up)) * area;
    }
  return filters;
}

Features read_features(const Json* file, std::int64_t mel_bins) {
  Features c;
  c.feature_size = mel_bins;
  if (file) {
    if (!file->is_object()) throw Error(std::string(kFile) + ": the file is not a JSON object");
    const Json& f = *file;
    c.feature_size = field(f, "feature_size", mel_bins, 1, 512);
    if (c.feature_size != mel_bins)
      throw Error(std::string(kFile) + ": feature_size is " + std::to_string(c.feature_size) +
                  " but config.json's num_mel_bins is " + std::to_string(mel_bins));
    c.sampling_rate = field(f, "sampling_rate", 16000, 1000, 192000);
    c.hop_length = field(f, "hop_length", 160, 1, 4096);
    c.chunk_length = field(f, "chunk_length", 30, 1, 60);
    c.n_fft = field(f, "n_fft", 400, 2, 8192);
    // mel_filters as older transformers saved them, [feature_size][n_fft / 2 + 1] (librosa's layout, which
    // transformers.js reads), or as newer ones hold them, [n_fft / 2 + 1][feature_size].
    if (const Json* m = f.find("mel_filters"); m && !m->is_null()) {
      const std::int64_t bins = c.n_fft / 2 + 1, mels = c.feature_size;
      const std::int64_t rows = m->is_array() ? static_cast<std::int64_t>(m->array().size()) : 0;
      const bool by_mel = rows == mels && rows != bins;
      c.mel_filters.assign(static_cast<std::size_t>(bins * mels), 0.0);
      bool good = rows == bins || by_mel;
      for (std::int64_t r = 0; good && r < rows; ++r) {
        const Json& row = m->array()[static_cast<std::size_t>(r)];
        good = row.is_array() && static_cast<std::int64_t>(row.array().size()) == (by_mel ? bins : mels);
        for (std::int64_t k = 0; good && k < (by_mel ? bins : mels); ++k) {
          const Json& v = row.array()[static_cast<std::size_t>(k)];
          good = v.is_number() && std::isfinite(v.number()) && v.number() >= 0;
          c.mel_filters[static_cast<std::size_t>(by_mel ? k * mels + r : r * mels + k)] = good ? v.number() : 0.0;
        }
      }
      if (!good)
        throw Error(std::string(kFile) + ": mel_filters must be " + std::to_string(mels) + " rows of " +
                    std::to_string(bins) + " numbers of at least 0 (feature_size × (n_fft / 2 + 1)), or the transpose");
    }
  }
  if (c.n_samples() < c.n_fft)
    throw Error(std::string(kFile) + ": chunk_length · sampling_rate must hold at least n_fft samples");
  if (c.mel_filters.empty()) c.mel_filters = slaney_mel_filters(c.n_fft, c.feature_size, c.sampling_rate);
  return c;
}

Tensor log_mel(const Features& c, const float* samples, std::int64_t n) {
  const std::int64_t n_samples = c.n_samples(), frames = c.frames(), n_fft = c.n_fft, bins = n_fft / 2 + 1;
  const std::int64_t mels = c.feature_size, half = n_fft / 2;
  n = std::clamp<std::int64_t>(n, 0, n_samples);
  // Sample i of the padded, centred window (−half ≤ i < n_samples + half): numpy's reflect padding, zeros past n.
  const auto sample = [&](std::int64_t i) -> double {
    if (i < 0) i = -i;
    if (i >= n_samples) i = 2 * (n_samples - 1) - i;
    return i < n ? static_cast<double>(samples[i]) : 0.0;
  };
  std::vector<double> window(static_cast<std::size_t>(n_fft));
  for (std::int64_t t = 0; t < n_fft; ++t)
    window[static_cast<std::size_t>(t)] = 0.5 - 0.5 * std::cos(2.0 * M_PI * static_cast<double>(t) / n_fft);
  // Each mel filter's nonzero span of frequencies, so the products skip the zeros (a filter spans a few bins).
  std::vector<std::int64_t> first(static_cast<std::size_t>(mels), bins), last(static_cast<std::size_t>(mels), 0);
  for (std::int64_t k = 0; k < bins; ++k)
    for (std::int64_t m = 0; m < mels; ++m)
      if (c.mel_filters[static_cast<std::size_t>(k * mels + m)] != 0.0) {
        first[static_cast<std::size_t>(m)] = std::min(first[static_cast<std::size_t>(m)], k);
        last[static_cast<std::size_t>(m)] = k + 1;
      }

  const Fft fft(n_fft);
  constexpr std::int64_t kBatch = 16;  // frames transformed together: [n_fft, 16] float64 re and im stay in L2
  std::vector<double> re(static_cast<std::size_t>(n_fft * kBatch)), im(re.size()), wr(re.size()), wi(re.size());
  std::vector<double> log_spec(static_cast<std::size_t>(mels * frames));
  for (std::int64_t f0 = 0; f0 < frames; f0 += kBatch) {
    const std::int64_t batch = std::min(kBatch, frames - f0);
    for (std::int64_t t = 0; t < n_fft; ++t)
      for (std::int64_t b = 0; b < batch; ++b) {
        re[static_cast<std::size_t>(t * batch + b)] =
            sample((f0 + b) * c.hop_length + t - half) * window[static_cast<std::size_t>(t)];
        im[static_cast<std::size_t>(t * batch + b)] = 0.0;
      }
    fft.forward(re.data(), im.data(), wr.data(), wi.data(), batch);
    for (std::int64_t k = 0; k < bins * batch; ++k)
      re[static_cast<std::size_t>(k)] = re[static_cast<std::size_t>(k)] * re[static_cast<std::size_t>(k)] +
                                        im[static_cast<std::size_t>(k)] * im[static_cast<std::size_t>(k)];
    for (std::int64_t m = 0; m < mels; ++m)
      for (std::int64_t b = 0; b < batch; ++b) {
        double sum = 0.0;
        for (std::int64_t k = first[static_cast<std::size_t>(m)]; k < last[static_cast<std::size_t>(m)]; ++k)
          sum += c.mel_filters[static_cast<std::size_t>(k * mels + m)] * re[static_cast<std::size_t>(k * batch + b)];
        log_spec[static_cast<std::size_t>(m * frames + f0 + b)] = std::log10(std::max(sum, 1e-10));
      }
  }
  const double floor = *std::max_element(log_spec.begin(), log_spec.end()) - 8.0;
  Tensor out = Tensor::unfilled({mels, frames});
  for (std::size_t i = 0; i < log_spec.size(); ++i)
    out.data[i] = static_cast<float>((std::max(log_spec[i], floor) + 4.0) / 4.0);
  return out;
}

}  // namespace attnscope::audio
