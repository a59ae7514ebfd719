"""Reading compiled artifacts the way a loader would: object headers, symbols, TVM's embedded
library binary, and the CUDA fatbin/cubin inside it. Parsed here in Python so each check
reads the bytes themselves; the llvm tools are cross-checked in the tests.
"""

from __future__ import annotations

import re
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mlcx.targets.library_blob import LibraryBlob, parse_blob
from mlcx.targets.toolchain import find_tool

EM_AARCH64, EM_CUDA = 183, 190
ELF_TYPES = {1: "REL", 2: "EXEC", 3: "DYN"}
MACHO_MAGIC_64 = 0xFEEDFACF
CPU_TYPE_ARM64 = 0x0100000C
MACHO_FILETYPES = {1: "OBJECT", 6: "DYLIB"}
LC_SEGMENT_64, LC_SYMTAB, LC_BUILD_VERSION = 0x19, 0x2, 0x32
PLATFORMS = {1: "macos", 2: "ios"}


@dataclass(frozen=True)
class ElfHeader:
    machine: int
    type: str
    flags: int
    osabi: int


def elf_header(data: bytes) -> ElfHeader:
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    e_type, machine = struct.unpack_from("<HH", data, 16)
    (flags,) = struct.unpack_from("<I", data, 48)
    return ElfHeader(machine, ELF_TYPES.get(e_type, str(e_type)), flags, data[7])


def _elf_sections(data: bytes) -> list[tuple]:
    (shoff,) = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]


def elf_symbols(data: bytes) -> dict[str, int]:
    """Symbol name -> file offset of its data (defined symbols of .symtab/.dynsym)."""
    sections = _elf_sections(data)
    out = {}
    for sec in sections:
        if sec[1] not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        strtab = sections[sec[6]]
        for i in range(sec[5] // 24):
            name_off, _info, _other, shndx, value, _size = struct.unpack_from(
                "<IBBHQQ", data, sec[4] + i * 24
            )
            if shndx == 0 or shndx >= len(sections):
                continue
            start = strtab[4] + name_off
            name = data[start : data.index(b"\0", start)].decode()
            target = sections[shndx]
            relocatable = elf_header(data).type == "REL"
            out[name] = target[4] + (value if relocatable else value - target[3])
    return out


@dataclass(frozen=True)
class MachO:
    cputype: int
    filetype: str
    platform: str | None
    symbols: dict[str, int]  # defined symbol -> file offset


def macho(data: bytes) -> MachO:
    magic, cputype, _sub, filetype, ncmds = struct.unpack_from("<IIIII", data, 0)
    if magic != MACHO_MAGIC_64:
        raise ValueError("not a 64-bit Mach-O file")
    sections, symtab, platform, pos = [], None, None, 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, pos)
        if cmd == LC_SEGMENT_64:
            (nsects,) = struct.unpack_from("<I", data, pos + 64)
            for s in range(nsects):
                addr, _size, offset = struct.unpack_from("<QQI", data, pos + 72 + s * 80 + 32)
                sections.append((addr, offset))
        elif cmd == LC_SYMTAB:
            symtab = struct.unpack_from("<IIII", data, pos + 8)
        elif cmd == LC_BUILD_VERSION:
            platform = PLATFORMS.get(struct.unpack_from("<I", data, pos + 8)[0], "other")
        pos += size
    symbols = {}
    if symtab:
        symoff, nsyms, stroff, _ = symtab
        for i in range(nsyms):
            strx, ntype, nsect, _desc, value = struct.unpack_from("<IBBHQ", data, symoff + i * 16)
            if ntype & 0x0E == 0x0E and nsect:  # N_SECT: defined in a section
                name = data[stroff + strx : data.index(b"\0", stroff + strx)].decode()
                addr, offset = sections[nsect - 1]
                symbols[name] = offset + value - addr
    return MachO(cputype, MACHO_FILETYPES.get(filetype, str(filetype)), platform, symbols)


def launcher_symbols(kernels, leading: str = "") -> set[str]:
    """The host functions that launch `kernels`: kernels f_kernel, f_kernel_1, ... are
    launched by __tvm_ffi_f (`leading`: "_" for Mach-O's symbol underscore)."""
    return {leading + "__tvm_ffi_" + re.sub(r"_kernel(_\d+)?$", "", k) for k in kernels}


def blob_at(data: bytes, offset: int) -> LibraryBlob:
    (nbytes,) = struct.unpack_from("<Q", data, offset)
    return parse_blob(data[offset : offset + 8 + nbytes])


def archive_members(archive: Path, into: Path) -> list[Path]:
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run([find_tool("llvm-ar"), "x", str(archive.resolve())], cwd=into, check=True)
    return sorted(into.iterdir())


def llvm(tool: str, *args: str) -> str:
    """Output of an llvm tool (llvm-nm, llvm-objdump), found the way mlcx finds its tools."""
    from mlcx.targets.toolchain import which

    exe = which(tool)
    if exe is None:
        raise FileNotFoundError(f"{tool} (Debian package llvm) is not installed")
    return subprocess.run([exe, *args], capture_output=True, text=True, check=True).stdout


@dataclass(frozen=True)
class FatbinEntry:
    kind: str  # "ptx" or "elf"
    arch: int
    payload: bytes


def fatbin_entries(data: bytes) -> list[FatbinEntry]:
    """NVIDIA fatbin: header (magic 0xBA55ED50, u16 version, u16 header size, u64 size), then
    entries: u16 kind (1 PTX, 2 ELF), u16, u32 entry header size, u64 payload size, ..., and
    the SM arch as a u32 at entry offset 28."""
    magic, _version, header, size = struct.unpack_from("<IHHQ", data, 0)
    if magic != 0xBA55ED50:
        raise ValueError("not a fatbin")
    entries, pos = [], header
    while pos < header + size:
        kind, _, entry_header, payload_size = struct.unpack_from("<HHIQ", data, pos)
        (arch,) = struct.unpack_from("<I", data, pos + 28)
        start = pos + entry_header
        payload = data[start : start + payload_size]
        entries.append(FatbinEntry({1: "ptx", 2: "elf"}.get(kind, str(kind)), arch, payload))
        pos = start + payload_size
    return entries


def cubin_sm(header: ElfHeader) -> int:
    """The SM arch of a cubin: e_flags bits 8-15 in the ABI CUDA 12.8+ writes (OSABI 0x41),
    bits 0-7 in the older one."""
    return (header.flags >> 8) & 0xFF if header.osabi == 0x41 else header.flags & 0xFF
