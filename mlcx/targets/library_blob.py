"""TVM's library binary: the bytes a compiled library carries under `__tvm_ffi__library_bin`.

Layout (tvm-ffi library_module.cc, little endian):
    u64 nbytes | vec<u64> import-tree indptr | vec<u64> child indices |
    per module: str kind, then (unless kind == "_lib") bytes payload
where vec = u64 count + items, str/bytes = u64 length + data. A device module's payload is
`str fmt | function-info map | bytes code` (cuda/metal/opencl modules alike).

mlcx reads it to swap CUDA source for ahead-of-time compiled kernels, and the tests read it
to check what a library really embeds.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from mlcx.errors import ArtifactError

HOST_PLACEHOLDER = "_lib"


@dataclass(frozen=True)
class LibraryBlob:
    indptr: tuple[int, ...]
    children: tuple[int, ...]
    modules: tuple[tuple[str, bytes | None], ...]  # (kind, payload); None for "_lib"

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.modules]

    def payload(self, kind: str) -> bytes:
        found = [data for k, data in self.modules if k == kind and data is not None]
        if len(found) != 1:
            raise ArtifactError(f"library embeds {len(found)} {kind!r} modules, expected one")
        return found[0]

    def replace(self, kind: str, payload: bytes) -> LibraryBlob:
        modules = tuple((k, payload if k == kind else data) for k, data in self.modules)
        return LibraryBlob(self.indptr, self.children, modules)

    def to_bytes(self) -> bytes:
        body = _vec(self.indptr) + _vec(self.children)
        for kind, data in self.modules:
            body += _bytes(kind.encode())
            if data is not None:
                body += _bytes(data)
        return struct.pack("<Q", len(body)) + body


# Kinds whose payload ends in one source per kernel (Map<String, String>) instead of one code.
PER_KERNEL_SOURCE_KINDS = {"metal"}


@dataclass(frozen=True)
class DeviceModule:
    """A device module's payload: code format, function table (names and launch tags), and
    either one code blob (cuda, opencl) or one source per kernel (metal)."""

    kind: str
    fmt: str
    functions: dict[str, list[str]]  # kernel name -> launch parameter tags
    function_table: bytes  # the table's exact bytes, written back unchanged
    code: bytes = b""
    kernel_sources: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, kind: str, payload: bytes) -> DeviceModule:
        reader = _Reader(payload)
        fmt = reader.bytes().decode()
        start = reader.pos
        functions = _function_table(reader)
        table = payload[start : reader.pos]
        if kind in PER_KERNEL_SOURCE_KINDS:
            sources = {
                reader.bytes().decode(): reader.bytes().decode() for _ in range(reader.u64())
            }
            module = cls(kind, fmt, functions, table, kernel_sources=sources)
        else:
            module = cls(kind, fmt, functions, table, code=reader.bytes())
        if reader.pos != len(payload):
            raise ArtifactError(f"{kind} module payload has trailing bytes")
        return module

    def with_code(self, fmt: str, code: bytes) -> DeviceModule:
        if self.kind in PER_KERNEL_SOURCE_KINDS:
            raise ValueError(f"{self.kind} modules keep one source per kernel")
        return DeviceModule(self.kind, fmt, self.functions, self.function_table, code=code)

    def to_bytes(self) -> bytes:
        head = _bytes(self.fmt.encode()) + self.function_table
        if self.kind not in PER_KERNEL_SOURCE_KINDS:
            return head + _bytes(self.code)
        items = b"".join(
            _bytes(k.encode()) + _bytes(v.encode()) for k, v in self.kernel_sources.items()
        )
        return head + struct.pack("<Q", len(self.kernel_sources)) + items


def _function_table(reader: _Reader) -> dict[str, list[str]]:
    """Map<String, FunctionInfo>; FunctionInfo = name, arg dtypes (4 bytes each), launch
    tags (strings), arg extra tags (int32 each)."""
    table = {}
    for _ in range(reader.u64()):
        key = reader.bytes().decode()
        reader.bytes()  # name (same as key)
        reader.skip(4 * reader.u64())
        table[key] = [reader.bytes().decode() for _ in range(reader.u64())]
        reader.skip(4 * reader.u64())
    return table


def parse_blob(data: bytes) -> LibraryBlob:
    (nbytes,) = struct.unpack_from("<Q", data, 0)
    reader = _Reader(data[8 : 8 + nbytes])
    indptr, children = reader.vec(), reader.vec()
    modules = []
    for _ in range(len(indptr) - 1):
        kind = reader.bytes().decode()
        modules.append((kind, None if kind == HOST_PLACEHOLDER else reader.bytes()))
    return LibraryBlob(tuple(indptr), tuple(children), tuple(modules))


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def u64(self) -> int:
        (value,) = struct.unpack_from("<Q", self.data, self.pos)
        self.pos += 8
        return value

    def vec(self) -> list[int]:
        return [self.u64() for _ in range(self.u64())]

    def skip(self, size: int) -> None:
        self.pos += size

    def bytes(self) -> bytes:
        size = self.u64()
        out = self.data[self.pos : self.pos + size]
        if len(out) != size:
            raise ArtifactError("library binary is truncated")
        self.pos += size
        return out


def _vec(items: tuple[int, ...]) -> bytes:
    return struct.pack(f"<Q{len(items)}Q", len(items), *items)


def _bytes(data: bytes) -> bytes:
    return struct.pack("<Q", len(data)) + data
