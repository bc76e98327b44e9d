#!/usr/bin/env python3
"""Goldens for encoder-decoder models: random checkpoints in the Hub's names and layout, run by PyTorch's own layers.

Run once with Debian's python3-torch (1.13) and commit the JSON it writes:

    /usr/bin/python3.11 tests/golden/make_seq2seq_goldens.py

seq2seq/bart/ holds the first case as a checkpoint's files (config.json, model.safetensors), for docs/api.md.
seq2seq.json holds, per case, a config.json, the checkpoint's tensors in Hugging Face's names, a source and a target
(token ids), and what PyTorch computes from them in float64: every encoder, decoder and cross-attention map per head
([layers, heads, n_q, n_k]) and the logits of each target position. The model is put together from
nn.TransformerEncoderLayer and nn.TransformerDecoderLayer (whose in_proj stacks the checkpoint's q, k, v
projections), with the family's embedding, positions and LM head around them:

- T5 (T5ForConditionalGeneration), which no nn layer computes (unscaled attention plus a relative position bias),
  in a float64 reference written out below from T5's definition: RMS norm without bias before each sublayer, the
  bucketed relative bias of block 0 in every self-attention layer of its stack (none in cross-attention), ReLU or
  gated GELU (gelu_new), the final norm of each stack, and the head tied to the shared embedding reading the hidden
  state × d_model^-0.5, or untied. The buckets are make_block_goldens.py's, held to T5's own float32 code there.
- BART (BartForConditionalGeneration): the shared embedding (× √d_model when scale_embedding), learned positions
  read at position + 2, a LayerNorm of the embeddings in each stack, post-LN blocks with GELU and eps 1e-5, the LM
  head tied to the shared embedding plus final_logits_bias.
- Marian (MarianMTModel): BART's blocks with SiLU, the embeddings × √d_model, static sinusoidal positions from 0 in
  Hugging Face's layout (sines, then cosines), which the checkpoint leaves out, and no embedding LayerNorm; it starts
  decoding at <pad>.
"""
import json
import math
import pathlib

import torch

from make_block_goldens import heads_weights, randomize, relative_bucket, write_checkpoint

HERE = pathlib.Path(__file__).resolve().parent
torch.manual_seed(20261128)


def t(x):
    x = x.detach().contiguous()
    return {"shape": list(x.shape), "data": [float(f"{float(v):.9g}") for v in x.flatten()]}


def attention_state(mha, prefix):
    """nn.MultiheadAttention's in_proj as BART's separate q, k, v projections."""
    d = mha.embed_dim
    w, b = mha.in_proj_weight, mha.in_proj_bias
    return {
        f"{prefix}.q_proj.weight": w[:d], f"{prefix}.q_proj.bias": b[:d],
        f"{prefix}.k_proj.weight": w[d:2 * d], f"{prefix}.k_proj.bias": b[d:2 * d],
        f"{prefix}.v_proj.weight": w[2 * d:], f"{prefix}.v_proj.bias": b[2 * d:],
        f"{prefix}.out_proj.weight": mha.out_proj.weight, f"{prefix}.out_proj.bias": mha.out_proj.bias,
    }


def norm_state(norm, prefix):
    return {f"{prefix}.weight": norm.weight, f"{prefix}.bias": norm.bias}


def sinusoids(n, d):
    """Marian's static positions in Hugging Face's layout: every sine in the first half, every cosine in the second,
    each pair of dimensions at frequency 10000^(-2i/d), from position 0; the model holds them in float32."""
    angle = torch.tensor([[pos / 10000 ** (2 * (j // 2) / d) for j in range(d)] for pos in range(n)], dtype=torch.float64)
    return torch.cat([torch.sin(angle[:, 0::2]), torch.cos(angle[:, 1::2])], dim=1).float().double()


def bart(name, scale_embedding, tied_names, marian=False):
    vocab, d, heads, ffn, enc_layers, dec_layers, max_pos = 50, 16, 4, 24, 2, 3, 32
    config = {
        "architectures": ["BartForConditionalGeneration"], "model_type": "bart", "vocab_size": vocab, "d_model": d,
        "encoder_layers": enc_layers, "decoder_layers": dec_layers, "encoder_attention_heads": heads,
        "decoder_attention_heads": heads, "encoder_ffn_dim": ffn, "decoder_ffn_dim": ffn,
        "max_position_embeddings": max_pos, "activation_function": "gelu", "scale_embedding": scale_embedding,
        "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2,
        "forced_bos_token_id": 0, "forced_eos_token_id": 2, "is_encoder_decoder": True,
    }
    if marian:  # MarianMTModel: BART's layers with SiLU, static positions, no embedding LayerNorm, start at <pad>
        config.update({"architectures": ["MarianMTModel"], "model_type": "marian", "activation_function": "swish",
                       "pad_token_id": vocab - 1, "bos_token_id": 0, "eos_token_id": 0,
                       "decoder_start_token_id": vocab - 1, "forced_eos_token_id": 0})
        del config["forced_bos_token_id"]
    f64 = torch.float64
    shared = torch.randn(vocab, d, dtype=f64) * 0.5
    if marian:
        positions = {s: sinusoids(max_pos, d) for s in ("encoder", "decoder")}
        emb_norm = {s: torch.nn.Identity() for s in ("encoder", "decoder")}
    else:
        positions = {s: torch.randn(max_pos + 2, d, dtype=f64) * 0.5 for s in ("encoder", "decoder")}
        emb_norm = {s: torch.nn.LayerNorm(d).double() for s in ("encoder", "decoder")}
    activation = torch.nn.functional.silu if marian else "gelu"
    enc = [torch.nn.TransformerEncoderLayer(d, heads, ffn, 0.0, activation, batch_first=True).double()
           for _ in range(enc_layers)]
    dec = [torch.nn.TransformerDecoderLayer(d, heads, ffn, 0.0, activation, batch_first=True).double()
           for _ in range(dec_layers)]
    for m in [*emb_norm.values(), *enc, *dec]:
        randomize(m)
        m.eval()
    final_logits_bias = torch.randn(1, vocab, dtype=f64) * 0.2

    source = torch.tensor([11, 27, 5, 42, 19, 8, 0] if marian else [0, 11, 27, 5, 42, 19, 8, 2])
    target = torch.tensor([vocab - 1, 33, 7, 21, 3] if marian else [2, 0, 33, 7, 21, 2])
    scale = math.sqrt(d) if scale_embedding else 1.0
    offset = 0 if marian else 2  # BART's table starts two rows in

    def embed(stack, ids):
        x = shared[ids] * scale + positions[stack][torch.arange(len(ids)) + offset]
        return emb_norm[stack](x)[None]

    enc_maps, dec_maps, cross_maps = [], [], []
    x = embed("encoder", source)
    for layer in enc:
        a, w = heads_weights(layer.self_attn, x, x, x, None)
        enc_maps.append(w)
        y = layer.norm1(x + a)
        y = layer.norm2(y + layer.linear2(layer.activation(layer.linear1(y))))
        assert torch.allclose(layer(x), y, atol=1e-12)
        x = y
    memory = x
    def decode(target, maps=None):
        """The decoder on the whole target: its final hidden state, and its maps when `maps` is a list pair."""
        n = len(target)
        causal = torch.triu(torch.full((n, n), float("-inf"), dtype=f64), 1)
        x = embed("decoder", target)
        for layer in dec:
            a, w = heads_weights(layer.self_attn, x, x, x, causal)
            y = layer.norm1(x + a)
            c, cw = heads_weights(layer.multihead_attn, y, memory, memory, None)
            y = layer.norm2(y + c)
            y = layer.norm3(y + layer.linear2(layer.activation(layer.linear1(y))))
            assert torch.allclose(layer(x, memory, tgt_mask=causal), y, atol=1e-12)
            if maps is not None:
                maps[0].append(w)
                maps[1].append(cw)
            x = y
        return x[0] @ shared.T + final_logits_bias[0]

    # Greedy generation: the start token, the forced BOS, then the likeliest token each step (no stop at </s>).
    greedy = [config["decoder_start_token_id"]] + ([] if marian else [config["forced_bos_token_id"]])
    while len(greedy) < 10:
        greedy.append(int(decode(torch.tensor(greedy))[-1].argmax()))

    logits = decode(target, (dec_maps, cross_maps))

    state = {"model.shared.weight": shared, "final_logits_bias": final_logits_bias}
    if tied_names:  # the names a checkpoint may hold besides model.shared (ties that were not deduplicated)
        state["model.encoder.embed_tokens.weight"] = shared
        state["model.decoder.embed_tokens.weight"] = shared
        state["lm_head.weight"] = shared
    for s, layers in (("encoder", enc), ("decoder", dec)):
        if not marian:  # Marian's checkpoints leave out their static positions (_keys_to_ignore_on_save)
            state[f"model.{s}.embed_positions.weight"] = positions[s]
            state.update(norm_state(emb_norm[s], f"model.{s}.layernorm_embedding"))
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
    return {"name": name, "config": config, "state": {k: t(v) for k, v in state.items()},
            "source": source.tolist(), "target": target.tolist(),
            "encoder": t(torch.stack(enc_maps)), "decoder": t(torch.stack(dec_maps)),
            "cross": t(torch.stack(cross_maps)), "logits": t(logits), "greedy": greedy}


def t5(name, gated, tied):
    """T5 in the float64 reference below (no nn layer computes T5's unscaled attention with its relative bias)."""
    vocab, d, heads, dkv, ff, enc_layers, dec_layers, buckets, max_distance = 50, 16, 4, 4, 24, 2, 3, 8, 20
    config = {
        "architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "vocab_size": vocab, "d_model": d,
        "d_kv": dkv, "d_ff": ff, "num_layers": enc_layers, "num_decoder_layers": dec_layers, "num_heads": heads,
        "relative_attention_num_buckets": buckets, "relative_attention_max_distance": max_distance,
        "layer_norm_epsilon": 1e-6, "feed_forward_proj": "gated-gelu" if gated else "relu",
        "tie_word_embeddings": tied, "decoder_start_token_id": 0, "eos_token_id": 1, "pad_token_id": 0,
        "is_encoder_decoder": True, "n_positions": 32,
    }
    f64 = torch.float64
    state = {}

    def param(name, *shape, scale=0.4, around=0.0):
        state[name] = torch.randn(*shape, dtype=f64) * scale + around
        return state[name]

    param("shared.weight", vocab, d, scale=1.0)
    if not tied:
        param("lm_head.weight", vocab, d)
    inner = heads * dkv
    for stack, layers in (("encoder", enc_layers), ("decoder", dec_layers)):
        param(f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight", buckets, heads, scale=1.0)
        param(f"{stack}.final_layer_norm.weight", d, scale=0.2, around=1.0)
        for i in range(layers):
            b = f"{stack}.block.{i}.layer."
            names = [("0.SelfAttention", True)] + ([("1.EncDecAttention", True)] if stack == "decoder" else [])
            for sub, _ in names:
                for w, shape in (("q", (inner, d)), ("k", (inner, d)), ("v", (inner, d)), ("o", (d, inner))):
                    param(f"{b}{sub}.{w}.weight", *shape)
                param(f"{b}{sub.split('.')[0]}.layer_norm.weight", d, scale=0.2, around=1.0)
            f = "2" if stack == "decoder" else "1"
            for w in (["wi_0", "wi_1"] if gated else ["wi"]):
                param(f"{b}{f}.DenseReluDense.{w}.weight", ff, d)
            param(f"{b}{f}.DenseReluDense.wo.weight", d, ff)
            param(f"{b}{f}.layer_norm.weight", d, scale=0.2, around=1.0)

    def rms(x, w):  # T5LayerNorm: no mean, no bias
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def gelu_new(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))

    def attention(x, kv, p, bias, causal):
        """Unscaled softmax(q·kᵀ + bias)·v per head, as T5Attention; returns the output and the weights [H, n, m]."""
        split = lambda y: y.view(y.shape[0], heads, dkv).transpose(0, 1)
        q, k, v = (split(t @ state[f"{p}.{w}.weight"].T) for t, w in ((x, "q"), (kv, "k"), (kv, "v")))
        scores = q @ k.transpose(-1, -2)
        if bias is not None:
            scores = scores + bias
        if causal:
            n = x.shape[0]
            scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), float("-inf"))
        w = torch.softmax(scores, -1)
        out = (w @ v).transpose(0, 1).reshape(x.shape[0], inner) @ state[f"{p}.o.weight"].T
        return out, w

    def position_bias(stack, n, bidirectional):
        pos = torch.arange(n)
        bucket = relative_bucket(pos[None, :] - pos[:, None], bidirectional, buckets, max_distance)
        table = state[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
        return table[bucket].permute(2, 0, 1)  # [heads, n, n]

    def ffn(x, b):
        if gated:
            h = gelu_new(x @ state[f"{b}.DenseReluDense.wi_0.weight"].T) * (x @ state[f"{b}.DenseReluDense.wi_1.weight"].T)
        else:
            h = torch.relu(x @ state[f"{b}.DenseReluDense.wi.weight"].T)
        return h @ state[f"{b}.DenseReluDense.wo.weight"].T

    source = torch.tensor([13, 27, 5, 42, 19, 8, 33, 1])
    enc_maps = []
    x = state["shared.weight"][source]
    bias = position_bias("encoder", len(source), True)
    for i in range(enc_layers):
        b = f"encoder.block.{i}.layer."
        a, w = attention(rms(x, state[f"{b}0.layer_norm.weight"]), rms(x, state[f"{b}0.layer_norm.weight"]),
                         f"{b}0.SelfAttention", bias, False)
        enc_maps.append(w)
        x = x + a
        x = x + ffn(rms(x, state[f"{b}1.layer_norm.weight"]), f"{b}1")
    memory = rms(x, state["encoder.final_layer_norm.weight"])

    def decode(target, maps=None):
        x = state["shared.weight"][target]
        bias = position_bias("decoder", len(target), False)
        for i in range(dec_layers):
            b = f"decoder.block.{i}.layer."
            h = rms(x, state[f"{b}0.layer_norm.weight"])
            a, w = attention(h, h, f"{b}0.SelfAttention", bias, True)
            x = x + a
            c, cw = attention(rms(x, state[f"{b}1.layer_norm.weight"]), memory, f"{b}1.EncDecAttention", None, False)
            x = x + c
            x = x + ffn(rms(x, state[f"{b}2.layer_norm.weight"]), f"{b}2")
            if maps is not None:
                maps[0].append(w)
                maps[1].append(cw)
        h = rms(x, state["decoder.final_layer_norm.weight"])
        return h * d**-0.5 @ state["shared.weight"].T if tied else h @ state["lm_head.weight"].T

    target = torch.tensor([0, 21, 7, 44, 9, 3])
    maps = ([], [])
    logits = decode(target, maps)
    greedy = [0]
    while len(greedy) < 10:
        greedy.append(int(decode(torch.tensor(greedy))[-1].argmax()))
    return {"name": name, "config": config, "state": {k: t(v) for k, v in state.items()},
            "source": source.tolist(), "target": target.tolist(),
            "encoder": t(torch.stack(enc_maps)), "decoder": t(torch.stack(maps[0])),
            "cross": t(torch.stack(maps[1])), "logits": t(logits), "greedy": greedy}


cases = [
    bart("BART", scale_embedding=False, tied_names=False),
    bart("BART, scaled embeddings, tied names kept", scale_embedding=True, tied_names=True),
    t5("T5 (t5-small's layout: ReLU, tied head)", gated=False, tied=True),
    t5("Flan-T5 (gated GELU, untied head)", gated=True, tied=False),
    bart("Marian (opus-mt's layout: SiLU, static positions, scaled embeddings)", scale_embedding=True,
         tied_names=True, marian=True),
]
(HERE / "seq2seq.json").write_text(json.dumps({"cases": cases}) + "\n")
write_checkpoint(cases[0], HERE / "seq2seq" / "bart")
print(f"wrote {HERE / 'seq2seq.json'}: {len(cases)} cases, and {HERE / 'seq2seq' / 'bart'}")
