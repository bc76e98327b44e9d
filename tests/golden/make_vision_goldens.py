#!/usr/bin/env python3
"""Goldens for vision transformers: random checkpoints in the Hub's names and layout, run by torchvision's own
VisionTransformer (Debian's python3-torchvision 0.14, python3-torch 1.13), in float64.

Run once and commit the JSON (and the checkpoint folder, below) it writes:

    /usr/bin/python3 tests/golden/make_vision_goldens.py

vision.json holds {"cases": [...], "interpolations": [...]}.

Each case has a config.json as the Hub writes it, the checkpoint's tensors in Hugging Face's names (every value
float32-representable: the parameters are rounded to float32 before anything is computed) and one run per input
(DINOv2's two): the pixels the model sees ([3, H, W], already normalized: normal values on a 1/64 grid, exact and
short), the patch grid, the token names, every layer's attention per head ([layers, heads, n, n]), last_hidden_state
as Hugging Face returns it, token_norms ([layers + 1, n]: the L2 norm of each token in each `hidden_states` entry, the
encoder's input first, then every layer's output, no final norm), and where the model has them the pooled output,
the logits or CLIP's image embeddings (Dinov2Model's pooler_output is only hidden[0], so its runs have no pooled).
Computed values are written with 9 significant digits. Each case is named after its architecture.

The models are torchvision.models.vision_transformer.VisionTransformer (4 heads, 2 layers, hidden 32, MLP 48; hidden
24 with mlp_ratio 2 in the two DINOv2 cases, whose 14×14 patches and 56×56 inputs weigh most), built with
norm_layer=partial(nn.LayerNorm, eps=<the config's eps>), every parameter randomized (LayerNorms too), .double(),
eval(). Its state dict is mapped to Hugging Face's names (in_proj_weight/in_proj_bias split into query, key, value;
conv_proj → patch embeddings; encoder.pos_embedding → position embeddings; mlp.0/mlp.3 → the MLP's two linears;
encoder.ln → the final norm). Each layer's maps come from its own self_attention(h, h, h, need_weights=True,
average_attn_weights=False) on its ln_1 output, and the script asserts that the layer recomposed from those parts
equals the layer's own forward(), and that the stack equals torchvision's Encoder / VisionTransformer forward where
the architecture is plain ViT. What torchvision lacks is composed around its modules:

1. ViTForImageClassification: torchvision's whole forward is the model (heads.head → classifier on the normed [CLS]).
2. ViTModel with its pooler: representation_size = hidden makes heads.pre_logits + tanh the pooler (pooler.dense).
3. DeiTForImageClassificationWithTeacher: a distillation token after [CLS] and a position table of n_patches + 2
   (encoder.pos_embedding replaced; torchvision's Encoder.forward runs the n + 2 tokens), logits =
   (cls_classifier(token 0) + distillation_classifier(token 1)) / 2 on the normed sequence.
4. Dinov2Model: patch 14, layer scale (a per-channel γ on each sublayer's output before its residual add, which
   torchvision's EncoderBlock lacks: the block's own forward() is asserted on its parts with γ = 1), and the position
   table interpolated as Hugging Face's Dinov2Embeddings.interpolate_pos_encoding calls
   torch.nn.functional.interpolate (below). Two runs: the trained grid (56×56, 4×4, where HF returns the table as is)
   and 42×70 (3×5).
5. Dinov2WithRegistersModel: the same, with 4 register tokens inserted after [CLS] once the positions are added (the
   registers get none), and the interpolation called with antialias=True, as that model calls it.
6. CLIPVisionModel: a bias-free patch convolution, a 1-D class embedding, pre_layrnorm on the embeddings, quick_gelu
   (the MLP's GELU module swapped for x·σ(1.702x)), eps 1e-5; last_hidden_state is the last layer's output (no norm);
   the pooled output is post_layernorm (torchvision's encoder.ln) of token 0.
7. CLIPModel: the same vision tower under CLIPConfig's nested vision_config/text_config, plus visual_projection;
   the state also holds a few text_model.* tensors, text_projection and logit_scale, which the vision engine ignores.
   image_embeds = visual_projection(pooled), as CLIPVisionModelWithProjection and CLIPModel.get_image_features return
   it; image_embeds_normalized = image_embeds / ‖·‖₂, what CLIPModel.forward returns as its image_embeds.

"interpolations" holds the position-table interpolation alone for trained sides and target grids, computed in
float32 exactly as HF calls it (call "dinov2": Dinov2Embeddings; "dinov2_with_registers": the registers model,
which adds antialias=True and so differs even when upsampling), with "skipped" where HF returns the table unchanged
(grid equal to the trained one AND height == width). Both calls are also checked against a float64 re-derivation of
PyTorch's two bicubic kernels (bicubic_matrix below), which is what the C++ side should port.

Hugging Face source read: huggingface/transformers modeling_{vit,deit,dinov2,dinov2_with_registers}.py at commit
015e68769f9823df27f5f7372dc155277e6ff7e6 and modeling_clip.py at 000f1ffdbf1ce6190cc8863af9a2fff817590937 (a
4.5x-era snapshot: check_model_inputs, GradientCheckpointingLayer), and the newer v5-style modular_dinov2.py and
modeling_dinov2_with_registers.py (capture_outputs, `torch.Tensor | None`), whose interpolate calls are unchanged:

    Dinov2:              nn.functional.interpolate(patch_pos_embed.to(torch.float32), size=(new_height, new_width),
                                                   mode="bicubic", align_corners=False).to(dtype=target_dtype)
    Dinov2WithRegisters: nn.functional.interpolate(patch_pos_embed.to(dtype=torch.float32),
                                                   size=(torch_int(height), torch_int(width)), mode="bicubic",
                                                   align_corners=False, antialias=True).to(dtype=target_dtype)

with new_height = height // patch_size (pixels), the table reshaped [1, side, side, d] → [1, d, side, side], and
skipped when num_patches == num_positions and height == width. (Older Dinov2 code used scale_factor=(h + 0.1)/side
instead of size=; it is not what HF runs now and gives other numbers.)
"""
import json
import math
import pathlib
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torchvision.models.vision_transformer import VisionTransformer

from make_block_goldens import heads_weights, t, write_checkpoint

HERE = pathlib.Path(__file__).resolve().parent
torch.manual_seed(20261129)
f64 = torch.float64
D, HEADS, LAYERS, MLP = 32, 4, 2, 48
LABELS = ["tench", "goldfish", "great white shark", "tiger shark", "hammerhead"]


def f32(x):
    """Rounded to float32 (kept in float64): what a float32 checkpoint holds."""
    return x.float().double()


def randn(*shape, scale=1.0, around=0.0):
    return f32(torch.randn(*shape, dtype=f64) * scale + around)


def randomize(module):
    """Every parameter: LayerNorm weights 1 ± 0.2 and biases ±0.2, other biases ±0.2, weights N(0, 1.3²/fan_in), the
    class token and positions N(0, 1); all rounded to float32."""
    with torch.no_grad():
        norms = {id(p) for m in module.modules() if isinstance(m, nn.LayerNorm) for p in m.parameters()}
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(randn(*m.weight.shape, scale=0.2, around=1.0))
                m.bias.copy_(randn(*m.bias.shape, scale=0.2))
        for name, p in module.named_parameters():
            if id(p) in norms:
                continue
            if name.endswith("class_token") or name.endswith("pos_embedding"):
                p.copy_(randn(*p.shape))
            elif p.dim() == 1:
                p.copy_(randn(*p.shape, scale=0.2))
            else:
                fan_in = p[0].numel()
                p.copy_(randn(*p.shape, scale=1.3 / math.sqrt(fan_in)))


class QuickGELU(nn.Module):
    """CLIP's quick_gelu (transformers' QuickGELUActivation): x · sigmoid(1.702 x)."""

    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


def vision_transformer(image, patch, eps, mlp=MLP, num_classes=5, representation_size=None, d=D):
    vt = VisionTransformer(image_size=image, patch_size=patch, num_layers=LAYERS, num_heads=HEADS, hidden_dim=d,
                           mlp_dim=mlp, num_classes=num_classes, representation_size=representation_size,
                           norm_layer=partial(nn.LayerNorm, eps=eps)).double()
    randomize(vt)
    return vt.eval()


def patchify(vt, pixels):
    """[1, 3, H, W] → [1, rows·cols, d], row-major over the grid: _process_input minus its size check."""
    return vt.conv_proj(pixels).flatten(2).transpose(1, 2)


# ---- position tables as Hugging Face interpolates them ----

def hf_positions(table, height, width, patch, call):
    """Dinov2(WithRegisters)Embeddings.interpolate_pos_encoding: table [1, 1 + side², D] → [1, 1 + rows·cols, D]."""
    num_positions = table.shape[1] - 1
    num_patches = (height // patch) * (width // patch)
    if num_patches == num_positions and height == width:
        return table, True
    side = int(num_positions ** 0.5)
    dim = table.shape[-1]
    grid = table[:, 1:].reshape(1, side, side, dim).permute(0, 3, 1, 2)
    extra = {"antialias": True} if call == "dinov2_with_registers" else {}
    grid = F.interpolate(grid.to(torch.float32), size=(height // patch, width // patch), mode="bicubic",
                         align_corners=False, **extra).to(table.dtype)
    grid = grid.permute(0, 2, 3, 1).reshape(1, -1, dim)
    return torch.cat((table[:, :1], grid), dim=1), False


def cubic(x, a):
    x = abs(x)
    if x < 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def bicubic_matrix(n_in, n_out, antialias):
    """[n_out, n_in] weights of PyTorch's bicubic resize along one axis (align_corners=False, size= given).

    Plain: source x = s·(i + 0.5) − 0.5 with s = n_in/n_out, taps floor(x) − 1 … floor(x) + 2 clamped to the edge
    (edge replication), Keys' cubic with a = −0.75.
    antialias=True (PIL's resampler, _upsample_bicubic2d_aa): centre c = s·(i + 0.5), support = 2·max(s, 1),
    taps j from max(int(c − support + 0.5), 0) to min(int(c + support + 0.5), n_in) − 1, weight
    cubic((j − c + 0.5)·min(1/s, 1)) with a = −0.5, taps outside the input dropped, weights renormalized to sum 1.
    """
    s = n_in / n_out
    m = [[0.0] * n_in for _ in range(n_out)]
    for i in range(n_out):
        if antialias:
            c = s * (i + 0.5)
            support = 2.0 * max(s, 1.0)
            inv = min(1.0 / s, 1.0)
            lo, hi = max(int(c - support + 0.5), 0), min(int(c + support + 0.5), n_in)
            w = [cubic((j - c + 0.5) * inv, -0.5) for j in range(lo, hi)]
            total = sum(w)
            for j, wj in zip(range(lo, hi), w):
                m[i][j] += wj / total
        else:
            x = s * (i + 0.5) - 0.5
            x0 = math.floor(x)
            frac = x - x0
            for k in range(-1, 3):
                m[i][min(max(x0 + k, 0), n_in - 1)] += cubic(k - frac, -0.75)
    return torch.tensor(m, dtype=f64)


def interpolation(call, side, height, width, patch=14, dim=3):
    table = randn(1, 1 + side * side, dim)
    out, skipped = hf_positions(table, height, width, patch, call)
    rows, cols = height // patch, width // patch
    grid = table[0, 1:].reshape(side, side, dim)
    result = out[0, 1:].reshape(rows, cols, dim)
    antialias = call == "dinov2_with_registers"
    reference = torch.einsum("ri,ijd,cj->rcd", bicubic_matrix(side, rows, antialias), grid,
                             bicubic_matrix(side, cols, antialias))
    assert torch.allclose(result, reference, atol=2e-6), f"{call} {side}→{rows}×{cols}: kernel re-derivation differs"
    assert torch.equal(out[0, 0], table[0, 0])
    return {"call": call, "patch_size": patch, "input": t(grid), "height": height, "width": width,
            "grid": [rows, cols], "skipped": skipped, "output": t(result)}


# ---- the runs ----

def token_names(grid, distillation=False, registers=0):
    names = ["[CLS]"] + (["distillation"] if distillation else []) + [f"register {i + 1}" for i in range(registers)]
    return names + [f"patch {r},{c}" for r in range(grid[0]) for c in range(grid[1])]


def run_layers(vt, x, gammas=None):
    """The encoder's layers on x ([1, n, D], the encoder's input): every hidden state (input first) and the maps.
    With layer scale, γ multiplies each sublayer's output before its residual add (Dinov2Layer)."""
    states, maps = [x], []
    for i, block in enumerate(vt.encoder.layers):
        h = states[-1]
        a, w = heads_weights(block.self_attention, *[block.ln_1(h)] * 3, None)
        plain = h + a
        plain = plain + block.mlp(block.ln_2(plain))
        assert torch.allclose(block(h), plain, atol=1e-12), f"layer {i}: parts differ from EncoderBlock.forward()"
        if gammas is None:
            y = plain
        else:
            g1, g2 = gammas[i]
            y = h + a * g1
            y = y + block.mlp(block.ln_2(y)) * g2
        states.append(y)
        maps.append(w)
    return states, torch.stack(maps)


def pixels_of(height, width):
    """Normal values on a 1/64 grid: exact in float32 and short in the JSON."""
    return torch.round(torch.randn(1, 3, height, width, dtype=f64) * 64) / 64


def record(pixels, grid, tokens, states, maps, hidden, **extra):
    out = {"pixels": t(pixels[0]), "grid": list(grid), "tokens": tokens, "attentions": t(maps),
           "hidden": t(hidden[0]), "token_norms": t(torch.stack([s[0].norm(dim=-1) for s in states]))}
    out.update({k: t(v) for k, v in extra.items()})
    assert len(tokens) == hidden.shape[1] == maps.shape[-1]
    return out


def vit_config(architecture, image, patch, eps, pooler, labels):
    config = {"architectures": [architecture], "model_type": "vit", "attention_probs_dropout_prob": 0.0,
              "encoder_stride": patch, "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "hidden_size": D,
              "image_size": image, "initializer_range": 0.02, "intermediate_size": MLP, "layer_norm_eps": eps,
              "num_attention_heads": HEADS, "num_channels": 3, "num_hidden_layers": LAYERS, "patch_size": patch,
              "qkv_bias": True, "torch_dtype": "float32", "transformers_version": "4.13.0.dev0"}
    if pooler:  # what newer transformers writes (ViTConfig.pooler_output_size defaults to hidden_size)
        config.update({"pooler_act": "tanh", "pooler_output_size": D, "transformers_version": "4.46.0"})
    if labels:
        config["id2label"] = {str(i): name for i, name in enumerate(LABELS)}
        config["label2id"] = {name: i for i, name in enumerate(LABELS)}
    return config


def linear_state(layer, prefix, bias=True):
    out = {f"{prefix}.weight": layer.weight}
    if bias:
        out[f"{prefix}.bias"] = layer.bias
    return out


def qkv_state(mha, prefix, names=("query", "key", "value"), out_name=None):
    """nn.MultiheadAttention's in_proj (q, k, v stacked on dim 0) as three linears, and its out_proj."""
    d = mha.embed_dim
    w, b = mha.in_proj_weight, mha.in_proj_bias
    state = {}
    for k, name in enumerate(names):
        state[f"{prefix}.{name}.weight"] = w[k * d:(k + 1) * d]
        state[f"{prefix}.{name}.bias"] = b[k * d:(k + 1) * d]
    if out_name:
        state.update(linear_state(mha.out_proj, out_name))
    return state


def vit_layer_state(block, p):
    """A ViT/DeiT layer (ViTLayer) in HF's names."""
    state = linear_state(block.ln_1, f"{p}.layernorm_before")
    state.update(qkv_state(block.self_attention, f"{p}.attention.attention", out_name=f"{p}.attention.output.dense"))
    state.update(linear_state(block.ln_2, f"{p}.layernorm_after"))
    state.update(linear_state(block.mlp[0], f"{p}.intermediate.dense"))
    state.update(linear_state(block.mlp[3], f"{p}.output.dense"))
    return state


def vit_case(classifier):
    """1. ViTForImageClassification (prefix vit.), or 2. ViTModel with its pooler (no prefix)."""
    image, patch, eps = (32, 8, 1e-12) if classifier else (16, 4, 1e-12)
    vt = vision_transformer(image, patch, eps, representation_size=None if classifier else D)
    pixels = pixels_of(image, image)
    grid = (image // patch, image // patch)
    x = torch.cat([vt.class_token, vt._process_input(pixels)], dim=1)
    assert torch.equal(x[:, 1:], patchify(vt, pixels))
    states, maps = run_layers(vt, x + vt.encoder.pos_embedding)
    hidden = vt.encoder.ln(states[-1])
    assert torch.allclose(vt.encoder(x), hidden, atol=1e-12), "the stack differs from torchvision's Encoder"
    extra = {}
    if classifier:
        extra["logits"] = vt.heads.head(hidden[0, 0])
    else:
        extra["pooled"] = torch.tanh(vt.heads.pre_logits(hidden[0, 0]))
        assert torch.allclose(vt.heads.head(extra["pooled"]), vt(pixels)[0], atol=1e-12)
    if classifier:
        assert torch.allclose(extra["logits"], vt(pixels)[0], atol=1e-12), "differs from VisionTransformer.forward"
    pre = "vit." if classifier else ""
    state = {f"{pre}embeddings.cls_token": vt.class_token,
             f"{pre}embeddings.position_embeddings": vt.encoder.pos_embedding,
             **linear_state(vt.conv_proj, f"{pre}embeddings.patch_embeddings.projection")}
    for i, block in enumerate(vt.encoder.layers):
        state.update(vit_layer_state(block, f"{pre}encoder.layer.{i}"))
    state.update(linear_state(vt.encoder.ln, f"{pre}layernorm"))
    if classifier:
        state.update(linear_state(vt.heads.head, "classifier"))
    else:
        state.update(linear_state(vt.heads.pre_logits, "pooler.dense"))
    config = vit_config("ViTForImageClassification" if classifier else "ViTModel", image, patch, eps,
                        pooler=not classifier, labels=classifier)
    run = record(pixels, grid, token_names(grid), states, maps, hidden, **extra)
    return {"name": config["architectures"][0], "config": config, "state": {k: t(v) for k, v in state.items()},
            "runs": [run]}


def deit_case():
    """3. DeiTForImageClassificationWithTeacher: [CLS], distillation, patches; positions for all n + 2."""
    image, patch, eps = 12, 4, 1e-12
    vt = vision_transformer(image, patch, eps)
    grid = (image // patch, image // patch)
    with torch.no_grad():
        vt.encoder.pos_embedding = nn.Parameter(randn(1, grid[0] * grid[1] + 2, D))
    distillation = randn(1, 1, D)
    distillation_classifier = nn.Linear(D, len(LABELS)).double()
    randomize(distillation_classifier)
    pixels = pixels_of(image, image)
    x = torch.cat([vt.class_token, distillation, vt._process_input(pixels)], dim=1)
    states, maps = run_layers(vt, x + vt.encoder.pos_embedding)
    hidden = vt.encoder.ln(states[-1])
    assert torch.allclose(vt.encoder(x), hidden, atol=1e-12), "the stack differs from torchvision's Encoder"
    cls_logits = vt.heads.head(hidden[0, 0])
    distillation_logits = distillation_classifier(hidden[0, 1])
    state = {"deit.embeddings.cls_token": vt.class_token, "deit.embeddings.distillation_token": distillation,
             "deit.embeddings.position_embeddings": vt.encoder.pos_embedding,
             **linear_state(vt.conv_proj, "deit.embeddings.patch_embeddings.projection")}
    for i, block in enumerate(vt.encoder.layers):
        state.update(vit_layer_state(block, f"deit.encoder.layer.{i}"))
    state.update(linear_state(vt.encoder.ln, "deit.layernorm"))
    state.update(linear_state(vt.heads.head, "cls_classifier"))
    state.update(linear_state(distillation_classifier, "distillation_classifier"))
    config = vit_config("DeiTForImageClassificationWithTeacher", image, patch, eps, pooler=True, labels=True)
    config.update({"model_type": "deit", "transformers_version": "4.46.0"})
    run = record(pixels, grid, token_names(grid, distillation=True), states, maps, hidden,
                 logits=(cls_logits + distillation_logits) / 2, cls_logits=cls_logits,
                 distillation_logits=distillation_logits)
    return {"name": "DeiTForImageClassificationWithTeacher", "config": config,
            "state": {k: t(v) for k, v in state.items()}, "runs": [run]}


def dinov2_case(registers):
    """4. Dinov2Model / 5. Dinov2WithRegistersModel: patch 14, layer scale, bicubic positions, registers."""
    image, patch, eps, d, mlp_ratio = 56, 14, 1e-6, 24, 2  # hidden 24 (head size 6), MLP 48
    call = "dinov2_with_registers" if registers else "dinov2"
    vt = vision_transformer(image, patch, eps, mlp=d * mlp_ratio, d=d)
    side = image // patch
    gammas = [(randn(d, scale=0.3, around=0.8), randn(d, scale=0.3, around=0.8)) for _ in range(LAYERS)]
    register_tokens = randn(1, registers, d) if registers else None
    mask_token = randn(1, d, scale=0.1)  # in every Hub checkpoint; unused when running an image
    runs = []
    for height, width in [(56, 56), (42, 70)]:
        pixels = pixels_of(height, width)
        grid = (height // patch, width // patch)
        patches = patchify(vt, pixels)
        x = torch.cat([vt.class_token, patches], dim=1)
        positions, skipped = hf_positions(vt.encoder.pos_embedding, height, width, patch, call)
        assert skipped == (grid == (side, side))
        if skipped:  # the trained grid: torchvision's own path, and its stack with γ = 1
            assert torch.equal(patches, vt._process_input(pixels))
            plain, _ = run_layers(vt, x + positions)
            assert torch.allclose(vt.encoder(x), vt.encoder.ln(plain[-1]), atol=1e-12)
        x = x + positions
        if registers:
            x = torch.cat([x[:, :1], register_tokens, x[:, 1:]], dim=1)
        states, maps = run_layers(vt, x, gammas)
        hidden = vt.encoder.ln(states[-1])
        runs.append(record(pixels, grid, token_names(grid, registers=registers), states, maps, hidden))
    state = {"embeddings.cls_token": vt.class_token, "embeddings.mask_token": mask_token}
    if registers:
        state["embeddings.register_tokens"] = register_tokens
    state["embeddings.position_embeddings"] = vt.encoder.pos_embedding
    state.update(linear_state(vt.conv_proj, "embeddings.patch_embeddings.projection"))
    for i, block in enumerate(vt.encoder.layers):
        p = f"encoder.layer.{i}"
        state.update(linear_state(block.ln_1, f"{p}.norm1"))
        state.update(qkv_state(block.self_attention, f"{p}.attention.attention",
                               out_name=f"{p}.attention.output.dense"))
        state[f"{p}.layer_scale1.lambda1"] = gammas[i][0]
        state.update(linear_state(block.ln_2, f"{p}.norm2"))
        state.update(linear_state(block.mlp[0], f"{p}.mlp.fc1"))
        state.update(linear_state(block.mlp[3], f"{p}.mlp.fc2"))
        state[f"{p}.layer_scale2.lambda1"] = gammas[i][1]
    state.update(linear_state(vt.encoder.ln, "layernorm"))
    config = {"architectures": ["Dinov2WithRegistersModel" if registers else "Dinov2Model"],
              "model_type": call, "attention_probs_dropout_prob": 0.0, "drop_path_rate": 0.0,
              "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "hidden_size": d, "image_size": image,
              "initializer_range": 0.02, "layer_norm_eps": eps, "layerscale_value": 1.0, "mlp_ratio": mlp_ratio,
              "num_attention_heads": HEADS, "num_channels": 3, "num_hidden_layers": LAYERS, "patch_size": patch,
              "qkv_bias": True, "torch_dtype": "float32", "transformers_version": "4.31.0.dev0",
              "use_swiglu_ffn": False}
    if registers:  # as facebook/dinov2-with-registers-* write it (a BackboneConfigMixin config)
        stages = ["stem"] + [f"stage{i}" for i in range(1, LAYERS + 1)]
        config.update({"apply_layernorm": True, "num_register_tokens": registers, "out_features": [stages[-1]],
                       "out_indices": [LAYERS], "reshape_hidden_states": True, "stage_names": stages,
                       "transformers_version": "4.48.0.dev0"})
    return {"name": config["architectures"][0], "config": config, "state": {k: t(v) for k, v in state.items()},
            "runs": runs}


def clip_vision_config(image, patch, projection_dim):
    return {"attention_dropout": 0.0, "hidden_act": "quick_gelu", "hidden_size": D, "image_size": image,
            "initializer_factor": 1.0, "initializer_range": 0.02, "intermediate_size": MLP, "layer_norm_eps": 1e-5,
            "model_type": "clip_vision_model", "num_attention_heads": HEADS, "num_channels": 3,
            "num_hidden_layers": LAYERS, "patch_size": patch, "projection_dim": projection_dim}


def clip_case(full):
    """6. CLIPVisionModel / 7. CLIPModel's vision tower, visual projection and (ignored) text tower."""
    image, patch, eps, projection_dim = (18, 6, 1e-5, 16) if full else (16, 4, 1e-5, 16)
    vt = vision_transformer(image, patch, eps)
    with torch.no_grad():
        vt.conv_proj = nn.Conv2d(3, D, kernel_size=patch, stride=patch, bias=False).double()
        vt.conv_proj.weight.copy_(randn(D, 3, patch, patch, scale=1.3 / math.sqrt(3 * patch * patch)))
    for block in vt.encoder.layers:
        block.mlp[1] = QuickGELU()
        z = randn(1, 5, D)
        manual = block.mlp[3](block.mlp[0](z) * torch.sigmoid(1.702 * block.mlp[0](z)))
        assert torch.allclose(block.mlp(z), manual, atol=1e-12)
    pre_layrnorm = nn.LayerNorm(D, eps=eps).double()
    randomize(pre_layrnorm)
    class_embedding = vt.class_token[0, 0]
    grid = (image // patch, image // patch)
    pixels = pixels_of(image, image)
    x = torch.cat([vt.class_token, vt._process_input(pixels)], dim=1) + vt.encoder.pos_embedding
    x = pre_layrnorm(x)
    states, maps = run_layers(vt, x)
    assert torch.allclose(vt.encoder.layers(x), states[-1], atol=1e-12)
    hidden = states[-1]  # CLIP's last_hidden_state: no final norm on the sequence
    pooled = vt.encoder.ln(hidden[0, 0])  # post_layernorm of token 0
    v = "vision_model"
    state = {f"{v}.embeddings.class_embedding": class_embedding,
             f"{v}.embeddings.patch_embedding.weight": vt.conv_proj.weight,
             f"{v}.embeddings.position_embedding.weight": vt.encoder.pos_embedding[0],
             **linear_state(pre_layrnorm, f"{v}.pre_layrnorm")}
    for i, block in enumerate(vt.encoder.layers):
        p = f"{v}.encoder.layers.{i}"
        state.update(linear_state(block.ln_1, f"{p}.layer_norm1"))
        state.update(qkv_state(block.self_attention, f"{p}.self_attn", ("q_proj", "k_proj", "v_proj"),
                               out_name=f"{p}.self_attn.out_proj"))
        state.update(linear_state(block.ln_2, f"{p}.layer_norm2"))
        state.update(linear_state(block.mlp[0], f"{p}.mlp.fc1"))
        state.update(linear_state(block.mlp[3], f"{p}.mlp.fc2"))
    state.update(linear_state(vt.encoder.ln, f"{v}.post_layernorm"))
    extra = {"pooled": pooled}
    vision_config = clip_vision_config(image, patch, projection_dim)
    if full:
        visual_projection = randn(projection_dim, D, scale=1.0 / math.sqrt(D))
        features = visual_projection @ pooled
        extra.update({"image_embeds": features, "image_embeds_normalized": features / features.norm()})
        state["visual_projection.weight"] = visual_projection
        text = {"vocab_size": 20, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 1,
                "num_attention_heads": 2, "max_position_embeddings": 8}
        dt = text["hidden_size"]
        state["text_projection.weight"] = randn(projection_dim, dt, scale=0.25)
        state["logit_scale"] = f32(torch.tensor(2.6592, dtype=f64))
        state["text_model.embeddings.token_embedding.weight"] = randn(text["vocab_size"], dt)
        state["text_model.embeddings.position_embedding.weight"] = randn(text["max_position_embeddings"], dt)
        p = "text_model.encoder.layers.0.self_attn.q_proj"  # a few of the text tower's tensors, not all
        state[f"{p}.weight"], state[f"{p}.bias"] = randn(dt, dt, scale=0.25), randn(dt, scale=0.2)
        state["text_model.final_layer_norm.weight"] = randn(dt, scale=0.2, around=1.0)
        state["text_model.final_layer_norm.bias"] = randn(dt, scale=0.2)
        text_config = {"attention_dropout": 0.0, "bos_token_id": 18, "eos_token_id": 19, "hidden_act": "quick_gelu",
                       "initializer_factor": 1.0, "initializer_range": 0.02, "layer_norm_eps": 1e-5,
                       "model_type": "clip_text_model", "pad_token_id": 1, "projection_dim": projection_dim, **text}
        config = {"architectures": ["CLIPModel"], "initializer_factor": 1.0, "logit_scale_init_value": 2.6592,
                  "model_type": "clip", "projection_dim": projection_dim, "text_config": text_config,
                  "torch_dtype": "float32", "transformers_version": "4.46.0", "vision_config": vision_config}
    else:
        config = {"architectures": ["CLIPVisionModel"], **vision_config, "torch_dtype": "float32",
                  "transformers_version": "4.46.0"}
    run = record(pixels, grid, token_names(grid), states, maps, hidden, **extra)
    return {"name": config["architectures"][0], "config": config, "state": {k: t(v) for k, v in state.items()},
            "runs": [run]}


# facebook/dinov2-small's preprocessor_config.json at the goldens' size: the shortest edge to 64 (256 there), the
# centre 56 × 56 (224).
PREPROCESSOR = {
    "crop_size": {"height": 56, "width": 56}, "do_center_crop": True, "do_convert_rgb": True, "do_normalize": True,
    "do_rescale": True, "do_resize": True, "image_mean": [0.485, 0.456, 0.406],
    "image_processor_type": "BitImageProcessor", "image_std": [0.229, 0.224, 0.225], "resample": 3,
    "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 64},
}


def main():
    with torch.no_grad():
        cases = [
            vit_case(classifier=True),
            vit_case(classifier=False),
            deit_case(),
            dinov2_case(registers=0),
            dinov2_case(registers=4),
            clip_case(full=False),
            clip_case(full=True),
        ]
        interpolations = [
            interpolation(call, side, height, width)
            for call in ("dinov2", "dinov2_with_registers")
            for side, height, width in [(4, 42, 70), (4, 98, 98), (4, 28, 28), (5, 126, 84), (4, 56, 56),
                                        (4, 56, 60), (4, 45, 83), (3, 266, 126)]
        ]
    text = json.dumps({"cases": cases, "interpolations": interpolations}, separators=(",", ":")) + "\n"
    (HERE / "vision.json").write_text(text)
    # The registers case as a checkpoint's files, with a preprocessor_config.json as DINOv2's repositories write it
    # (BitImageProcessor) at this model's 56 × 56: what docs/api.md loads.
    folder = HERE / "vision" / "dinov2-with-registers"
    write_checkpoint(next(c for c in cases if c["name"] == "Dinov2WithRegistersModel"), folder)
    (folder / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR, indent=2) + "\n")
    print(f"wrote {HERE / 'vision.json'}: {len(cases)} cases, {len(interpolations)} interpolations, "
          f"{len(text) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
