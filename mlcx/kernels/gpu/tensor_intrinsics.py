"""TVM's tensor intrinsics (wmma, mma, simdgroup matrices), loaded once, in seconds.

dlight's Matmul rule imports `tvm.s_tir.tensor_intrin` the first time it tensorizes, and
MetaSchedule's TuneContext whenever it is made (so CPU tuning too, mlcx.compile.tune). That
package parses ~250 TVMScript functions, and TVM's `prim_func` decorator calls
`inspect.stack()` for each: every frame's source file is looked up by scanning all of
`sys.modules`, so the import takes 20 s in a bare process and 60-140 s in one that has loaded
torch and transformers (the test suite, a server). The decorator reads only the third frame
(`utils.is_defined_in_class`), so the parser modules are given an `inspect` whose `stack`
builds three frames; nothing else in the process sees the change.

Those frames read their source lines through `linecache` with the frame's own globals, as
`inspect.getframeinfo` does once it has found the frame's module, without finding it (another
scan of `sys.modules` per frame): that scan was still 1.1-1.7 s of a 4.4-5.4 s import (2 busy
cores, torch loaded: ~2270 modules), now 3.1-3.7 s.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import linecache
import sys
from types import FrameType
from typing import Any

FRAMES_READ = 3  # tvm.script.parser.core.utils.is_defined_in_class reads frames[2]
PARSER_MODULES = ("tvm.tirx.script.parser.entry", "tvm.script.parser.ir.entry")
# The package imports the CUDA and CPU intrinsics; Metal's simdgroup ones only when dlight's
# Metal matmul first asks (14 s there, in a process with torch loaded).
INTRINSIC_MODULES = ("tvm.s_tir.tensor_intrin", "tvm.s_tir.tensor_intrin.metal")


class _ShallowInspect:
    """`inspect` with a `stack()` of the innermost FRAMES_READ frames."""

    def __getattr__(self, name: str) -> Any:
        return getattr(inspect, name)

    @staticmethod
    def stack(context: int = 1) -> list[inspect.FrameInfo]:
        frame: FrameType | None = sys._getframe(1)
        frames = []
        while frame is not None and len(frames) < FRAMES_READ:
            frames.append(_frame_info(frame, context))
            frame = frame.f_back
        return frames


def _frame_info(frame: FrameType, context: int) -> inspect.FrameInfo:
    """`inspect.getframeinfo(frame, context)` for a frame of a source file (lines from the
    frame's module, found by its globals rather than a scan of sys.modules)."""
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    lines = linecache.getlines(filename, frame.f_globals) if context > 0 else []
    code_context = index = None
    if lines:
        start = max(0, min(lineno - 1 - context // 2, len(lines) - context))
        code_context, index = lines[start : start + context], lineno - 1 - start
    return inspect.FrameInfo(frame, filename, lineno, frame.f_code.co_name, code_context, index)


@functools.cache
def load_tensor_intrinsics() -> None:
    modules = [importlib.import_module(name) for name in PARSER_MODULES]
    saved = [module.inspect for module in modules]
    for module in modules:
        module.inspect = _ShallowInspect()
    try:
        for name in INTRINSIC_MODULES:
            importlib.import_module(name)
    finally:
        for module, original in zip(modules, saved, strict=True):
            module.inspect = original
