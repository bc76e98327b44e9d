// Whisper's features: the FFT against the plain DFT, and the log-mel spectrogram's steps on signals whose answer is
// known without running it. Agreement with transformers' feature extractor itself is tests/js/whisper-features.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "attnscope/error.hpp"
#include "audio/features.hpp"
#include "audio/fft.hpp"
#include "test_util.hpp"

namespace attnscope::audio {
namespace {

TEST(Fft, MatchesThePlainDftForEveryRadixAndBatch) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  for (std::int64_t n : {1, 2, 3, 4, 5, 7, 8, 12, 16, 25, 49, 60, 143, 400}) {
    const std::int64_t batch = 3;
    std::vector<std::vector<std::complex<double>>> signals(batch);
    std::vector<double> re(n * batch), im(n * batch), wr(n * batch), wi(n * batch);
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t t = 0; t < n; ++t) {
        signals[b].emplace_back(normal(rng), normal(rng));
        re[t * batch + b] = signals[b].back().real();
        im[t * batch + b] = signals[b].back().imag();
      }
    Fft(n).forward(re.data(), im.data(), wr.data(), wi.data(), batch);
    for (std::int64_t b = 0; b < batch; ++b) {
      const auto want = dft_reference(signals[b]);
      for (std::int64_t k = 0; k < n; ++k) {
        EXPECT_NEAR(re[k * batch + b], want[k].real(), 1e-11 * n) << "n " << n << ", bin " << k;
        EXPECT_NEAR(im[k * batch + b], want[k].imag(), 1e-11 * n) << "n " << n << ", bin " << k;
      }
    }
  }
}

TEST(MelFilters, AreTrianglesOfUnitAreaOverTheirSpanInHertz) {
  // Slaney's area norm: each triangle, 2 / (its width in Hz) high, has area 1 in Hz; on the 40 Hz bins of
  // n_fft 400 at 16 kHz the sampled sum × 40 is near 1 for the filters five bins wide or more (from 2.4 kHz up).
  const std::vector<double> f = slaney_mel_filters(400, 80, 16000);
  ASSERT_EQ(f.size(), 201u * 80);
  for (int m = 50; m < 80; ++m) {
    double area = 0;
    for (int k = 0; k < 201; ++k) area += f[k * 80 + m] * 40.0;
    EXPECT_NEAR(area, 1.0, 0.05) << "filter " << m;
  }
  for (double v : f) EXPECT_GE(v, 0.0);
}

TEST(LogMel, SilenceIsTheFloorEverywhere) {
  const Features c = read_features(nullptr, 80);
  const std::vector<float> silence(16000, 0.0f);
  const Tensor t = log_mel(c, silence.data(), static_cast<std::int64_t>(silence.size()));
  ASSERT_EQ(t.shape, (Shape{80, 3000}));
  for (float v : t.data) ASSERT_FLOAT_EQ(v, (-10.0f + 4.0f) / 4.0f);  // log10(1e-10), the floor
}

TEST(LogMel, AToneLightsItsMelBinWhileItSoundsAndTheClampBelowIt) {
  const Features c = read_features(nullptr, 80);
  const double hz = 1000.0;
  std::vector<float> tone(16000 * 2);  // 2 s, then the window's zeros
  for (std::size_t i = 0; i < tone.size(); ++i)
    tone[i] = 0.5f * static_cast<float>(std::sin(2 * M_PI * hz * i / 16000));
  const Tensor t = log_mel(c, tone.data(), static_cast<std::int64_t>(tone.size()));
  // The mel bin whose triangle peaks nearest 1 kHz is the brightest in a frame mid-tone.
  const std::vector<double> f = slaney_mel_filters(400, 80, 16000);
  int best = 0;
  for (int m = 0; m < 80; ++m)
    if (f[25 * 80 + m] > f[25 * 80 + best]) best = m;  // bin 25 is 1,000 Hz
  const std::int64_t frame = 100;                      // 1 s in
  int brightest = 0;
  for (int m = 0; m < 80; ++m)
    if (t.data[m * 3000 + frame] > t.data[brightest * 3000 + frame]) brightest = m;
  EXPECT_EQ(brightest, best);
  float top = -100;
  for (float v : t.data) top = std::max(top, v);
  // Every value sits within 8 / 4 = 2 of the loudest (the max − 8 clamp), and the frames after the tone at the floor.
  for (float v : t.data) EXPECT_GE(v, top - 2.0f - 1e-6f);
  EXPECT_FLOAT_EQ(t.data[10 * 3000 + 2500], top - 2.0f);
}

TEST(Features, PreprocessorConfigIsReadAndChecked) {
  const Json file = Json::parse(R"({"feature_size": 128, "hop_length": 160, "n_fft": 400, "chunk_length": 30})", "x");
  EXPECT_EQ(read_features(&file, 128).feature_size, 128);
  EXPECT_EQ(read_features(&file, 128).mel_filters.size(), 201u * 128);
  try {
    read_features(&file, 80);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "preprocessor_config.json: feature_size is 128 but config.json's num_mel_bins is 80");
  }
  const Json bad = Json::parse(R"({"mel_filters": [[1, 2]]})", "x");
  testing::expect_error([&] { read_features(&bad, 80); },
                        "preprocessor_config.json: mel_filters must be 80 rows of 201 numbers of at least 0");
  // The filters a file gives, in either layout: older transformers' [mels][frequencies] (librosa's), or the transpose.
  const std::vector<double> slaney = slaney_mel_filters(400, 8, 16000);
  std::string by_mel = R"({"feature_size": 8, "mel_filters": [)", by_frequency = by_mel;
  for (int m = 0; m < 8; ++m) {
    by_mel += m ? ",[" : "[";
    for (int k = 0; k < 201; ++k) by_mel += (k ? "," : "") + std::to_string(slaney[k * 8 + m] * 2);
    by_mel += "]";
  }
  for (int k = 0; k < 201; ++k) {
    by_frequency += k ? ",[" : "[";
    for (int m = 0; m < 8; ++m) by_frequency += (m ? "," : "") + std::to_string(slaney[k * 8 + m] * 3);
    by_frequency += "]";
  }
  const Json file_a = Json::parse(by_mel + "]}", "x"), file_b = Json::parse(by_frequency + "]}", "x");
  const Features a = read_features(&file_a, 8), b = read_features(&file_b, 8);
  for (int i = 0; i < 201 * 8; ++i) {
    EXPECT_NEAR(a.mel_filters[i], slaney[i] * 2, 1e-6);
    EXPECT_NEAR(b.mel_filters[i], slaney[i] * 3, 1e-6);
  }
  const Json hop = Json::parse(R"({"hop_length": 0})", "x");
  EXPECT_THROW(read_features(&hop, 80), Error);
}

}  // namespace
}  // namespace attnscope::audio
