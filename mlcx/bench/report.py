"""The numbers of one `mlcx bench` run, as text for people and JSON for machines."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from mlcx.bench.measure.kernel_profile import StepProfile
from mlcx.bench.workloads.workload import Speed, Workload


@dataclass(frozen=True)
class BenchReport:
    model: str
    artifact: str
    target: str  # the artifact's
    workload: Workload
    threads: int
    kv_dtype: str  # of mlcx's KV cache (peers run the same where they can; see notes)
    speeds: dict[str, Speed]  # engine name -> median speed; "mlcx" first
    devices: dict[str, str]  # engine name -> what it ran on (a GPU adapter's name)
    commands: dict[str, str]  # peer name -> the command line that ran it, for peers run so
    compile_seconds: float | None
    peak_memory_bytes: int
    weight_bytes_per_token: int
    kv_bytes_per_token: int  # of context, all layers' keys and values in the cache's dtype
    read_bandwidth: float | None  # bytes per second; measured for cpu kernels only
    profile: tuple[StepProfile, ...] = ()  # with --profile: one prefill and one decode step
    notes: list[str] = field(default_factory=list)
    # a hybrid model's state layers: one sequence's conv windows and recurrent matrices
    state_bytes_per_sequence: int = 0

    @property
    def decode_bytes_per_token(self) -> float:
        """Bytes a decode step reads, on average over the run: the weights once, the KV of its
        context (step i of D after a P-token prompt attends to P + i + 1 tokens) and a hybrid
        model's state (whatever the context)."""
        w = self.workload
        context = w.prompt_tokens + (w.decode_tokens + 1) / 2
        kv = context * self.kv_bytes_per_token + self.state_bytes_per_sequence
        return self.weight_bytes_per_token + kv

    @property
    def decode_bound(self) -> float | None:
        """Decode tokens/s if every step only had to read its weights and KV once."""
        if self.read_bandwidth is None:
            return None
        return self.read_bandwidth / self.decode_bytes_per_token

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
        data["profile"] = [step.to_dict() for step in self.profile]
        bound = self.decode_bound
        data["decode_bound"] = bound
        data["decode_bytes_per_token"] = self.decode_bytes_per_token
        ours = self.speeds["mlcx"].decode
        data["decode_bound_fraction"] = None if bound is None else ours / bound
        return json.dumps(data, indent=2)

    def _bound_lines(self) -> list[str]:
        bound = self.decode_bound
        if bound is None or self.read_bandwidth is None:
            return []
        kv = self.decode_bytes_per_token - self.weight_bytes_per_token
        return [
            f"decode bound {bound:.0f} tok/s (read {self.read_bandwidth / 1e9:.1f} GB/s / "
            f"{self.decode_bytes_per_token / 1e6:.1f} MB per token: "
            f"{self.weight_bytes_per_token / 1e6:.1f} MB of weights + {kv / 1e6:.1f} MB of KV"
            f"{' and state' if self.state_bytes_per_sequence else ''}); "
            f"mlcx reaches {self.speeds['mlcx'].decode / bound:.0%}"
        ]

    def _state(self) -> str:
        """A hybrid model's state beside the KV cost: it does not grow with the context."""
        state = self.state_bytes_per_sequence
        return f"; state {state / 2**20:.2f} MiB per sequence" if state else ""

    def lines(self) -> list[str]:
        w = self.workload
        width = max(12, *(len(n) + 2 for n in self.speeds))
        out = [
            f"model {self.model} -> {self.artifact} ({self.target})",
            f"batch 1, prompt {w.prompt_tokens}, decode {w.decode_tokens} greedy, "
            f"{self.threads} threads, {self.kv_dtype} KV cache "
            f"({self.kv_bytes_per_token / 1024:.1f} KiB per token of context{self._state()}), "
            f"median of {w.reps}",
            f"{'engine':<{width}}{'prefill tok/s':>16}{'decode tok/s':>16}  device",
        ]
        out += [
            f"{n:<{width}}{s.prefill:>16.2f}{s.decode:>16.2f}  {self.devices.get(n, '?')}"
            for n, s in self.speeds.items()
        ]
        for peer, r in self.ratios().items():
            out.append(f"mlcx / {peer}: prefill {r['prefill']:.2f}x, decode {r['decode']:.2f}x")
        out += [f"{peer} ran: {command}" for peer, command in self.commands.items()]
        compiled = "n/a" if self.compile_seconds is None else f"{self.compile_seconds:.1f} s"
        out.append(f"compile time {compiled}, peak memory {self.peak_memory_bytes / 2**20:.0f} MiB")
        out += self._bound_lines()
        out += [f"note: {note}" for note in self.notes]
        for step in self.profile:
            out += ["", *step.lines()]
        return out
