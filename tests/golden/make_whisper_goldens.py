#!/usr/bin/env python3
"""Goldens for Whisper (WhisperForConditionalGeneration): random checkpoints in the Hub's names and layout, run by
PyTorch's own layers.

Run once with Debian's python3-torch (1.13) and commit the JSON it writes:

    /usr/bin/python3.11 tests/golden/make_whisper_goldens.py

whisper/tiny/ holds the first case as a checkpoint's files (config.json, preprocessor_config.json, model.safetensors),
for docs/api.md. whisper.json holds, per case, a config.json and a preprocessor_config.json, the checkpoint's tensors in Hugging Face's
names, a window's log-mel features and a target (token ids), and what PyTorch computes from them in float64: every
encoder, decoder and cross-attention map per head ([layers, heads, n_q, n_k]), the logits of each target position and
ten greedy tokens. The model is put together as transformers' WhisperModel computes, from nn.Conv1d,
nn.TransformerEncoderLayer(norm_first=True), nn.TransformerDecoderLayer(norm_first=True) and their
nn.MultiheadAttention (whose in_proj stacks the checkpoint's q, k, v projections; k_proj has no bias, so its third
of in_proj_bias is zero and stays out of the checkpoint):

- the encoder: GELU(conv1(features)) (kernel 3, padding 1), GELU(conv2(·)) (kernel 3, stride 2, padding 1), plus the
  sinusoidal positions Whisper's checkpoints store (sin ‖ cos, timescales 10000^(-i/(d/2 - 1))), pre-LN layers with
  exact GELU and LayerNorm eps 1e-5, and a final LayerNorm;
- the decoder: the token embedding plus learned positions from 0, pre-LN layers with cross-attention to the encoder's
  output, a final LayerNorm, and logits from the embedding itself (proj_out is tied to it).

The windows are 1 s (chunk_length 1 in preprocessor_config.json: 100 frames, 50 positions) to keep the file small;
the real checkpoints' 30 s are the same code at other sizes.
"""
import json
import math
import pathlib

import torch

from make_block_goldens import heads_weights, randomize, write_checkpoint

HERE = pathlib.Path(__file__).resolve().parent
torch.manual_seed(20261129)


def t(x):
    x = x.detach().contiguous()
    return {"shape": list(x.shape), "data": [float(f"{float(v):.9g}") for v in x.flatten()]}


def attention_state(mha, prefix):
    d = mha.embed_dim
    w, b = mha.in_proj_weight, mha.in_proj_bias
    return {
        f"{prefix}.q_proj.weight": w[:d], f"{prefix}.q_proj.bias": b[:d],
        f"{prefix}.k_proj.weight": w[d:2 * d],
        f"{prefix}.v_proj.weight": w[2 * d:], f"{prefix}.v_proj.bias": b[2 * d:],
        f"{prefix}.out_proj.weight": mha.out_proj.weight, f"{prefix}.out_proj.bias": mha.out_proj.bias,
    }


def norm_state(norm, prefix):
    return {f"{prefix}.weight": norm.weight, f"{prefix}.bias": norm.bias}


def sinusoids(length, channels):
    """Whisper's encoder positions (openai/whisper model.py sinusoids), as its checkpoints store them."""
    increment = math.log(10000) / (channels // 2 - 1)
    inv = torch.exp(-increment * torch.arange(channels // 2, dtype=torch.float64))
    scaled = torch.arange(length, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1).float().double()


def whisper(name, mels, dec_layers, keep_proj_out):
    vocab, d, heads, ffn, enc_layers, positions, target_positions = 64, 16, 4, 24, 2, 50, 16
    config = {
        "architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper", "vocab_size": vocab,
        "num_mel_bins": mels, "d_model": d, "encoder_layers": enc_layers, "decoder_layers": dec_layers,
        "encoder_attention_heads": heads, "decoder_attention_heads": heads, "encoder_ffn_dim": ffn,
        "decoder_ffn_dim": ffn, "max_source_positions": positions, "max_target_positions": target_positions,
        "activation_function": "gelu", "scale_embedding": False, "decoder_start_token_id": 60,
        "bos_token_id": 59, "eos_token_id": 59, "pad_token_id": 59, "tie_word_embeddings": True,
        "is_encoder_decoder": True,
    }
    preprocessor = {
        "feature_extractor_type": "WhisperFeatureExtractor", "feature_size": mels, "sampling_rate": 16000,
        "hop_length": 160, "chunk_length": 1, "n_fft": 400, "n_samples": 16000, "nb_max_frames": 100,
        "padding_side": "right", "padding_value": 0.0, "return_attention_mask": False,
    }
    f64 = torch.float64
    conv1 = torch.nn.Conv1d(mels, d, 3, padding=1).double()
    conv2 = torch.nn.Conv1d(d, d, 3, stride=2, padding=1).double()
    enc_positions = sinusoids(positions, d)
    embed = torch.randn(vocab, d, dtype=f64) * 0.5
    dec_positions = torch.randn(target_positions, d, dtype=f64) * 0.3
    enc = [torch.nn.TransformerEncoderLayer(d, heads, ffn, 0.0, "gelu", batch_first=True, norm_first=True).double()
           for _ in range(enc_layers)]
    dec = [torch.nn.TransformerDecoderLayer(d, heads, ffn, 0.0, "gelu", batch_first=True, norm_first=True).double()
           for _ in range(dec_layers)]
    enc_norm, dec_norm = torch.nn.LayerNorm(d).double(), torch.nn.LayerNorm(d).double()
    for m in [conv1, conv2, *enc, *dec, enc_norm, dec_norm]:
        randomize(m)
        m.eval()
    with torch.no_grad():
        for layer in enc + dec:  # WhisperAttention's k_proj has no bias
            for mha in [layer.self_attn] + ([layer.multihead_attn] if hasattr(layer, "multihead_attn") else []):
                mha.in_proj_bias[d:2 * d] = 0.0

    # A window's features as Whisper's extractor leaves them: (log10 + 4) / 4, within 2 of their maximum.
    features = torch.rand(mels, 2 * positions, dtype=f64) * 2.0 - 0.5
    features = features.float().double()

    x = torch.nn.functional.gelu(conv1(features[None]))
    x = torch.nn.functional.gelu(conv2(x)).transpose(1, 2) + enc_positions
    enc_maps = []
    for layer in enc:
        h = layer.norm1(x)
        a, w = heads_weights(layer.self_attn, h, h, h, None)
        enc_maps.append(w)
        y = x + a
        y = y + layer.linear2(layer.activation(layer.linear1(layer.norm2(y))))
        assert torch.allclose(layer(x), y, atol=1e-12)
        x = y
    memory = enc_norm(x)

    def decode(target, maps=None):
        n = len(target)
        causal = torch.triu(torch.full((n, n), float("-inf"), dtype=f64), 1)
        x = (embed[target] + dec_positions[:n])[None]
        for layer in dec:
            h = layer.norm1(x)
            a, w = heads_weights(layer.self_attn, h, h, h, causal)
            y = x + a
            c, cw = heads_weights(layer.multihead_attn, layer.norm2(y), memory, memory, None)
            y = y + c
            y = y + layer.linear2(layer.activation(layer.linear1(layer.norm3(y))))
            assert torch.allclose(layer(x, memory, tgt_mask=causal), y, atol=1e-12)
            if maps is not None:
                maps[0].append(w)
                maps[1].append(cw)
            x = y
        return dec_norm(x)[0] @ embed.T

    target = torch.tensor([60, 61, 62, 63, 17, 5, 33, 41])  # start, language, task, no timestamps, text
    maps = ([], [])
    logits = decode(target, maps)
    greedy = target[:4].tolist()
    while len(greedy) < 12:
        greedy.append(int(decode(torch.tensor(greedy))[-1].argmax()))

    state = {
        "model.encoder.conv1.weight": conv1.weight, "model.encoder.conv1.bias": conv1.bias,
        "model.encoder.conv2.weight": conv2.weight, "model.encoder.conv2.bias": conv2.bias,
        "model.encoder.embed_positions.weight": enc_positions,
        "model.decoder.embed_tokens.weight": embed, "model.decoder.embed_positions.weight": dec_positions,
    }
    if keep_proj_out:
        state["proj_out.weight"] = embed
    for s, layers, final in (("encoder", enc, enc_norm), ("decoder", dec, dec_norm)):
        for i, layer in enumerate(layers):
            p = f"model.{s}.layers.{i}"
            state.update(attention_state(layer.self_attn, f"{p}.self_attn"))
            state.update(norm_state(layer.norm1, f"{p}.self_attn_layer_norm"))
            if s == "decoder":
                state.update(attention_state(layer.multihead_attn, f"{p}.encoder_attn"))
                state.update(norm_state(layer.norm2, f"{p}.encoder_attn_layer_norm"))
            state[f"{p}.fc1.weight"], state[f"{p}.fc1.bias"] = layer.linear1.weight, layer.linear1.bias
            state[f"{p}.fc2.weight"], state[f"{p}.fc2.bias"] = layer.linear2.weight, layer.linear2.bias
            state.update(norm_state(layer.norm3 if s == "decoder" else layer.norm2, f"{p}.final_layer_norm"))
        state.update(norm_state(final, f"model.{s}.layer_norm"))
    return {"name": name, "config": config, "preprocessor": preprocessor,
            "state": {k: t(v) for k, v in state.items()}, "features": t(features), "target": target.tolist(),
            "encoder": t(torch.stack(enc_maps)), "decoder": t(torch.stack(maps[0])),
            "cross": t(torch.stack(maps[1])), "logits": t(logits), "greedy": greedy}


cases = [
    whisper("Whisper (whisper-tiny's layout, 80 mels)", mels=80, dec_layers=3, keep_proj_out=False),
    whisper("Whisper, 128 mels (large-v3), one decoder layer (distil-whisper), proj_out saved", mels=128,
            dec_layers=1, keep_proj_out=True),
]
(HERE / "whisper.json").write_text(json.dumps({"cases": cases}) + "\n")
folder = HERE / "whisper" / "tiny"
write_checkpoint(cases[0], folder)
(folder / "preprocessor_config.json").write_text(json.dumps(cases[0]["preprocessor"], indent=2) + "\n")
print(f"wrote {HERE / 'whisper.json'}: {len(cases)} cases, and {folder}")
