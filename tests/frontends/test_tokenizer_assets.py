import json
from pathlib import Path

import pytest
import tokenizers
from tokenizers import processors

from mlcx.errors import ArtifactError, ModelSourceError
from mlcx.frontends.tokenizer_assets import TokenizerAssets
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.support.tiny_tokenizers import train_byte_level_bpe

CORPUS = [
    "hello world, a tiny corpus 12345 for tokenizers.",
    "caf\u00e9 \u4e2d\u6587 \U0001f600!",
] * 30
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def tiny_tokenizer(bos_post_processor: bool) -> tokenizers.Tokenizer:
    backend = train_byte_level_bpe(CORPUS, SPECIALS, 300)
    if bos_post_processor:
        backend.post_processor = processors.TemplateProcessing(
            single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)]
        )
    return backend


def write_folder(folder: Path, bos_post_processor: bool = True, **config) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tiny_tokenizer(bos_post_processor).save(str(folder / "tokenizer.json"))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<|endoftext|>",
        "eos_token": {"__type": "AddedToken", "content": "<|im_end|>", "special": True},
        "chat_template": CHATML,
        **config,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return folder


def test_fields_from_hf_folder(tmp_path):
    folder = write_folder(tmp_path)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 0]}))
    (folder / "config.json").write_text(json.dumps({"eos_token_id": 1, "bos_token_id": 0}))
    assets = TokenizerAssets.from_hf_folder(folder)
    assert assets.chat_template == CHATML
    assert (assets.bos_token, assets.bos_token_id) == ("<|endoftext|>", 0)
    assert assets.eos_token == "<|im_end|>"
    assert assets.eos_token_ids == (2, 0, 1)
    assert assets.add_bos
    assert assets.tokenizer_json == (folder / "tokenizer.json").read_text()


def test_ids_and_bos_match_transformers(tmp_path):
    from transformers import AutoTokenizer

    folder = write_folder(tmp_path)
    reference = AutoTokenizer.from_pretrained(folder)
    assets = TokenizerAssets.from_hf_folder(folder)
    assert assets.bos_token_id == reference.bos_token_id
    assert assets.eos_token_ids[0] == reference.eos_token_id
    ours = Tokenizer(assets)
    text = "hello <|im_start|>world 123"
    assert ours.encode(text, add_special_tokens=True) == reference.encode(text)


def test_bos_follows_post_processor_not_flag(tmp_path):
    without = write_folder(tmp_path / "a", bos_post_processor=False, add_bos_token=False)
    flag_only = write_folder(tmp_path / "b", bos_post_processor=False, add_bos_token=True)
    both = write_folder(tmp_path / "c", bos_post_processor=True, add_bos_token=False)
    assert not TokenizerAssets.from_hf_folder(without).add_bos
    assert TokenizerAssets.from_hf_folder(flag_only).add_bos
    assert TokenizerAssets.from_hf_folder(both).add_bos


def test_chat_template_jinja_file_takes_precedence(tmp_path):
    folder = write_folder(tmp_path)
    (folder / "chat_template.jinja").write_text("{{ messages[0]['content'] }}")
    assert TokenizerAssets.from_hf_folder(folder).chat_template == "{{ messages[0]['content'] }}"


def test_named_chat_templates_pick_default(tmp_path):
    named = [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]
    folder = write_folder(tmp_path, chat_template=named)
    assert TokenizerAssets.from_hf_folder(folder).chat_template == "D"


def test_named_chat_templates_without_default_are_rejected(tmp_path):
    folder = write_folder(tmp_path, chat_template=[{"name": "tool_use", "template": "T"}])
    with pytest.raises(ModelSourceError, match="default"):
        TokenizerAssets.from_hf_folder(folder)


def test_no_chat_template_is_none(tmp_path):
    folder = write_folder(tmp_path, chat_template=None)
    assert TokenizerAssets.from_hf_folder(folder).chat_template is None


def test_missing_tokenizer_json_names_folder_and_file(tmp_path):
    with pytest.raises(ModelSourceError, match="tokenizer.json") as error:
        TokenizerAssets.from_hf_folder(tmp_path)
    assert str(tmp_path) in str(error.value)


def test_malformed_files_are_model_source_errors(tmp_path):
    folder = write_folder(tmp_path)
    (folder / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(ModelSourceError, match="tokenizer_config.json"):
        TokenizerAssets.from_hf_folder(folder)
    (folder / "tokenizer.json").write_text('{"model": 3}')
    with pytest.raises(ModelSourceError, match="tokenizer.json"):
        TokenizerAssets.from_hf_folder(folder)


def test_write_then_read_round_trips(tmp_path):
    assets = TokenizerAssets.from_hf_folder(write_folder(tmp_path / "hf"))
    assets.write(tmp_path / "artifact")
    assert sorted(p.name for p in (tmp_path / "artifact").iterdir()) == [
        "mlcx-tokenizer.json",
        "tokenizer.json",
    ]
    assert TokenizerAssets.read(tmp_path / "artifact") == assets
    assert Tokenizer.from_dir(tmp_path / "artifact").assets == assets


def test_corrupted_artifact_is_an_artifact_error(tmp_path):
    TokenizerAssets.from_hf_folder(write_folder(tmp_path / "hf")).write(tmp_path / "out")
    (tmp_path / "out" / "mlcx-tokenizer.json").write_text('{"add_bos": true}')
    with pytest.raises(ArtifactError, match="mlcx-tokenizer.json"):
        TokenizerAssets.read(tmp_path / "out")
    (tmp_path / "out" / "tokenizer.json").unlink()
    with pytest.raises(ArtifactError, match="tokenizer.json is missing"):
        TokenizerAssets.read(tmp_path / "out")


def test_add_bos_without_bos_id_is_rejected():
    with pytest.raises(ValueError, match="BOS"):
        TokenizerAssets("{}", None, None, (), True, None, None)
