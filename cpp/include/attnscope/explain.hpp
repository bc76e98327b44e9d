// Why a head attends where it does, and what pushes a logit: a score or a logit taken apart exactly by what the
// residual stream holds, each vector written into it a source (the token's embedding, its position, each earlier
// head's output through W_O, each MLP's output, the biases). Norms are linear once their per-token scale (and
// LayerNorm's mean) is frozen at the run's own value; RoPE and QK-norm's per-head scale likewise. So
//
//   score(i, j) = scale · q_i · k_j = Σ_a Σ_b scale · q(a)_i · k(b)_j     (+ T5's position bias)
//   logit(p, t) = final_norm(x_p) · E_t = Σ_a final_norm(a)_p · E_t      (+ the logits' bias)
//
// where q(a) is source a carried through the query's norm, W_Q, QK-norm and RoPE (likewise k(b)), and the parts sum
// to the engine's own number. A soft-capped score or logit (Gemma) is taken apart before its cap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

// One vector the residual stream of a token holds.
struct Source {
  enum class Kind {
    token,           // the token's embedding (× the embedding scale)
    position,        // its learned or sinusoidal position
    prefix,          // an image's [CLS] (or DeiT's distillation token)
    register_token,  // an image's register (DINOv2 with registers)
    patch,           // an image patch's projection
    patch_bias,      // the patch projection's bias
    audio,           // the audio front end's convolutions at the token's frames (GELU makes them one source)
    head,            // layer `layer`, head `head`'s output through its rows of W_O
    attention_bias,  // layer `layer`'s W_O bias
    cross,           // layer `layer`'s cross-attention sublayer (an encoder-decoder's decoder)
    mlp,             // layer `layer`'s MLP
    norm_bias,   // a LayerNorm's bias (`layer` -1: the front end's, else the layer's; the final norm: `layer` = layers)
    widen_bias,  // the bias of the projection that widens the stream (USE-lite's first layer)
    query_bias,  // the score's own: b_Q, through QK-norm and RoPE
    key_bias,    // and b_K
    logit_bias,  // the logits' own bias (BART's final_logits_bias)
  };
  Kind kind = Kind::token;
  std::int64_t stack = 0;     // the stack whose stream holds it: 0, or 1 (an encoder-decoder's decoder)
  std::int64_t layer = -1;    // the layer that wrote it; -1 for the front end's
  std::int64_t head = -1;     // for heads
  std::int64_t position = 0;  // the token of the stack's sequence whose stream it is
};

// Which score to take apart: map set `set` ("self", "encoder", "decoder", "cross"; empty: the run's first), its layer
// and head, query row and key column.
struct ScoreQuery {
  std::string set;
  std::int64_t layer = 0, head = 0, query = 0, key = 0;
};

struct ScoreExplanation {
  std::vector<Source> query_sources, key_sources;
  std::vector<double> terms;  // [query sources, key sources], row-major: each pair's part of the score
  double score = 0;           // the engine's own pre-softmax score, scale · q_i · k_j (+ the position bias)
  double position_bias = 0;   // T5's relative position bias, part of `score`, of no source (0 for other models)
  float softcap = 0;          // > 0: the weights' softmax reads cap · tanh(score / cap) (Gemma 2)
};

// Which logit to take apart: the next-token logit of `token` after position `position` of the last stack's sequence.
struct LogitQuery {
  std::int64_t position = 0;
  std::int32_t token = 0;
};

struct LogitExplanation {
  std::vector<Source> sources;
  std::vector<double> terms;  // each source's part of the logit
  double logit = 0;           // the engine's own logit, before any soft-cap
  float softcap = 0;          // > 0: the softmax reads cap · tanh(logit / cap) (Gemma)
};

}  // namespace attnscope
