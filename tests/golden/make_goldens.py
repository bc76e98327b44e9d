#!/usr/bin/env python3
"""Golden outputs for the JS tests, computed by PyTorch's own attention.

Run once with Debian's python3-torch (1.13) and commit the JSON it writes:

    /usr/bin/python3.11 tests/golden/make_goldens.py

- scaled_dot_product_attention.json: torch.nn.functional._scaled_dot_product_attention
  (torch 1.13's name for F.scaled_dot_product_attention), with need_attn_weights=True.
- multi_head_attention.json: torch.nn.MultiheadAttention with average_attn_weights=False.

Every tensor is stored row-major as {"shape": [...], "data": [...]}, in AttnScope's
layout: projections are x·W, so W is the transpose of torch's Linear weight.
"""
import json
import pathlib

import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
torch.manual_seed(20261121)


def t(x):
    x = x.detach().to(torch.float32).contiguous()
    return {"shape": list(x.shape), "data": [round(float(v), 7) for v in x.flatten()]}


def sdpa_case(name, heads, n_q, n_k, d_k, d_v, causal=False, mask=None, scale=None):
    shape = lambda n, d: (heads, n, d) if heads else (n, d)
    q, k, v = torch.randn(*shape(n_q, d_k)), torch.randn(*shape(n_k, d_k)), torch.randn(*shape(n_k, d_v))
    additive = None
    if mask == "keep":  # hide roughly a quarter of the keys, never a whole row
        keep = (torch.rand(n_q, n_k) > 0.25).to(torch.uint8)
        keep[:, 0] = 1
        additive = torch.zeros(n_q, n_k).masked_fill(keep == 0, float("-inf"))
    elif mask == "additive":
        additive = torch.randn(n_q, n_k)
    # torch 1.13 scales by 1/sqrt(d_k) itself; another scale is applied to q beforehand.
    q_in = q * (scale * d_k**0.5) if scale is not None else q
    batch = lambda x: x.unsqueeze(0)
    out, weights = F._scaled_dot_product_attention(
        batch(q_in), batch(k), batch(v),
        batch(additive) if additive is not None else None, 0.0, True, causal)
    case = {"name": name, "q": t(q), "k": t(k), "v": t(v), "causal": causal,
            "output": t(out[0]), "weights": t(weights[0])}
    if scale is not None:
        case["scale"] = scale
    if mask == "keep":
        case["mask"] = {"kind": "keep", **t(keep)}
    elif mask == "additive":
        case["mask"] = {"kind": "additive", **t(additive)}
    return case


def mha_case(name, n, d_model, heads, bias=True, causal=False, m=None):
    mha = torch.nn.MultiheadAttention(d_model, heads, bias=bias, batch_first=True)
    with torch.no_grad():  # non-zero biases, so that the test sees them
        if bias:
            mha.in_proj_bias.normal_()
            mha.out_proj.bias.normal_()
    x = torch.randn(1, n, d_model)
    ctx = torch.randn(1, m, d_model) if m else x
    n_k = ctx.shape[1]
    attn_mask = torch.triu(torch.full((n, n_k), float("-inf")), diagonal=1) if causal else None
    out, weights = mha(x, ctx, ctx, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
    w, b = mha.in_proj_weight, mha.in_proj_bias
    E = d_model
    params = {"wq": t(w[:E].T), "wk": t(w[E:2 * E].T), "wv": t(w[2 * E:].T), "wo": t(mha.out_proj.weight.T)}
    if bias:
        params.update({"bq": t(b[:E]), "bk": t(b[E:2 * E]), "bv": t(b[2 * E:]), "bo": t(mha.out_proj.bias)})
    case = {"name": name, "heads": heads, "causal": causal, "x": t(x[0]), "params": params,
            "output": t(out[0]), "weights": t(weights[0])}
    if m:
        case["context"] = t(ctx[0])
    return case


def main():
    sdpa = [
        sdpa_case("single head", None, 5, 5, 8, 8),
        sdpa_case("n_q != n_k, d_k != d_v", None, 4, 7, 6, 3),
        sdpa_case("heads axis", 3, 6, 6, 4, 4),
        sdpa_case("causal", 2, 9, 9, 5, 5, causal=True),
        sdpa_case("causal, n_q < n_k", None, 4, 6, 5, 5, causal=True),
        sdpa_case("keep mask", None, 6, 6, 4, 4, mask="keep"),
        sdpa_case("additive mask, heads axis", 2, 5, 7, 4, 6, mask="additive"),
        sdpa_case("custom scale", None, 6, 6, 4, 4, scale=0.9),
        sdpa_case("longer", 2, 40, 40, 16, 16),
    ]
    mha = [
        mha_case("self, 4 heads, biases", 7, 16, 4),
        mha_case("self, causal, 2 heads", 6, 8, 2, causal=True),
        mha_case("no biases, 1 head", 5, 6, 1, bias=False),
        mha_case("cross-attention", 4, 12, 3, m=9),
    ]
    for name, cases in (("scaled_dot_product_attention", sdpa), ("multi_head_attention", mha)):
        path = HERE / f"{name}.json"
        path.write_text(json.dumps({"generator": f"torch {torch.__version__}", "cases": cases}) + "\n")
        print(f"wrote {path.relative_to(HERE.parent.parent)} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
