"""TVM's tensor intrinsics loaded through mlcx (a shallow `inspect.stack` for TVMScript's
parser while they are parsed): the ones dlight's Matmul rule tensorizes with are registered
and usable, the shallow stack's frames read as `inspect.stack()`'s, and the parser's `inspect`
is the real module again afterwards."""

from __future__ import annotations

import inspect
import sys

import tvm.s_tir as s_tir

from mlcx.kernels.gpu.tensor_intrinsics import (
    FRAMES_READ,
    INTRINSIC_MODULES,
    PARSER_MODULES,
    _ShallowInspect,
    load_tensor_intrinsics,
)


def test_the_matmul_rule_s_intrinsics_are_registered():
    load_tensor_intrinsics()
    # loaded here, under the shallow stack, not later by dlight's Metal rule (the slow way)
    assert set(INTRINSIC_MODULES) <= set(sys.modules)
    from tvm.s_tir.tensor_intrin.cuda import get_wmma_intrin_group
    from tvm.s_tir.tensor_intrin.metal import get_simdgroup_intrin_group

    cuda = get_wmma_intrin_group("shared.dyn", "shared.dyn", "float16", "float32", True)
    metal = get_simdgroup_intrin_group("shared", "shared", "float16", False, True)
    for name in [*cuda.values(), *metal.values()]:
        intrin = s_tir.TensorIntrin.get(name)
        assert intrin.desc.body is not None and intrin.impl.body is not None, name


def test_the_parser_keeps_its_inspect_module():
    import importlib

    load_tensor_intrinsics()
    for name in PARSER_MODULES:
        assert importlib.import_module(name).inspect is inspect


def _both_stacks(context: int):
    return _ShallowInspect.stack(context), inspect.stack(context)[:FRAMES_READ]


def _fields(frame: inspect.FrameInfo) -> tuple:
    return frame.filename, frame.lineno, frame.function, frame.code_context, frame.index


def test_the_shallow_stack_reads_frames_as_inspect_does():
    for context in (0, 1, 3):
        shallow, full = _both_stacks(context)
        assert len(shallow) == FRAMES_READ
        assert [_fields(f) for f in shallow] == [_fields(f) for f in full]
        assert [f.frame for f in shallow] == [f.frame for f in full]
    assert "_both_stacks(context)" in shallow[1].code_context[1]  # the caller, at index 1
