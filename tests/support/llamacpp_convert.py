"""Tiny Hugging Face folders converted to GGUF by llama.cpp's own `convert_hf_to_gguf.py`, the
converter every GGUF people download went through: tensor names, q/k row orders, metadata keys
and the family's quirks come from llama.cpp, not from mlcx's idea of them.

The converter is the one in the llama.cpp tree the bench peers build (the llama-cpp-python
sdist, fetched once into $MLCX_CACHE/peers/src by the peer builds' source script). It runs in a
child process with its own gguf-py. Patched: the tiny tokenizers are not among the
pre-tokenizers the converter recognizes by hash, so the test names which one they are; and
they are byte-level BPE, written as such where a family's converter expects SentencePiece (or,
as Gemma 4's does, a Llama-style BPE with byte fallback).
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from mlcx.bench.peers.llamacpp_build import SCRIPTS, VERSION
from mlcx.cache import cache_dir
from tests.support.disk_cache import cache_root, kept_copy, tree_digest

# converted files between runs (MLCX_TEST_GGUF=off: none, =DIR: there)
CACHE = cache_root("MLCX_TEST_GGUF", "test-gguf")

_RUN = """
import runpy, sys
tree, pre = sys.argv[1], sys.argv[2]
sys.path[:0] = [tree + "/gguf-py", tree]
from conversion import base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
sentencepiece = base.TextModel._set_vocab_sentencepiece
def vocab(self, *args, **kwargs):
    if (self.dir_model / "tokenizer.model").is_file():
        return sentencepiece(self, *args, **kwargs)
    return self._set_vocab_gpt2()
base.TextModel._set_vocab_sentencepiece = vocab
from conversion import gemma
gemma4_vocab = gemma.Gemma4Model.set_vocab
def gemma4_or_byte_level(self):
    try:
        gemma4_vocab(self)
    except FileNotFoundError:  # not the Llama-style BPE Gemma 4's converter reads
        self._set_vocab_gpt2()
gemma.Gemma4Model.set_vocab = gemma4_or_byte_level
sys.argv = [tree + "/convert_hf_to_gguf.py", *sys.argv[3:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def llamacpp_tree() -> Path:
    """llama.cpp's source tree, fetched (about 77 MB, once per cache) when missing."""
    tree = cache_dir() / "peers" / "src" / f"llama_cpp_python-{VERSION}" / "vendor" / "llama.cpp"
    if not (tree / "convert_hf_to_gguf.py").exists():
        env = {**os.environ, "MLCX_CACHE": str(cache_dir()), "VERSION": VERSION}
        env["CACHE"] = env["MLCX_CACHE"]
        script = f'source "{SCRIPTS / "llamacpp-source.sh"}"'
        subprocess.run(["bash", "-c", script], env=env, check=True, capture_output=True)
    return tree


def convert(
    folder: Path, out: Path, pre: str = "default", outtype: str = "f32", mmproj: bool = False
) -> Path:
    """`folder` as llama.cpp writes it (`outtype`: f32, f16, q8_0, ...); `pre`: the GGUF
    pre-tokenizer name of its tokenizer; `mmproj`: its image encoder and projector instead of
    its text model (the converter's --mmproj). Kept between runs (CACHE), keyed by the folder's
    bytes and everything else the file depends on."""
    if out.exists():
        return out
    options = ["--outtype", outtype, *(["--mmproj"] * mmproj)]
    parts = {"folder": tree_digest(folder), "pre": pre, "options": options, **converter_identity()}

    def write(path: Path) -> None:
        cmd = [sys.executable, "-c", _RUN, str(llamacpp_tree()), pre, str(folder), *options]
        done = subprocess.run([*cmd, "--outfile", str(path)], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"convert_hf_to_gguf.py failed on {folder}:\n{done.stderr[-3000:]}")

    return kept_copy(CACHE, parts, out, write)


def converter_identity() -> dict[str, str]:
    """What a converted file depends on besides its inputs: llama.cpp's tree (by version), this
    module's patches, and the transformers that reads the tokenizer."""
    return {"llama.cpp": VERSION, "run": _RUN, "transformers": version("transformers")}
