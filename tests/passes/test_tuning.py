"""`mlcx tune` writes a database that round-trips, resumes, and is applied by compile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlcx.artifact.config import CONFIG_FILE, Artifact
from mlcx.compile.model import CompileRequest, export_model
from mlcx.compile.tune import TuneConfig, fused_module, model_of, tune_model
from mlcx.errors import MlcxError
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.passes.tuning.apply import apply_records
from mlcx.passes.tuning.records import MANIFEST, RECORDS, open_db
from mlcx.passes.tuning.tasks import extract_tasks
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from mlcx.targets.base import BuildOptions
from tests.support.cli import one_line_error, run_mlcx
from tests.support.tiny_models import TinySpec

TRIALS = 3
TVM = LinearKernels.TVM


@pytest.fixture(scope="module")
def request_(tiny_model):
    return CompileRequest(model=str(tiny_model(TinySpec())), quantization="q0f32")


@pytest.fixture(scope="module")
def tuned(request_, tmp_path_factory):
    config = TuneConfig(tmp_path_factory.mktemp("tuning") / "db", trials=TRIALS, linear_kernels=TVM)
    return config, tune_model(request_, config)


@pytest.fixture(scope="module")
def fused(request_):
    exported = export_model(request_)
    return fused_module(exported.mod, exported.tvm_target, TVM), exported.tvm_target


def test_database_round_trips(tuned, fused):
    config, summary = tuned
    assert summary.new_trials == TRIALS and summary.records == TRIALS
    assert (config.output / MANIFEST).is_file() and (config.output / RECORDS).is_file()
    db = open_db(config.output)
    assert len(db.records) == TRIALS and db.linear_kernels is TVM
    tasks, _ = extract_tasks(*fused)
    keys = {t.key for t in tasks}
    assert {r.workload for r in db.records} <= keys
    assert any(db.best(key) is not None for key in keys)


def test_rerun_resumes(tuned, request_):
    config, _ = tuned
    again = tune_model(request_, config)
    assert again.new_trials == 0 and again.records == TRIALS
    more = tune_model(request_, TuneConfig(config.output, trials=TRIALS + 1, linear_kernels=TVM))
    assert more.new_trials == 1 and more.records == TRIALS + 1


def test_kernel_set_of_a_database_is_fixed(tuned, request_):
    config, _ = tuned
    with pytest.raises(MlcxError, match="tuned with --linear-kernels tvm"):
        tune_model(request_, TuneConfig(config.output, trials=1))


def test_records_schedule_the_kernels(tuned, fused):
    config, _ = tuned
    mod, target = fused
    before = {gv.name_hint: f.script() for gv, f in mod.functions_items()}
    tuned_mod, applied = apply_records(mod, open_db(config.output))
    assert applied
    for name in applied:
        assert tuned_mod[name].attrs["tirx.is_scheduled"]
        assert tuned_mod[name].script() != before[name]


def test_tuned_artifact_generates_the_same_tokens(tuned, compiled):
    config, _ = tuned
    plain = compiled(TinySpec(), "q0f32", options=BuildOptions(linear_kernels=TVM))
    with_db = compiled(TinySpec(), "q0f32", options=BuildOptions(tuning_db=config.output))
    params = SamplingParams.greedy(max_tokens=12, ignore_eos=True)
    prompt = list(range(3, 40))
    [a] = LLM(plain).generate([prompt], params)[0].outputs
    [b] = LLM(with_db).generate([prompt], params)[0].outputs
    assert a.token_ids == b.token_ids


def test_missing_database_is_one_line_error(tmp_path, request_):
    result = run_mlcx(
        "compile",
        request_.model,
        "-q",
        "q0f32",
        "--tuning-db",
        str(tmp_path / "nodb"),
        "-o",
        str(tmp_path / "out"),
    )
    line = one_line_error(result)
    assert "nodb" in line and "mlcx tune" in line


def test_malformed_database_is_one_line_error(tmp_path, request_):
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / MANIFEST).write_text(json.dumps({"format_version": 1}))
    result = run_mlcx(
        "compile", request_.model, "--tuning-db", str(tmp_path / "db"), "-o", str(tmp_path / "o")
    )
    assert "malformed" in one_line_error(result)


def test_artifact_records_its_model_and_database(tuned, compiled, request_, tmp_path):
    config, _ = tuned
    with_db = compiled(TinySpec(), "q0f32", options=BuildOptions(tuning_db=config.output))
    recorded = Artifact(with_db).config
    assert recorded.tuning_db == str(config.output.resolve())
    assert recorded.linear_kernels == "tvm"  # the database decided it
    assert model_of(str(with_db), None) == (str(Path(request_.model).resolve()), "q0f32")
    moved = tmp_path / "moved"
    moved.mkdir()
    data = json.loads((with_db / CONFIG_FILE).read_text())
    (moved / CONFIG_FILE).write_text(json.dumps({**data, "source": str(tmp_path / "gone")}))
    with pytest.raises(MlcxError, match="gone"):
        model_of(str(moved), None)


def test_linear_kernels_that_disagree_with_the_database_fail_before_building(tuned, request_):
    config, _ = tuned
    options = BuildOptions(tuning_db=config.output, linear_kernels=LinearKernels.INT16)
    with pytest.raises(ValueError, match="disagrees with the tuning database"):
        export_model(CompileRequest(request_.model, quantization="q0f32", options=options))
