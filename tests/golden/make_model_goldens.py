#!/usr/bin/env python3
"""Small random checkpoints in the Hugging Face Hub's exact tensor names and layout,
with goldens computed by PyTorch's own modules. Run once and commit the output:

    /usr/bin/python3.11 tests/golden/make_model_goldens.py

For each model, tests/golden/models/<name>/ gets config.json, the weights
(model.safetensors, or shards + model.safetensors.index.json) and golden.json:
token ids, every layer's per-head attention weights, the last hidden state.

- BERT / DistilBERT blocks: nn.TransformerEncoderLayer(norm_first=False, activation gelu,
  layer_norm_eps 1e-12); the weights come from nn.MultiheadAttention(average_attn_weights=False)
  on each layer's input.
- GPT-2 blocks: nn.TransformerEncoderLayer(norm_first=True, tanh GELU, eps 1e-5) with a causal
  mask; attention weights from the same module on LayerNorm(x).
Weights stored as F16/BF16 are rounded first, so the goldens see what the file holds.
"""
import json
import pathlib
import struct

import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent / "models"
torch.manual_seed(7)
D, HEADS, FFN, LAYERS, VOCAB, POSITIONS, N = 32, 4, 64, 2, 64, 32, 11


def rounded(t, dtype):
    return t.to(dtype).to(torch.float32) if dtype != torch.float32 else t


def encode(t, dtype):
    t = t.detach().contiguous()
    if dtype == torch.float32:
        return "F32", t.numpy().tobytes()
    if dtype == torch.float16:
        return "F16", t.to(torch.float16).numpy().tobytes()
    return "BF16", t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()


def write_safetensors(path, tensors, dtype):
    header, chunks, at = {}, [], 0
    for name, t in tensors.items():
        code, data = encode(t, dtype)
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [at, at + len(data)]}
        chunks.append(data)
        at += len(data)
    raw = json.dumps(header).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(chunks))


def save(name, config, tensors, dtype, ids, attentions, hidden, shards=1):
    out = HERE / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    names = list(tensors)
    if shards == 1:
        write_safetensors(out / "model.safetensors", tensors, dtype)
    else:
        per = (len(names) + shards - 1) // shards
        weight_map = {}
        for s in range(shards):
            part = names[s * per:(s + 1) * per]
            file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            write_safetensors(out / file, {k: tensors[k] for k in part}, dtype)
            weight_map.update({k: file for k in part})
        (out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}, indent=2))
    golden = {
        "generator": f"torch {torch.__version__}",
        "ids": ids,
        "attentions": {"shape": list(attentions.shape), "data": [round(float(v), 8) for v in attentions.flatten()]},
        "hidden": {"shape": list(hidden.shape), "data": [round(float(v), 7) for v in hidden.flatten()]},
    }
    (out / "golden.json").write_text(json.dumps(golden) + "\n")
    print(f"wrote {out.relative_to(HERE.parent.parent.parent)}")


def encoder_layer(norm_first, eps, activation):
    return torch.nn.TransformerEncoderLayer(D, HEADS, FFN, dropout=0.0, activation=activation, layer_norm_eps=eps,
                                            batch_first=True, norm_first=norm_first).eval()


def randomize(layer):
    with torch.no_grad():
        for p in layer.parameters():
            p.normal_(0, 0.3 if p.dim() > 1 else 0.5)
        layer.norm1.weight.add_(1.0)
        layer.norm2.weight.add_(1.0)


def run_blocks(x, layers, norm_first, mask=None):
    attentions = []
    for layer in layers:
        attn_input = layer.norm1(x) if norm_first else x
        _, w = layer.self_attn(attn_input, attn_input, attn_input, attn_mask=mask, need_weights=True,
                               average_attn_weights=False)
        attentions.append(w[0])
        x = layer(x, src_mask=mask)
    return x, torch.stack(attentions)


def bert_like(name, distil, dtype, shards=1):
    ids = torch.randint(0, VOCAB, (N,)).tolist()
    word = rounded(torch.randn(VOCAB, D), dtype)
    pos = rounded(torch.randn(POSITIONS, D), dtype)
    types = rounded(torch.randn(2, D), dtype)
    ln_g, ln_b = rounded(1 + 0.1 * torch.randn(D), dtype), rounded(0.1 * torch.randn(D), dtype)
    layers = []
    for _ in range(LAYERS):
        layer = encoder_layer(False, 1e-12, "gelu")
        randomize(layer)
        with torch.no_grad():
            for p in layer.parameters():
                p.copy_(rounded(p, dtype))
        layers.append(layer)
    with torch.no_grad():
        x = word[ids] + pos[:N] + (0 if distil else types[0])
        x = F.layer_norm(x, (D,), ln_g, ln_b, 1e-12).unsqueeze(0)
        hidden, attentions = run_blocks(x, layers, False)
    p = "distilbert." if distil else ""  # one of each: with and without the task model's prefix
    t = {}
    t[p + "embeddings.word_embeddings.weight"] = word
    t[p + "embeddings.position_embeddings.weight"] = pos
    if not distil:
        t["embeddings.token_type_embeddings.weight"] = types
    t[p + "embeddings.LayerNorm.weight"], t[p + "embeddings.LayerNorm.bias"] = ln_g, ln_b
    for i, layer in enumerate(layers):
        w, b = layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias
        if distil:
            q = f"{p}transformer.layer.{i}."
            names = {"q": "attention.q_lin", "k": "attention.k_lin", "v": "attention.v_lin", "o": "attention.out_lin",
                     "ln1": "sa_layer_norm", "up": "ffn.lin1", "down": "ffn.lin2", "ln2": "output_layer_norm"}
        else:
            q = f"encoder.layer.{i}."
            names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
                     "o": "attention.output.dense", "ln1": "attention.output.LayerNorm", "up": "intermediate.dense",
                     "down": "output.dense", "ln2": "output.LayerNorm"}
        for k, (lo, hi) in zip("qkv", [(0, D), (D, 2 * D), (2 * D, 3 * D)]):
            t[q + names[k] + ".weight"], t[q + names[k] + ".bias"] = w[lo:hi], b[lo:hi]
        t[q + names["o"] + ".weight"], t[q + names["o"] + ".bias"] = layer.self_attn.out_proj.weight, layer.self_attn.out_proj.bias
        t[q + names["ln1"] + ".weight"], t[q + names["ln1"] + ".bias"] = layer.norm1.weight, layer.norm1.bias
        t[q + names["up"] + ".weight"], t[q + names["up"] + ".bias"] = layer.linear1.weight, layer.linear1.bias
        t[q + names["down"] + ".weight"], t[q + names["down"] + ".bias"] = layer.linear2.weight, layer.linear2.bias
        t[q + names["ln2"] + ".weight"], t[q + names["ln2"] + ".bias"] = layer.norm2.weight, layer.norm2.bias
    if distil:
        config = {"architectures": ["DistilBertModel"], "dim": D, "n_layers": LAYERS, "n_heads": HEADS,
                  "hidden_dim": FFN, "activation": "gelu", "vocab_size": VOCAB, "max_position_embeddings": POSITIONS}
    else:
        config = {"architectures": ["BertModel"], "hidden_size": D, "num_hidden_layers": LAYERS,
                  "num_attention_heads": HEADS, "intermediate_size": FFN, "hidden_act": "gelu",
                  "layer_norm_eps": 1e-12, "vocab_size": VOCAB, "max_position_embeddings": POSITIONS,
                  "type_vocab_size": 2, "position_embedding_type": "absolute"}
    save(name, config, t, dtype, ids, attentions, hidden[0], shards)


def gpt2(name, dtype):
    ids = torch.randint(0, VOCAB, (N,)).tolist()
    wte, wpe = rounded(torch.randn(VOCAB, D), dtype), rounded(torch.randn(POSITIONS, D), dtype)
    lnf_g, lnf_b = rounded(1 + 0.1 * torch.randn(D), dtype), rounded(0.1 * torch.randn(D), dtype)
    layers = []
    for _ in range(LAYERS):
        layer = encoder_layer(True, 1e-5, lambda v: F.gelu(v, approximate="tanh"))
        randomize(layer)
        with torch.no_grad():
            for p in layer.parameters():
                p.copy_(rounded(p, dtype))
        layers.append(layer)
    mask = torch.triu(torch.full((N, N), float("-inf")), diagonal=1)
    with torch.no_grad():
        x = (wte[ids] + wpe[:N]).unsqueeze(0)
        hidden, attentions = run_blocks(x, layers, True, mask)
        hidden = F.layer_norm(hidden, (D,), lnf_g, lnf_b, 1e-5)
    t = {"transformer.wte.weight": wte, "transformer.wpe.weight": wpe}
    for i, layer in enumerate(layers):
        q = f"transformer.h.{i}."
        # GPT-2's Conv1D stores [in, out]: the transpose of a Linear weight.
        t[q + "ln_1.weight"], t[q + "ln_1.bias"] = layer.norm1.weight, layer.norm1.bias
        t[q + "attn.c_attn.weight"], t[q + "attn.c_attn.bias"] = layer.self_attn.in_proj_weight.T, layer.self_attn.in_proj_bias
        t[q + "attn.c_proj.weight"], t[q + "attn.c_proj.bias"] = layer.self_attn.out_proj.weight.T, layer.self_attn.out_proj.bias
        t[q + "ln_2.weight"], t[q + "ln_2.bias"] = layer.norm2.weight, layer.norm2.bias
        t[q + "mlp.c_fc.weight"], t[q + "mlp.c_fc.bias"] = layer.linear1.weight.T, layer.linear1.bias
        t[q + "mlp.c_proj.weight"], t[q + "mlp.c_proj.bias"] = layer.linear2.weight.T, layer.linear2.bias
    t["transformer.ln_f.weight"], t["transformer.ln_f.bias"] = lnf_g, lnf_b
    config = {"architectures": ["GPT2LMHeadModel"], "n_embd": D, "n_layer": LAYERS, "n_head": HEADS, "n_inner": FFN,
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "vocab_size": VOCAB,
              "n_positions": POSITIONS}
    save(name, config, t, dtype, ids, attentions, hidden[0])


if __name__ == "__main__":
    bert_like("bert", False, torch.float32)
    bert_like("bert-sharded", False, torch.float32, shards=3)
    bert_like("distilbert-bf16", True, torch.bfloat16)
    gpt2("gpt2-f16", torch.float16)
