"""The family registry: every folder's declaration found once, docs/models.md's table made from
it, unknown architectures refused with the closest known family named."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlcx.compile.model_table import BEGIN, END, table
from mlcx.errors import UnsupportedModelError
from mlcx.frontends import registry

DOCS = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def test_docs_table_is_the_registrys():
    text = DOCS.read_text()
    page = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert page == table(), "run: python -m mlcx.compile.model_table docs/models.md"


def test_every_family_folder_declares_one_family():
    folders = sorted(p.parent.name for p in Path(registry.__file__).parent.glob("*/family.py"))
    assert len(registry.families()) == len(folders)
    names = [n for f in registry.families().values() for n in f.hf_names]
    assert len(names) == len(set(names)), "an HF architecture belongs to two families"


@pytest.mark.parametrize(
    ("name", "closest"),
    [("Gemma3nForCausalLM", "Gemma3ForCausalLM"), ("Qwen3NextForCausalLM", "Qwen3ForCausalLM")],
)
def test_unknown_architecture_names_the_closest_family(name, closest):
    with pytest.raises(UnsupportedModelError, match=f"closest mlcx knows is '{closest}'") as err:
        registry.for_hf(name)
    assert "To ask for it" in str(err.value)


def test_unknown_gguf_architecture_is_refused_with_the_list():
    with pytest.raises(UnsupportedModelError, match="mlcx reads GGUF files of: .*qwen3"):
        registry.for_gguf("falcon")
