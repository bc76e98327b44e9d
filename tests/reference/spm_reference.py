#!/usr/bin/python3
"""SentencePiece models trained here, and what Debian's python3-sentencepiece makes of a list of strings with them.

    /usr/bin/python3 tests/reference/spm_reference.py OUT_DIR < strings.json > reference.json

Trains unigram models with Debian's spm_train on a generated corpus (English, German and French words, digits,
punctuation, fullwidth and compatibility characters that NFKC rewrites), each with other normalizer settings, plus
one BPE model (which AttnScope refuses). Writes into OUT_DIR:

- source.spm, target.spm, vocab.json, tokenizer_config.json: a Marian tokenizer as Helsinki-NLP's repositories lay
  it out (vocab.json: </s> 0, <unk> 1, every piece of both models, <pad> last);
- fallback.spm (byte fallback), bare.spm (no dummy prefix, spaces kept), bpe.spm;
- t5.spm and tokenizer.json, tokenizer-new.json: T5's layout (pad 0, eos 1, unk 2, no bos) converted as transformers
  converts it, in the legacy layout (Precompiled; WhitespaceSplit + Metaspace) and the current one (Precompiled,
  Strip, Replace; Metaspace), with </s> after the text.

Prints, for each model and string, SentencePieceProcessor's pieces, ids and decoded text, and Marian's ids as
transformers' MarianTokenizer computes them (a leading >>lang<< code, the text split at its special tokens, pieces
looked up in vocab.json, </s> after) with its decoded text.
"""
import base64
import json
import pathlib
import random
import re
import subprocess
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
strings = json.load(sys.stdin)

WORDS = """the cat sat on mat dog runs fast slow house tree water light night day good bad small large
der die das Katze saß auf Matte Hund läuft schnell Haus Baum Wasser Licht Nacht Tag gut klein groß über Straße
le la les chat assis sur tapis chien court vite maison arbre eau lumière nuit jour très été où français
translation attention model encoder decoder token piece sentence word""".split()
EXTRA = ["１２３", "Ｈｅｌｌｏ", "ﬁne", "①", "㌀", "ｶﾀｶﾅ", "½", "™", "e\u0301", "2026", "3.14", "(", ")", ",", ".", "!", "?",
         "\"", "'", "-", "—", "…", "«", "»"]

rng = random.Random(20261127)
SYLLABLES = [c + v for c in "bdfghklmnprstvwzsch" for v in ["a", "e", "i", "o", "u", "ä", "ö", "ü", "é", "au", "ei"]]
WORDS += ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(600)]
corpus = out / "corpus.txt"
with corpus.open("w") as f:
    for _ in range(4000):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
        for _ in range(rng.randint(0, 2)):
            words.insert(rng.randint(0, len(words)), rng.choice(EXTRA))
        if rng.random() < 0.3:
            words[0] = words[0].capitalize()
        f.write(" ".join(words) + "\n")

COMMON = ["--model_type=unigram", "--num_threads=1", "--minloglevel=2"]
MODELS = {
    "source": ["--vocab_size=400"],
    "target": ["--vocab_size=300", "--normalization_rule_name=nmt_nfkc_cf", "--split_digits=true"],
    "fallback": ["--vocab_size=420", "--byte_fallback=true", "--character_coverage=0.98"],
    "bare": ["--vocab_size=350", "--add_dummy_prefix=false", "--remove_extra_whitespaces=false"],
    "t5": ["--vocab_size=380", "--pad_id=0", "--eos_id=1", "--unk_id=2", "--bos_id=-1"],
    "bpe": ["--vocab_size=300", "--model_type=bpe"],
}
for name, flags in MODELS.items():
    subprocess.run(["spm_train", f"--input={corpus}", f"--model_prefix={out / name}", *COMMON, *flags],
                   check=True, capture_output=True)
    (out / f"{name}.model").rename(out / f"{name}.spm")
    (out / f"{name}.vocab").unlink()
processors = {name: spm.SentencePieceProcessor(model_file=str(out / f"{name}.spm")) for name in MODELS if name != "bpe"}

# Marian: one vocab.json over both models' pieces.
vocab = {"</s>": 0, "<unk>": 1}
for name in ("source", "target"):
    sp = processors[name]
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        if not (sp.is_control(i) or sp.is_unknown(i)) and piece not in vocab:
            vocab[piece] = len(vocab)
vocab["<pad>"] = len(vocab)
(out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
(out / "tokenizer_config.json").write_text(json.dumps(
    {"unk_token": "<unk>", "eos_token": "</s>", "pad_token": "<pad>", "tokenizer_class": "MarianTokenizer"}))
SPECIALS = ("</s>", "<unk>", "<pad>")


def marian(text):
    sp = processors["source"]
    tokens = []
    if text.startswith(">>") and (end := text.find("<<")) != -1:
        tokens.append(text[:end + 2])
        text = text[end + 2:]
    for part in re.split("(</s>|<unk>|<pad>)", text):
        tokens += [part] if part in SPECIALS else sp.encode(part, out_type=str) if part else []
    ids = [vocab.get(t, vocab["<unk>"]) for t in tokens] + [vocab["</s>"]]
    # MarianTokenizer.convert_tokens_to_string: runs of pieces decoded by SentencePiece, special tokens as they are.
    names = {i: t for t, i in vocab.items()}
    text, run = "", []
    for i in ids:
        if names[i] in SPECIALS:
            text += sp.decode_pieces(run) + names[i] + " "
            run = []
        else:
            run.append(names[i])
    text += sp.decode_pieces(run)
    return {"ids": ids, "decoded": text.replace("\u2581", " ").strip()}


# T5: transformers' T5Converter (SpmConverter) on t5.spm.
proto = model_pb2.ModelProto()
proto.ParseFromString((out / "t5.spm").read_bytes())
charsmap = base64.b64encode(proto.normalizer_spec.precompiled_charsmap).decode()
t5_vocab = [[p.piece, p.score] for p in proto.pieces]
added = [{"id": i, "content": t5_vocab[i][0], "single_word": False, "lstrip": False, "rstrip": False,
          "normalized": False, "special": True} for i in (0, 1, 2)]
template = {"type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}}
model = {"type": "Unigram", "unk_id": proto.trainer_spec.unk_id, "vocab": t5_vocab}
legacy = {"version": "1.0", "added_tokens": added,
          "normalizer": {"type": "Precompiled", "precompiled_charsmap": charsmap},
          "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
              {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}]},
          "post_processor": template,
          "decoder": {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True},
          "model": model}
current = dict(legacy,
               normalizer={"type": "Sequence", "normalizers": [
                   {"type": "Precompiled", "precompiled_charsmap": charsmap},
                   {"type": "Strip", "strip_left": False, "strip_right": True},
                   {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]},
               pre_tokenizer={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
               decoder={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True})
(out / "tokenizer.json").write_text(json.dumps(legacy, ensure_ascii=False))
(out / "tokenizer-new.json").write_text(json.dumps(current, ensure_ascii=False))

reference = {name: [{"pieces": sp.encode(s, out_type=str), "ids": sp.encode(s), "decoded": sp.decode(sp.encode(s))}
                    for s in strings] for name, sp in processors.items()}
reference["marian"] = [marian(s) for s in strings]
json.dump(reference, sys.stdout, ensure_ascii=False)
