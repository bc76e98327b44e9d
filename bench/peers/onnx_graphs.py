"""ONNX graphs of the benchmark's workloads, with the very weights AttnScope runs.

The coordinator (bench/index.mjs) writes the weights as safetensors files into a
folder; this script reads them and writes, beside them:

  mha.onnx          X [n, 768] -> Y [n, 768], P [12, n, n]     (x·W layout, no biases)
  bert.onnx         ids, positions [n] int64 -> hidden [n, 768], P0..P11 [12, n, n]
  gemm_<k>x<m>.onnx X [n, k] -> Y [n, m]

and, from a Llama-family checkpoint (config.json, model.safetensors in BF16 or F32, the Hub's names):

  llm.onnx          ids [n] int64, cos, sin [n, head_dim], mask [n, n] -> logits [n, vocab], P0.. [heads, n, n]

and, from a MarianMTModel checkpoint (F32, the Hub's names), the three graphs transformers.js runs a translation with
(the encoder; the decoder's first call, which projects the encoder's output into each layer's cross keys and values;
the decoder with past keys and values, one token a call), every map returned:

  encoder.onnx      ids, positions [m] int64 -> hidden [m, d], E0.. [heads, m, m]
  cross.onnx        hidden [m, d] -> ck0, cv0, .. [heads, m, head_dim]
  decoder.onnx      id [1] int64, position [1] int64, ck*, cv* [heads, m, hd], pk*, pv* [heads, t, hd]
                    -> logits [1, vocab], k*, v* [heads, t + 1, hd], S0.. [heads, 1, t + 1], C0.. [heads, 1, m]

and, from a ViTModel or Dinov2Model checkpoint (F32, the Hub's names, run at its trained image_size), the graph a
transformers.js "-with-attentions" export gives (pre-LN blocks, DINOv2's layer scale, exact GELU):

  model.onnx        pixel_values [1, 3, H, W] -> last_hidden_state [n, d], P0.. [heads, n, n]
                    (+ pooler_output [1, d] for ViTModel: tanh of a dense layer on [CLS])

and, from a WhisperForConditionalGeneration checkpoint (F32, the Hub's names), the three graphs transformers.js runs
speech with (the encoder on the log-mel features; each decoder layer's cross keys and values; the decoder with past):

  encoder.onnx      features [1, mels, 3000] -> hidden [1500, d]
  cross.onnx        hidden [1500, d] -> ck0, cv0, .. [heads, 1500, head_dim]
  decoder.onnx      ids, positions [s] int64, mask [s, t + s], ck*, cv* [heads, 1500, hd], pk*, pv* [heads, t, hd]
                    -> logits [s, vocab], k*, v* [heads, t + s, hd], S0.. [heads, s, t + s], C0.. [heads, s, 1500]

Run with Debian's python3-onnx:  /usr/bin/python3 bench/peers/onnx_graphs.py <folder>
                                 /usr/bin/python3 bench/peers/onnx_graphs.py --llm <checkpoint folder>
                                 /usr/bin/python3 bench/peers/onnx_graphs.py --marian <checkpoint folder>
                                 /usr/bin/python3 bench/peers/onnx_graphs.py --whisper <checkpoint folder>
                                 /usr/bin/python3 bench/peers/onnx_graphs.py --vit|--dinov2 <checkpoint folder>
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def read_safetensors(path):
    data = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        if info["dtype"] == "BF16":  # float32's top half
            bits = np.frombuffer(data, np.uint16, (end - start) // 2, 8 + length + start).astype(np.uint32) << 16
            out[name] = bits.view(np.float32).reshape(info["shape"])
        else:
            assert info["dtype"] == "F32", name
            out[name] = np.frombuffer(data, np.float32, (end - start) // 4, 8 + length + start).reshape(info["shape"])
    return out


class Graph:
    """Nodes and initializers, named as they are added."""

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, array, hint="c"):
        n = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), n))
        return n

    def op(self, kind, inputs, hint=None, outputs=None, **attrs):
        outs = outputs or [self.name(hint or kind.lower())]
        self.nodes.append(helper.make_node(kind, inputs, outs, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def linear(self, x, w, b=None):
        y = self.op("MatMul", [x, self.const(w, "w")])
        return self.op("Add", [y, self.const(b, "b")]) if b is not None else y

    def attention(self, x, wq, wk, wv, wo, heads, biases=(None, None, None, None), weights_name=None):
        """Multi-head self-attention of x [n, d]; returns (output [n, d], weights [heads, n, n])."""
        d = wq.shape[0]
        dk = d // heads
        split = self.const(np.array([-1, heads, dk], np.int64), "shape")

        def heads_of(w, b, perm):
            return self.op("Transpose", [self.op("Reshape", [self.linear(x, w, b), split])], perm=perm)

        q = heads_of(wq, biases[0], [1, 0, 2])  # [h, n, dk]
        kt = heads_of(wk, biases[1], [1, 2, 0])  # [h, dk, n]
        v = heads_of(wv, biases[2], [1, 0, 2])
        scores = self.op("Mul", [self.op("MatMul", [q, kt]), self.const(np.array(1 / np.sqrt(dk), np.float32))])
        p = self.op("Softmax", [scores], outputs=[weights_name] if weights_name else None, axis=-1)
        o = self.op("Transpose", [self.op("MatMul", [p, v])], perm=[1, 0, 2])
        merged = self.op("Reshape", [o, self.const(np.array([-1, d], np.int64), "shape")])
        return self.linear(merged, wo, biases[3]), p

    def layer_norm(self, x, g, b, eps):
        return self.op("LayerNormalization", [x, self.const(g, "g"), self.const(b, "b")], axis=-1, epsilon=eps)

    def save(self, path, inputs, outputs):
        graph = helper.make_graph(self.nodes, "bench", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=OPSET, producer_name="attnscope-bench")
        onnx.checker.check_model(model)
        onnx.save(model, path)


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def mha(folder):
    w = read_safetensors(folder / "mha.safetensors")
    g = Graph()
    y, _ = g.attention("X", w["wq"], w["wk"], w["wv"], w["wo"], 12, weights_name="P")
    g.op("Identity", [y], outputs=["Y"])
    g.save(folder / "mha.onnx", [f32("X", ["n", 768])], [f32("Y", ["n", 768]), f32("P", [12, "n", "n"])])


def gemm(folder, k, m):
    w = read_safetensors(folder / f"gemm_{k}x{m}.safetensors")["w"]
    g = Graph()
    g.op("MatMul", ["X", g.const(w, "w")], outputs=["Y"])
    g.save(folder / f"gemm_{k}x{m}.onnx", [f32("X", ["n", k])], [f32("Y", ["n", m])])


def bert(folder):
    """BERT's encoder (post-LayerNorm, erf GELU) from a checkpoint in the Hub's tensor names."""
    t = read_safetensors(folder / "bert" / "model.safetensors")
    config = json.loads((folder / "bert" / "config.json").read_text())
    heads, eps, layers = config["num_attention_heads"], config["layer_norm_eps"], config["num_hidden_layers"]
    g = Graph()
    x = g.op("Add", [
        g.op("Gather", [g.const(t["embeddings.word_embeddings.weight"], "word"), "ids"], axis=0),
        g.op("Gather", [g.const(t["embeddings.position_embeddings.weight"], "pos"), "positions"], axis=0),
    ])
    x = g.op("Add", [x, g.const(t["embeddings.token_type_embeddings.weight"][0], "type")])
    x = g.layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
    outputs = []
    for l in range(layers):
        p = f"encoder.layer.{l}."
        lin = lambda m: (t[p + m + ".weight"].T, t[p + m + ".bias"])  # PyTorch [out, in] -> x·W
        wq, bq = lin("attention.self.query")
        wk, bk = lin("attention.self.key")
        wv, bv = lin("attention.self.value")
        wo, bo = lin("attention.output.dense")
        a, _ = g.attention(x, wq, wk, wv, wo, heads, (bq, bk, bv, bo), weights_name=f"P{l}")
        outputs.append(f32(f"P{l}", [heads, "n", "n"]))
        x = g.layer_norm(g.op("Add", [x, a]), t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"], eps)
        w1, b1 = lin("intermediate.dense")
        w2, b2 = lin("output.dense")
        h = g.linear(x, w1, b1)
        # GELU(h) = h · (1 + erf(h / √2)) / 2
        erf = g.op("Erf", [g.op("Mul", [h, g.const(np.array(1 / np.sqrt(2), np.float32))])])
        h = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, g.const(np.array(1, np.float32))])]), g.const(np.array(0.5, np.float32))])
        x = g.layer_norm(g.op("Add", [x, g.linear(h, w2, b2)]), t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"], eps)
    g.op("Identity", [x], outputs=["hidden"])
    ints = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["n"])
    g.save(folder / "bert.onnx", [ints("ids"), ints("positions")], [f32("hidden", ["n", 768])] + outputs)


def llama(folder):
    """A Llama-family decoder (RMSNorm, rotate-half RoPE from cos/sin inputs, grouped-query attention, SwiGLU),
    every layer's attention weights and every position's logits returned, as AttnScope's run with topK gives."""
    t = read_safetensors(folder / "model.safetensors")
    c = json.loads((folder / "config.json").read_text())
    d, heads, kv, layers = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["num_hidden_layers"]
    hd, rep, eps = d // heads, heads // kv, c["rms_norm_eps"]
    g = Graph()
    shape = lambda *dims: g.const(np.array(dims, np.int64), "shape")

    def rms_norm(x, w):
        mean = g.op("ReduceMean", [g.op("Mul", [x, x])], axes=[-1], keepdims=1)
        inverse = g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [mean, g.const(np.array(eps, np.float32))])])])
        return g.op("Mul", [g.op("Mul", [x, inverse]), g.const(w, "norm")])

    cos = g.op("Reshape", ["cos", shape(-1, 1, hd)])  # [n, 1, hd]: one table for every head
    sin = g.op("Reshape", ["sin", shape(-1, 1, hd)])

    def rotary(x, count):  # x [n, count * hd] -> [n, count, hd], rotated: x·cos + rotate_half(x)·sin
        x = g.op("Reshape", [x, shape(-1, count, hd)])
        first, second = g.op("Split", [x, g.const(np.array([hd // 2, hd // 2], np.int64))], axis=-1, outputs=[g.name("x1"), g.name("x2")])
        half = g.op("Concat", [g.op("Neg", [second]), first], axis=-1)
        return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [half, sin])])

    embed = t["model.embed_tokens.weight"]
    x = g.op("Gather", [g.const(embed, "embed"), "ids"], axis=0)
    outputs = []
    for l in range(layers):
        p = f"model.layers.{l}."
        w = lambda m: t[p + m + ".weight"].T  # PyTorch [out, in] -> x·W
        h = rms_norm(x, t[p + "input_layernorm.weight"])
        q = g.op("Transpose", [g.op("Reshape", [rotary(g.linear(h, w("self_attn.q_proj")), heads), shape(-1, kv, rep, hd)])], perm=[1, 2, 0, 3])  # [kv, rep, n, hd]
        k = g.op("Transpose", [g.op("Reshape", [rotary(g.linear(h, w("self_attn.k_proj")), kv), shape(-1, kv, 1, hd)])], perm=[1, 2, 3, 0])  # [kv, 1, hd, n]
        v = g.op("Transpose", [g.op("Reshape", [g.linear(h, w("self_attn.v_proj")), shape(-1, kv, 1, hd)])], perm=[1, 2, 0, 3])  # [kv, 1, n, hd]
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), g.const(np.array(1 / np.sqrt(hd), np.float32))]), "mask"])
        weights = g.op("Softmax", [scores], axis=-1)  # [kv, rep, n, n]: query head kv·rep + r reads key/value head kv
        g.op("Reshape", [weights, shape(heads, -1, 0)], outputs=[f"P{l}"], allowzero=0)
        outputs.append(f32(f"P{l}", [heads, "n", "n"]))
        o = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [weights, v])], perm=[2, 0, 1, 3]), shape(-1, d)])
        x = g.op("Add", [x, g.linear(o, w("self_attn.o_proj"))])
        h = rms_norm(x, t[p + "post_attention_layernorm.weight"])
        gate = g.linear(h, w("mlp.gate_proj"))
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        x = g.op("Add", [x, g.linear(g.op("Mul", [silu, g.linear(h, w("mlp.up_proj"))]), w("mlp.down_proj"))])
    head = t["lm_head.weight"] if "lm_head.weight" in t else embed  # tied: the embedding
    g.op("MatMul", [rms_norm(x, t["model.norm.weight"]), g.const(np.ascontiguousarray(head.T), "head")], outputs=["logits"])
    table = lambda name: f32(name, ["n", hd])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])
    g.save(folder / "llm.onnx", [ids, table("cos"), table("sin"), f32("mask", ["n", "n"])], [f32("logits", ["n", c["vocab_size"]])] + outputs)


def marian(folder):
    """MarianMTModel (post-LN, SiLU, embeddings × √d, sinusoidal positions, the head tied to the shared embedding plus
    final_logits_bias) as encoder, cross and decoder-with-past graphs."""
    t = read_safetensors(folder / "model.safetensors")
    c = json.loads((folder / "config.json").read_text())
    d, heads, vocab = c["d_model"], c["encoder_attention_heads"], c["vocab_size"]
    hd, eps, scale = d // heads, 1e-5, np.float32(np.sqrt(d) if c.get("scale_embedding") else 1.0)
    n_pos = c["max_position_embeddings"]
    angle = np.array([[p / 10000 ** (2 * (j // 2) / d) for j in range(d)] for p in range(n_pos)])
    positions = np.concatenate([np.sin(angle[:, 0::2]), np.cos(angle[:, 1::2])], axis=1).astype(np.float32)
    shared = t["model.shared.weight"]
    lin = lambda p: (t[p + ".weight"].T, t[p + ".bias"])  # PyTorch [out, in] -> x·W
    ln = lambda g, x, p: g.layer_norm(x, t[p + ".weight"], t[p + ".bias"], eps)

    def embed(g, ids, pos):
        x = g.op("Mul", [g.op("Gather", [g.const(shared, "shared"), ids], axis=0), g.const(scale, "scale")])
        return g.op("Add", [x, g.op("Gather", [g.const(positions, "positions"), pos], axis=0)])

    def heads_of(g, x, w, b, perm):  # x [n, d] -> [heads, n, hd] (perm [1, 0, 2]) or [heads, hd, n] ([1, 2, 0])
        return g.op("Transpose", [g.op("Reshape", [g.linear(x, w, b), g.const(np.array([-1, heads, hd], np.int64))])], perm=perm)

    def attend(g, q, k, v, weights_name):  # q [h, n, hd], k [h, t, hd], v [h, t, hd] -> [n, d], weights [h, n, t]
        kt = g.op("Transpose", [k], perm=[0, 2, 1])
        scores = g.op("Mul", [g.op("MatMul", [q, kt]), g.const(np.array(1 / np.sqrt(hd), np.float32))])
        p = g.op("Softmax", [scores], outputs=[weights_name], axis=-1)
        o = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[1, 0, 2])
        return g.op("Reshape", [o, g.const(np.array([-1, d], np.int64))])

    def ffn(g, x, p):
        h = g.linear(x, *lin(p + "fc1"))
        return g.linear(g.op("Mul", [h, g.op("Sigmoid", [h])]), *lin(p + "fc2"))

    # The encoder: the source's every map.
    g = Graph()
    x = embed(g, "ids", "positions")
    maps = []
    for l in range(c["encoder_layers"]):
        p = f"model.encoder.layers.{l}."
        q = heads_of(g, x, *lin(p + "self_attn.q_proj"), [1, 0, 2])
        k = heads_of(g, x, *lin(p + "self_attn.k_proj"), [1, 0, 2])
        v = heads_of(g, x, *lin(p + "self_attn.v_proj"), [1, 0, 2])
        a = g.linear(attend(g, q, k, v, f"E{l}"), *lin(p + "self_attn.out_proj"))
        maps.append(f32(f"E{l}", [heads, "m", "m"]))
        x = ln(g, g.op("Add", [x, a]), p + "self_attn_layer_norm")
        x = ln(g, g.op("Add", [x, ffn(g, x, p)]), p + "final_layer_norm")
    g.op("Identity", [x], outputs=["hidden"])
    ints = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["m"])
    g.save(folder / "encoder.onnx", [ints("ids"), ints("positions")], [f32("hidden", ["m", d])] + maps)

    # Each decoder layer's cross keys and values of the encoder's output, once per source.
    layers = c["decoder_layers"]
    g = Graph()
    outs = []
    for l in range(layers):
        p = f"model.decoder.layers.{l}.encoder_attn."
        g.op("Identity", [heads_of(g, "hidden", *lin(p + "k_proj"), [1, 0, 2])], outputs=[f"ck{l}"])
        g.op("Identity", [heads_of(g, "hidden", *lin(p + "v_proj"), [1, 0, 2])], outputs=[f"cv{l}"])
        outs += [f32(f"ck{l}", [heads, "m", hd]), f32(f"cv{l}", [heads, "m", hd])]
    g.save(folder / "cross.onnx", [f32("hidden", ["m", d])], outs)

    # The decoder, one token after its past keys and values.
    g = Graph()
    x = embed(g, "id", "position")
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64, [1]) for n in ("id", "position")]
    outs = []
    for l in range(layers):
        p = f"model.decoder.layers.{l}."
        q = heads_of(g, x, *lin(p + "self_attn.q_proj"), [1, 0, 2])
        k = g.op("Concat", [f"pk{l}", heads_of(g, x, *lin(p + "self_attn.k_proj"), [1, 0, 2])], outputs=[f"k{l}"], axis=1)
        v = g.op("Concat", [f"pv{l}", heads_of(g, x, *lin(p + "self_attn.v_proj"), [1, 0, 2])], outputs=[f"v{l}"], axis=1)
        a = g.linear(attend(g, q, k, v, f"S{l}"), *lin(p + "self_attn.out_proj"))
        x = ln(g, g.op("Add", [x, a]), p + "self_attn_layer_norm")
        q = heads_of(g, x, *lin(p + "encoder_attn.q_proj"), [1, 0, 2])
        a = g.linear(attend(g, q, f"ck{l}", f"cv{l}", f"C{l}"), *lin(p + "encoder_attn.out_proj"))
        x = ln(g, g.op("Add", [x, a]), p + "encoder_attn_layer_norm")
        x = ln(g, g.op("Add", [x, ffn(g, x, p)]), p + "final_layer_norm")
        ins += [f32(f"ck{l}", [heads, "m", hd]), f32(f"cv{l}", [heads, "m", hd])]
        ins += [f32(f"pk{l}", [heads, "t", hd]), f32(f"pv{l}", [heads, "t", hd])]
        outs += [f32(f"k{l}", [heads, "t1", hd]), f32(f"v{l}", [heads, "t1", hd])]
        outs += [f32(f"S{l}", [heads, 1, "t1"]), f32(f"C{l}", [heads, 1, "m"])]
    logits = g.op("MatMul", [x, g.const(np.ascontiguousarray(shared.T), "head")])
    g.op("Add", [logits, g.const(t["final_logits_bias"][0], "bias")], outputs=["logits"])
    g.save(folder / "decoder.onnx", ins, [f32("logits", [1, vocab])] + outs)


def whisper(folder):
    """WhisperForConditionalGeneration (two Conv1d with exact GELU, the checkpoint's positions, pre-LN blocks, biases
    on every projection but k, a final LayerNorm on each stack, the head tied to the decoder's embedding) as encoder,
    cross and decoder-with-past graphs, as transformers.js runs Whisper; the decoder returns every map."""
    t = read_safetensors(folder / "model.safetensors")
    c = json.loads((folder / "config.json").read_text())
    d, heads, vocab = c["d_model"], c["decoder_attention_heads"], c["vocab_size"]
    hd, eps = d // heads, 1e-5
    lin = lambda p: (t[p + ".weight"].T, t.get(p + ".bias"))  # PyTorch [out, in] -> x·W; k_proj has no bias
    ln = lambda g, x, p: g.layer_norm(x, t[p + ".weight"], t[p + ".bias"], eps)

    def gelu(g, h):  # h · (1 + erf(h / √2)) / 2
        erf = g.op("Erf", [g.op("Mul", [h, g.const(np.array(1 / np.sqrt(2), np.float32))])])
        return g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, g.const(np.array(1, np.float32))])]), g.const(np.array(0.5, np.float32))])

    def heads_of(g, x, w, b):  # x [n, d] -> [heads, n, hd]
        return g.op("Transpose", [g.op("Reshape", [g.linear(x, w, b), g.const(np.array([-1, heads, hd], np.int64))])], perm=[1, 0, 2])

    def attend(g, q, k, v, weights_name=None):  # q [h, n, hd], k, v [h, t, hd] -> [n, d], weights [h, n, t]
        kt = g.op("Transpose", [k], perm=[0, 2, 1])
        scores = g.op("Mul", [g.op("MatMul", [q, kt]), g.const(np.array(1 / np.sqrt(hd), np.float32))])
        p = g.op("Softmax", [scores], outputs=[weights_name] if weights_name else None, axis=-1)
        o = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[1, 0, 2])
        return g.op("Reshape", [o, g.const(np.array([-1, d], np.int64))])

    def ffn(g, x, p):
        return g.linear(gelu(g, g.linear(ln(g, x, p + "final_layer_norm"), *lin(p + "fc1"))), *lin(p + "fc2"))

    # The encoder: log-mel features [1, mels, 3000] -> hidden [1500, d] (no maps: the bench asks none of either).
    g = Graph()
    conv = lambda x, p, stride: g.op("Conv", [x, g.const(t[p + ".weight"], "w"), g.const(t[p + ".bias"], "b")], pads=[1, 1], strides=[stride])
    x = gelu(g, conv("features", "model.encoder.conv1", 1))
    x = gelu(g, conv(x, "model.encoder.conv2", 2))  # [1, d, 1500]
    x = g.op("Transpose", [g.op("Squeeze", [x, g.const(np.array([0], np.int64))])], perm=[1, 0])
    x = g.op("Add", [x, g.const(t["model.encoder.embed_positions.weight"], "positions")])
    for l in range(c["encoder_layers"]):
        p = f"model.encoder.layers.{l}."
        h = ln(g, x, p + "self_attn_layer_norm")
        q, k, v = (heads_of(g, h, *lin(p + f"self_attn.{w}_proj")) for w in "qkv")
        x = g.op("Add", [x, g.linear(attend(g, q, k, v), *lin(p + "self_attn.out_proj"))])
        x = g.op("Add", [x, ffn(g, x, p)])
    g.op("Identity", [ln(g, x, "model.encoder.layer_norm")], outputs=["hidden"])
    mels = c["num_mel_bins"]
    g.save(folder / "encoder.onnx", [f32("features", [1, mels, 3000])], [f32("hidden", [1500, d])])

    # Each decoder layer's cross keys and values of the encoder's output, once per window.
    layers = c["decoder_layers"]
    g = Graph()
    outs = []
    for l in range(layers):
        p = f"model.decoder.layers.{l}.encoder_attn."
        g.op("Identity", [heads_of(g, "hidden", *lin(p + "k_proj"))], outputs=[f"ck{l}"])
        g.op("Identity", [heads_of(g, "hidden", *lin(p + "v_proj"))], outputs=[f"cv{l}"])
        outs += [f32(f"ck{l}", [heads, 1500, hd]), f32(f"cv{l}", [heads, 1500, hd])]
    g.save(folder / "cross.onnx", [f32("hidden", [1500, d])], outs)

    # The decoder: s new tokens (the prompt's 4 at once, then one a call) after their past keys and values, with an
    # additive mask [s, t + s] (causal among the new ones), every map returned.
    g = Graph()
    embed = t["model.decoder.embed_tokens.weight"]
    x = g.op("Add", [
        g.op("Gather", [g.const(embed, "embed"), "ids"], axis=0),
        g.op("Gather", [g.const(t["model.decoder.embed_positions.weight"], "positions"), "positions"], axis=0),
    ])
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64, ["s"]) for n in ("ids", "positions")]
    ins.append(f32("mask", ["s", "t1"]))
    outs = []

    def attend_masked(g, q, k, v, weights_name):
        kt = g.op("Transpose", [k], perm=[0, 2, 1])
        scores = g.op("Mul", [g.op("MatMul", [q, kt]), g.const(np.array(1 / np.sqrt(hd), np.float32))])
        p = g.op("Softmax", [g.op("Add", [scores, "mask"])], outputs=[weights_name], axis=-1)
        o = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[1, 0, 2])
        return g.op("Reshape", [o, g.const(np.array([-1, d], np.int64))])

    for l in range(layers):
        p = f"model.decoder.layers.{l}."
        h = ln(g, x, p + "self_attn_layer_norm")
        q = heads_of(g, h, *lin(p + "self_attn.q_proj"))
        k = g.op("Concat", [f"pk{l}", heads_of(g, h, *lin(p + "self_attn.k_proj"))], outputs=[f"k{l}"], axis=1)
        v = g.op("Concat", [f"pv{l}", heads_of(g, h, *lin(p + "self_attn.v_proj"))], outputs=[f"v{l}"], axis=1)
        x = g.op("Add", [x, g.linear(attend_masked(g, q, k, v, f"S{l}"), *lin(p + "self_attn.out_proj"))])
        h = ln(g, x, p + "encoder_attn_layer_norm")
        q = heads_of(g, h, *lin(p + "encoder_attn.q_proj"))
        x = g.op("Add", [x, g.linear(attend(g, q, f"ck{l}", f"cv{l}", f"C{l}"), *lin(p + "encoder_attn.out_proj"))])
        x = g.op("Add", [x, ffn(g, x, p)])
        ins += [f32(f"ck{l}", [heads, 1500, hd]), f32(f"cv{l}", [heads, 1500, hd])]
        ins += [f32(f"pk{l}", [heads, "t", hd]), f32(f"pv{l}", [heads, "t", hd])]
        outs += [f32(f"k{l}", [heads, "t1", hd]), f32(f"v{l}", [heads, "t1", hd])]
        outs += [f32(f"S{l}", [heads, "s", "t1"]), f32(f"C{l}", [heads, "s", 1500])]
    x = ln(g, x, "model.decoder.layer_norm")
    g.op("MatMul", [x, g.const(np.ascontiguousarray(embed.T), "head")], outputs=["logits"])
    g.save(folder / "decoder.onnx", ins, [f32("logits", ["s", vocab])] + outs)


def vision(folder, model_type):
    """ViTModel or Dinov2Model at its trained size: the patches through a Conv (kernel and stride the patch size),
    [CLS] before them, the position table added as it is (Hugging Face interpolates it only at other sizes), pre-LN
    blocks (DINOv2: each sublayer's output times its layer scale before the residual add), the final LayerNorm; every
    layer's attention probabilities returned, and ViTModel's pooler."""
    t = read_safetensors(folder / "model.safetensors")
    c = json.loads((folder / "config.json").read_text())
    assert c["model_type"] == model_type, f"{folder}: a {c['model_type']} checkpoint, not {model_type}"
    d, heads, layers, eps = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"], c["layer_norm_eps"]
    patch, side = c["patch_size"], c["image_size"]
    n = 1 + (side // patch) ** 2
    dinov2 = model_type == "dinov2"
    names = ("norm1", "norm2", "mlp.fc1", "mlp.fc2") if dinov2 else ("layernorm_before", "layernorm_after", "intermediate.dense", "output.dense")
    p = next((s for s in ("vit.", "dinov2.") if s + "embeddings.cls_token" in t), "")  # a task model's prefix
    e = p + "embeddings."
    g = Graph()
    shape = lambda *dims: g.const(np.array(dims, np.int64), "shape")
    lin = lambda m: (t[m + ".weight"].T, t[m + ".bias"])  # PyTorch [out, in] -> x·W
    ln = lambda x, m: g.layer_norm(x, t[m + ".weight"], t[m + ".bias"], eps)

    conv = g.op("Conv", ["pixel_values", g.const(t[e + "patch_embeddings.projection.weight"], "patch"),
                         g.const(t[e + "patch_embeddings.projection.bias"], "patch_bias")],
                kernel_shape=[patch, patch], strides=[patch, patch])  # [1, d, rows, cols]
    patches = g.op("Transpose", [g.op("Reshape", [conv, shape(d, -1)])], perm=[1, 0])  # [rows·cols, d], row-major
    x = g.op("Concat", [g.const(t[e + "cls_token"].reshape(1, d), "cls"), patches], axis=0)
    x = g.op("Add", [x, g.const(t[e + "position_embeddings"].reshape(-1, d), "positions")])
    outputs = []
    for l in range(layers):
        b = f"{p}encoder.layer.{l}."
        wq, bq = lin(b + "attention.attention.query")
        wk, bk = lin(b + "attention.attention.key")
        wv, bv = lin(b + "attention.attention.value")
        wo, bo = lin(b + "attention.output.dense")
        a, _ = g.attention(ln(x, b + names[0]), wq, wk, wv, wo, heads, (bq, bk, bv, bo), weights_name=f"P{l}")
        outputs.append(f32(f"P{l}", [heads, n, n]))
        if dinov2:
            a = g.op("Mul", [a, g.const(t[b + "layer_scale1.lambda1"], "scale")])
        x = g.op("Add", [x, a])
        h = g.linear(ln(x, b + names[1]), *lin(b + names[2]))
        # GELU(h) = h · (1 + erf(h / √2)) / 2
        erf = g.op("Erf", [g.op("Mul", [h, g.const(np.array(1 / np.sqrt(2), np.float32))])])
        h = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, g.const(np.array(1, np.float32))])]), g.const(np.array(0.5, np.float32))])
        h = g.linear(h, *lin(b + names[3]))
        if dinov2:
            h = g.op("Mul", [h, g.const(t[b + "layer_scale2.lambda1"], "scale")])
        x = g.op("Add", [x, h])
    hidden = ln(x, p + "layernorm")
    g.op("Identity", [hidden], outputs=["last_hidden_state"])
    results = [f32("last_hidden_state", [n, d])]
    if p + "pooler.dense.weight" in t:
        cls = g.op("Gather", [hidden, g.const(np.array([0], np.int64), "first")], axis=0)  # [1, d]
        g.op("Tanh", [g.linear(cls, *lin(p + "pooler.dense"))], outputs=["pooler_output"])
        results.append(f32("pooler_output", [1, d]))
    g.save(folder / "model.onnx", [f32("pixel_values", [1, 3, side, side])], results + outputs)


if __name__ == "__main__":
    if sys.argv[1] == "--llm":
        llama(Path(sys.argv[2]))
        sys.exit(0)
    if sys.argv[1] == "--marian":
        marian(Path(sys.argv[2]))
        sys.exit(0)
    if sys.argv[1] == "--whisper":
        whisper(Path(sys.argv[2]))
        sys.exit(0)
    if sys.argv[1] in ("--vit", "--dinov2"):
        vision(Path(sys.argv[2]), sys.argv[1][2:])
        sys.exit(0)
    folder = Path(sys.argv[1])
    mha(folder)
    bert(folder)
    for path in folder.glob("gemm_*.safetensors"):
        k, m = path.stem.split("_")[1].split("x")
        gemm(folder, int(k), int(m))
