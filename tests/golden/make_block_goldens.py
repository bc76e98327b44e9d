#!/usr/bin/env python3
"""Goldens for the block settings no Hub architecture row uses yet, computed by PyTorch's own layers.

Run once with Debian's python3-torch (1.13) and commit the JSON it writes:

    /usr/bin/python3.11 tests/golden/make_block_goldens.py

blocks.json holds, for the native test tests/cpp/block_test.cpp:
- "buckets": T5's relative position buckets of key − query distances, computed in float32 as
  Hugging Face's T5Attention._relative_position_bucket computes them (the table cannot be off by one at a
  bucket's edge without the test seeing it).
- "cases": stacks of two nn.TransformerDecoderLayer (self-attention, cross-attention over a memory, FFN) or
  nn.TransformerEncoderLayer, post-LN and pre-LN, ReLU and GELU, in float64. Their state dicts are stored in
  PyTorch's own names ([out, in] linears, in_proj stacking q, k, v). Some cases add a relative position bias to
  every self-attention score (as a per-head float attn_mask, which nn.MultiheadAttention adds to q·kᵀ/√d), and
  some scale each sublayer's output by a per-channel γ (layer scale). Each case stores the stack's output and every
  layer's self- and cross-attention weights per head, read from the layers' own attention modules on the inputs
  the layers see; the script checks that forward pass against the layers' own forward().
"""
import json
import math
import pathlib
import struct

import torch

HERE = pathlib.Path(__file__).resolve().parent
torch.manual_seed(20261127)


def t(x):
    x = x.detach().contiguous()
    return {"shape": list(x.shape), "data": [float(f"{float(v):.9g}") for v in x.flatten()]}


def relative_bucket(relative, bidirectional, num_buckets, max_distance):
    """T5's bucket of each key − query distance, in float32 where T5 computes in float32."""
    ret = torch.zeros_like(relative)
    if bidirectional:
        num_buckets //= 2
        ret += (relative > 0).to(torch.long) * num_buckets
        n = torch.abs(relative)
    else:
        n = -torch.min(relative, torch.zeros_like(relative))
    max_exact = num_buckets // 2
    small = n < max_exact
    large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return ret + torch.where(small, n, large)


def bucket_tables():
    distances = torch.arange(-700, 701)
    tables = []
    for buckets, max_distance in [(32, 128), (32, 160), (8, 6), (16, 40)]:
        for bidirectional in [True, False]:
            b = relative_bucket(distances, bidirectional, buckets, max_distance)
            tables.append({"buckets": buckets, "max_distance": max_distance, "bidirectional": bidirectional,
                           "first": -700, "values": [int(v) for v in b]})
    return tables


def randomize(module):
    """Non-zero biases and norms away from (1, 0), so that the test sees every one of them."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.copy_(torch.randn_like(p) * 0.2 + (1.0 if "norm" in name and name.endswith("weight") else 0.0))


def heads_weights(mha, q, k, v, mask):
    out, w = mha(q, k, v, attn_mask=mask, need_weights=True, average_attn_weights=False)
    return out, w[0]  # [heads, n_q, n_k]


def relative_mask(table, n, bidirectional, buckets, max_distance, causal):
    """[heads, n, n]: table[bucket(j − i), h] at (h, i, j); −inf past the query where causal."""
    pos = torch.arange(n)
    b = relative_bucket(pos[None, :] - pos[:, None], bidirectional, buckets, max_distance)
    bias = table[b].permute(2, 0, 1)  # [n, n, heads] → [heads, n, n]
    if causal:
        bias = bias.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), float("-inf"))
    return bias


def case(name, decoder, norm_first, activation, relative=None, layer_scale=False):
    d, heads, ffn, n, m, layers = 16, 4, 24, 7, 9, 2
    make = torch.nn.TransformerDecoderLayer if decoder else torch.nn.TransformerEncoderLayer
    stack = [make(d, heads, ffn, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first).double()
             for _ in range(layers)]
    for layer in stack:
        randomize(layer)
        layer.eval()
    x = torch.randn(1, n, d, dtype=torch.float64)
    memory = torch.randn(1, m, d, dtype=torch.float64) if decoder else None
    causal = torch.triu(torch.full((n, n), float("-inf"), dtype=torch.float64), 1)
    mask = causal if decoder else None
    state = {}
    if relative:
        buckets, max_distance = relative
        table = torch.randn(buckets, heads, dtype=torch.float64)
        mask = relative_mask(table, n, not decoder, buckets, max_distance, decoder)
        state["relative_attention_bias.weight"] = table
    gammas = [(torch.rand(d, dtype=torch.float64) + 0.5, torch.rand(d, dtype=torch.float64) + 0.5)
              if layer_scale else (None, None) for _ in stack]

    def scaled(f, gamma):
        return f if gamma is None else f * gamma

    self_maps, cross_maps = [], []
    h = x
    for li, layer in enumerate(stack):
        g1, g2 = gammas[li]
        ff = lambda y: layer.linear2(layer.activation(layer.linear1(y)))
        if decoder:
            if norm_first:
                a, w = heads_weights(layer.self_attn, *[layer.norm1(h)] * 3, mask)
                y = h + scaled(a, g1)
                c, cw = heads_weights(layer.multihead_attn, layer.norm2(y), memory, memory, None)
                y = y + c
                y = y + scaled(ff(layer.norm3(y)), g2)
            else:
                a, w = heads_weights(layer.self_attn, h, h, h, mask)
                y = layer.norm1(h + scaled(a, g1))
                c, cw = heads_weights(layer.multihead_attn, y, memory, memory, None)
                y = layer.norm2(y + c)
                y = layer.norm3(y + scaled(ff(y), g2))
            own = layer(h, memory, tgt_mask=mask)
            cross_maps.append(cw)
        else:
            if norm_first:
                a, w = heads_weights(layer.self_attn, *[layer.norm1(h)] * 3, mask)
                y = h + scaled(a, g1)
                y = y + scaled(ff(layer.norm2(y)), g2)
            else:
                a, w = heads_weights(layer.self_attn, h, h, h, mask)
                y = layer.norm1(h + scaled(a, g1))
                y = layer.norm2(y + scaled(ff(y), g2))
            own = layer(h, src_mask=mask)
        if not layer_scale:  # the forward pass above is the layer's own
            assert torch.allclose(own, y, atol=1e-12), f"{name}: layer {li} differs from its forward()"
        self_maps.append(w)
        for key, value in layer.state_dict().items():
            state[f"layers.{li}.{key}"] = value
        if layer_scale:
            state[f"layers.{li}.ls1.gamma"], state[f"layers.{li}.ls2.gamma"] = g1, g2
        h = y
    out = {"name": name, "decoder": decoder, "norm_first": norm_first, "activation": activation, "d_model": d,
           "heads": heads, "ffn": ffn, "layers": layers, "layer_scale": layer_scale, "input": t(x[0]),
           "output": t(h[0]), "self_weights": t(torch.stack(self_maps)),
           "state": {k: t(v) for k, v in state.items()}}
    if decoder:
        out["memory"] = t(memory[0])
        out["cross_weights"] = t(torch.stack(cross_maps))
    if relative:
        out["relative"] = {"buckets": relative[0], "max_distance": relative[1]}
    return out


def write_checkpoint(case, folder):
    """A golden case's config.json and model.safetensors (F32), as the Hub lays them out: what docs/api.md loads."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(case["config"], indent=2) + "\n")
    header, blobs, offset = {}, [], 0
    for name, t in case["state"].items():
        blob = struct.pack(f"<{len(t['data'])}f", *t["data"])
        header[name] = {"dtype": "F32", "shape": t["shape"], "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - len(text) % 8) % 8)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text.encode() + b"".join(blobs))


def main():
    cases = [
        case("decoder, post-LN, ReLU", True, False, "relu"),
        case("decoder, pre-LN, GELU", True, True, "gelu"),
        case("decoder, post-LN, relative bias (causal buckets)", True, False, "relu", relative=(8, 6)),
        case("encoder, pre-LN, GELU, relative bias (bidirectional buckets), layer scale", False, True, "gelu",
             relative=(8, 6), layer_scale=True),
        case("decoder, pre-LN, layer scale", True, True, "relu", layer_scale=True),
    ]
    (HERE / "blocks.json").write_text(json.dumps({"buckets": bucket_tables(), "cases": cases}) + "\n")
    print(f"wrote {HERE / 'blocks.json'}: {len(cases)} cases")


if __name__ == "__main__":
    main()
