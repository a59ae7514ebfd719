"""The numbers of one `mlcx bench` run, as text for people and JSON for machines."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from mlcx.bench.workload import Speed, Workload


@dataclass(frozen=True)
class BenchReport:
    model: str
    artifact: str
    workload: Workload
    threads: int
    kv_dtype: str  # of every engine's KV cache
    speeds: dict[str, Speed]  # engine name -> median speed; "mlcx" first
    compile_seconds: float | None
    peak_memory_bytes: int
    weight_bytes_per_token: int
    read_bandwidth: float  # bytes per second
    notes: list[str] = field(default_factory=list)

    @property
    def decode_bound(self) -> float:
        """Decode tokens/s if every step only had to read the weights once."""
        return self.read_bandwidth / self.weight_bytes_per_token

    def ratios(self) -> dict[str, dict[str, float]]:
        """mlcx speed / peer speed, per peer."""
        ours = self.speeds["mlcx"]
        return {
            peer: {"prefill": ours.prefill / s.prefill, "decode": ours.decode / s.decode}
            for peer, s in self.speeds.items()
            if peer != "mlcx"
        }

    def to_json(self) -> str:
        data = asdict(self)
        data["speeds"] = {k: asdict(v) for k, v in self.speeds.items()}
        data["ratios"] = self.ratios()
        data["decode_bound"] = self.decode_bound
        data["decode_bound_fraction"] = self.speeds["mlcx"].decode / self.decode_bound
        return json.dumps(data, indent=2)

    def lines(self) -> list[str]:
        w = self.workload
        out = [
            f"model {self.model} -> {self.artifact}",
            f"batch 1, prompt {w.prompt_tokens}, decode {w.decode_tokens} greedy, "
            f"{self.threads} threads, {self.kv_dtype} KV cache, median of {w.reps}",
            f"{'engine':<12}{'prefill tok/s':>16}{'decode tok/s':>16}",
        ]
        out += [f"{n:<12}{s.prefill:>16.1f}{s.decode:>16.1f}" for n, s in self.speeds.items()]
        for peer, r in self.ratios().items():
            out.append(f"mlcx / {peer}: prefill {r['prefill']:.2f}x, decode {r['decode']:.2f}x")
        compiled = "n/a" if self.compile_seconds is None else f"{self.compile_seconds:.1f} s"
        out.append(f"compile time {compiled}, peak memory {self.peak_memory_bytes / 2**20:.0f} MiB")
        out.append(
            f"decode bound {self.decode_bound:.0f} tok/s (read {self.read_bandwidth / 1e9:.1f} GB/s"
            f" / {self.weight_bytes_per_token / 1e6:.1f} MB of weights per token); "
            f"mlcx reaches {self.speeds['mlcx'].decode / self.decode_bound:.0%}"
        )
        return out + self.notes
