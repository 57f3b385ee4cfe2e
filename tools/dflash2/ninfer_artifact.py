"""Read a .ninfer artifact (docs/artifact-format.md) in Python and rebuild transformers' Qwen3_5ForCausalLM from it.

Independent of the C++ reader: parses the 64-byte header and the metadata JSON itself, maps the f32/bf16/f16/i32
tensors with numpy. Used by the DFlash2 tools because ninfer-tiny's HF checkpoint is gone; the artifact is the source.

    scripts/tools-env.sh python tools/dflash2/ninfer_artifact.py --check     # logits == tests/data/ninfer_tiny/prompt0_logits.f32
"""
import argparse
import json
import os
import struct

import numpy as np
import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_ARTIFACT = os.path.join(REPO, "models", "ninfer-tiny.ninfer")
MAGIC = b"NINFER\x1a\n"
NP_DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i8": np.int8}


class Artifact:
    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:8] != MAGIC:
                raise ValueError(f"{path}: not a .ninfer file (magic {head[:8]!r})")
            version, header_bytes = struct.unpack_from("<II", head, 8)
            if version != 1 or header_bytes != 64:
                raise ValueError(f"{path}: version {version}, header {header_bytes} (this reader: version 1, 64)")
            meta_off, meta_len, self.data_offset, self.data_bytes = struct.unpack_from("<QQQQ", head, 16)
            f.seek(meta_off)
            self.meta = json.loads(f.read(meta_len).decode("utf-8"))
        self._map = np.memmap(path, dtype=np.uint8, mode="r")
        self.entries = {t["name"]: t for t in self.meta["tensors"]}
        self.blobs = {b["name"]: b for b in self.meta["blobs"]}

    @property
    def config(self) -> dict:
        return self.meta["config"]

    def names(self, section: str | None = None) -> list[str]:
        return [t["name"] for t in self.meta["tensors"] if section is None or t["section"] == section]

    def tensor(self, name: str) -> torch.Tensor:
        e = self.entries[name]
        start = self.data_offset + e["offset"]
        raw = self._map[start:start + e["bytes"]]
        if e["dtype"] == "bf16":
            u16 = raw.view(np.uint16).astype(np.uint32) << 16
            arr = u16.view(np.float32)
        elif e["dtype"] in NP_DTYPES:
            arr = raw.view(NP_DTYPES[e["dtype"]])
        else:
            raise ValueError(f"{self.path}: tensor {name}: dtype {e['dtype']} not readable here")
        return torch.from_numpy(np.array(arr).reshape(e["shape"]))

    def blob(self, name: str) -> bytes:
        b = self.blobs[name]
        start = self.data_offset + b["offset"]
        return bytes(self._map[start:start + b["bytes"]])

    def tokenizer(self):
        from tokenizers import Tokenizer
        return Tokenizer.from_str(self.blob("tokenizer.json").decode("utf-8"))


def load_target(path: str = DEFAULT_ARTIFACT):
    """Returns (artifact, Qwen3_5ForCausalLM in f32 eval mode with the artifact's main-section weights)."""
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
    art = Artifact(path)
    cfg = dict(art.config)
    for k in ("architectures", "transformers_version", "model_type"):
        cfg.pop(k, None)
    config = Qwen3_5TextConfig(**cfg)
    config._attn_implementation = "eager"
    model = Qwen3_5ForCausalLM(config).eval()
    state = {n: art.tensor(n).float() for n in art.names("main")}
    if config.tie_word_embeddings:
        state.setdefault("lm_head.weight", state["model.embed_tokens.weight"])
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m != "lm_head.weight" or not config.tie_word_embeddings]
    if missing or unexpected:
        raise ValueError(f"{path}: weights do not match Qwen3_5ForCausalLM: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return art, model


def check(path: str):
    torch.set_num_threads(1)
    _, model = load_target(path)
    data = os.path.join(REPO, "tests", "data", "ninfer_tiny")
    ids = torch.from_numpy(np.fromfile(os.path.join(data, "prompt0_tokens.i32"), dtype=np.int32).astype(np.int64))
    want = torch.from_numpy(np.fromfile(os.path.join(data, "prompt0_logits.f32"), dtype=np.float32))
    with torch.no_grad():
        got = model(input_ids=ids[None]).logits[0].float().reshape(-1)
    rel = ((got - want).abs().max() / want.abs().max()).item()
    print(f"prompt0: {ids.numel()} tokens, max |diff| / max |want| = {rel:.3e}")
    if rel > 1e-5:
        raise SystemExit(f"logits differ from tests/data/ninfer_tiny/prompt0_logits.f32 (rel {rel:.3e})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifact", default=DEFAULT_ARTIFACT)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.check:
        check(a.artifact)
