// Sound in, as a speech model hears it: Whisper's log-mel features of mono samples (audio/features.cpp). Files are
// read into samples by the package (web/src/wav.ts, and the browser's decoder).
#pragma once

#include <cstdint>
#include <vector>

#include "attnscope/tensor.hpp"

namespace attnscope::audio {

// The most audio one call reads: an hour at 16 kHz.
inline constexpr std::int64_t kMaxSamples = std::int64_t{3600} * 16000;

// ---------------------------------------------------------------------------------------------------------------
// Whisper's log-mel features, as transformers' WhisperFeatureExtractor computes them. Followed from the source:
// transformers 4.x feature_extraction_whisper.py (_np_extract_fbank_features, __call__'s padding to chunk_length
// seconds) and audio_utils.py (window_function, spectrogram, mel_filter_bank, hertz_to_mel and mel_to_hertz on the
// Slaney scale). The steps, for samples at 16 kHz:
//   1. cut or pad with zeros to n_samples = chunk_length · sampling_rate (30 s: 480,000 samples);
//   2. centre the frames: pad n_fft / 2 samples at each end, mirrored without the edge (numpy's "reflect");
//   3. frames of n_fft samples every hop_length, times a periodic Hann window 0.5 − 0.5 cos(2π t / n_fft);
//   4. the power spectrum |X_k|², k ≤ n_fft / 2, and the mel filters over it (Slaney scale and area norm, 0 to
//      sampling_rate / 2), floored at 1e-10, log10;
//   5. the last frame dropped (3,000 frames for 30 s), everything clamped to its maximum − 8, then (x + 4) / 4.
// In float64 throughout, rounded to float32 at the end.

// A feature extractor's settings (preprocessor_config.json's; whisper-tiny's by default).
struct Features {
  std::int64_t feature_size = 80;  // mel bins
  std::int64_t sampling_rate = 16000;
  std::int64_t hop_length = 160;
  std::int64_t chunk_length = 30;  // seconds a window holds
  std::int64_t n_fft = 400;
  // [n_fft / 2 + 1, feature_size]: preprocessor_config.json's "mel_filters" when it has them, else Slaney's.
  std::vector<double> mel_filters;

  std::int64_t n_samples() const { return chunk_length * sampling_rate; }
  std::int64_t frames() const { return n_samples() / hop_length; }  // a window's frames: 3,000
};

// The Slaney-style mel filters [n_fft / 2 + 1, mel_bins] from 0 Hz to sampling_rate / 2, as mel_filter_bank(…,
// norm="slaney", mel_scale="slaney") builds them.
std::vector<double> slaney_mel_filters(std::int64_t n_fft, std::int64_t mel_bins, std::int64_t sampling_rate);

// The log-mel features of one window [feature_size, frames()] of `n` mono samples at sampling_rate (those past the
// window's n_samples() are not read).
Tensor log_mel(const Features& features, const float* samples, std::int64_t n);

}  // namespace attnscope::audio
