"""ONNX graphs of the benchmark's workloads, with the very weights AttnScope runs.

The coordinator (bench/index.mjs) writes the weights as safetensors files into a
folder; this script reads them and writes, beside them:

  mha.onnx          X [n, 768] -> Y [n, 768], P [12, n, n]     (x·W layout, no biases)
  bert.onnx         ids, positions [n] int64 -> hidden [n, 768], P0..P11 [12, n, n]
  gemm_<k>x<m>.onnx X [n, k] -> Y [n, m]

and, from a Llama-family checkpoint (config.json, model.safetensors in BF16 or F32, the Hub's names):

  llm.onnx          ids [n] int64, cos, sin [n, head_dim], mask [n, n] -> logits [n, vocab], P0.. [heads, n, n]

Run with Debian's python3-onnx:  /usr/bin/python3 bench/peers/onnx_graphs.py <folder>
                                 /usr/bin/python3 bench/peers/onnx_graphs.py --llm <checkpoint folder>
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


if __name__ == "__main__":
    if sys.argv[1] == "--llm":
        llama(Path(sys.argv[2]))
        sys.exit(0)
    folder = Path(sys.argv[1])
    mha(folder)
    bert(folder)
    for path in folder.glob("gemm_*.safetensors"):
        k, m = path.stem.split("_")[1].split("x")
        gemm(folder, int(k), int(m))
