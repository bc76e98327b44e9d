// preprocessor_config.json read as transformers' WhisperFeatureExtractor reads it: the settings of the features
// attnscope/audio.hpp computes.
#pragma once

#include <cstdint>

#include "attnscope/audio.hpp"
#include "io/json.hpp"

namespace attnscope::audio {

// WhisperFeatureExtractor's settings from preprocessor_config.json (null: whisper-tiny's defaults), for a model of
// `mel_bins` mel bins (config.json's num_mel_bins, which feature_size must equal).
Features read_features(const Json* file, std::int64_t mel_bins);

}  // namespace attnscope::audio
