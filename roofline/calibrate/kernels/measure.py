"""Microbenchmarks on the local machine, in the measurement schema.

Always: numpy fp32 matmuls over a range of shapes and a memory-bandwidth kernel (a
matrix-vector product, m = 1, that streams a large matrix) on the CPU.  With torch and a
CUDA GPU: bf16 GEMMs, scaled-dot-product attention (prefill and decode shapes) and, when
run under ``torchrun`` with several GPUs, all-reduce.  torch is optional and imported here
only.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from itertools import cycle, product
from types import ModuleType

import numpy as np

from roofline.core.errors import OptionError
from roofline.kernels.schema import CalibrationError, Measurements, concat, from_records
from roofline.specs import HardwareSpec, hardware_from_dict

CPU_NAME = "local-cpu"
QUICK_M = (1, 8, 64, 256)
QUICK_NK = (64, 256, 1024)
FULL_M = (1, 2, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
FULL_NK = (64, 256, 1024, 2048, 4096)
BANDWIDTH_SHAPES = ((2048, 4096), (4096, 4096), (8192, 8192))


def time_call(fn: Callable[[], object], min_time_s: float = 0.02, repeats: int = 5) -> float:
    """Best (minimum) seconds of one call over ``repeats`` samples of batched calls.

    The minimum, not the median: on a shared machine other work only ever adds time.
    """
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    inner = max(1, int(min_time_s / repeats / once))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return min(samples)


def cpu_gemm_shapes(quick: bool) -> Iterator[tuple[int, int, int]]:
    """(m, n, k) of the CPU sweep plus the m = 1 bandwidth shapes."""
    ms, nks = (QUICK_M, QUICK_NK) if quick else (FULL_M, FULL_NK)
    for m, n, k in product(ms, nks, nks):
        yield m, n, k
    for n, k in BANDWIDTH_SHAPES[: 2 if quick else 3]:
        yield 1, n, k


def measure_cpu(quick: bool = True, seed: int = 0) -> Measurements:
    """numpy fp32 matmul timings (C = A[m,k] @ W[k,n]) on this CPU."""
    rng = np.random.default_rng(seed)
    records = []
    for m, n, k in cpu_gemm_shapes(quick):
        a = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((k, n), dtype=np.float32)
        seconds = time_call(lambda a=a, w=w: a @ w, 0.005 if quick else 0.05)
        records.append(
            {
                "hardware": CPU_NAME,
                "op": "gemm",
                "dtype": "fp32",
                "m": m,
                "n": n,
                "k": k,
                "time_s": seconds,
                "source": "roofline measure (numpy)",
                "impl": "numpy",
            }
        )
    return from_records(records)


def build_cpu_spec(table: Measurements) -> HardwareSpec:
    """A base ``kind: cpu`` spec from CPU measurements: peak = best measured, not a datasheet."""
    gemm = table.where(op="gemm")
    if len(gemm) == 0:
        raise CalibrationError("no gemm rows to build a local-cpu base spec from (run: roofline measure)")
    m, n, k, t = (gemm[c] for c in ("m", "n", "k", "time_s"))
    flops = float(np.max(2 * m * n * k / t))
    narrow = m <= 1
    stream = (k * n * 4.0 / t)[narrow] if narrow.any() else (2 * (m * k + k * n + m * n) / t)
    bandwidth = float(np.max(stream))
    memory = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    return hardware_from_dict(
        {
            "name": CPU_NAME,
            "kind": "cpu",
            "flops_per_s": {"fp32": flops},
            "hbm_bytes": memory,
            "hbm_bandwidth_bytes_per_s": bandwidth,
            "ici_bandwidth_bytes_per_s": bandwidth,
            "ici_links": 1,
            "ici_hop_latency_s": 1e-6,
            "price_per_chip_hour": 1.0,
            "source": "built by roofline calibrate from local measurements: peak FLOP/s = best "
            "measured numpy fp32 matmul, bandwidth = best measured m=1 matmul stream; "
            "interconnect and price are placeholders",
        },
        "<local-cpu>",
    )


# --------------------------------------------------------------------------- GPU (torch)


def gpu_hardware_name(device_name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100-sxm' for the built-in chips, else a slug."""
    known = {"H100": "h100-sxm", "H200": "h200", "A100": "a100-80gb", "B200": "b200"}
    for tag, name in known.items():
        if tag in device_name.upper():
            return name
    return "-".join(device_name.lower().split())


def _torch() -> ModuleType | None:
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def measure_gpu(quick: bool = True) -> Measurements:
    """torch bf16 GEMM, SDPA and (under torchrun) all-reduce timings; empty without CUDA."""
    torch = _torch()
    if torch is None:
        return from_records([])
    if "LOCAL_RANK" in os.environ:  # under torchrun: one GPU per rank, before any work
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    name = gpu_hardware_name(torch.cuda.get_device_name())
    parts = [_gpu_gemm(torch, name, quick), _gpu_attention(torch, name, quick), _gpu_allreduce(torch, name, quick)]
    return concat(parts)


#: Most copies of one call's operands :func:`_cold` cycles through.
MAX_COPIES = 256
#: L2 size assumed when torch does not report it (H100/H200: 50/60 MB).
DEFAULT_L2_BYTES = 64 * 2**20


def _cold(torch: ModuleType, make: Callable[[], Sequence[object]], call: Callable[..., object]) -> Callable[[], object]:
    """``call(*operands)`` cycling through copies of ``make()``'s operands that together are ≥ 2× the
    L2 cache, so each call reads them from HBM, as a step reads its weights and KV cache."""
    first = tuple(make())
    nbytes = sum(int(t.numel()) * int(t.element_size()) for t in first)
    l2 = (
        int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0))
        or DEFAULT_L2_BYTES
    )
    copies = int(min(MAX_COPIES, max(1, math.ceil(2 * l2 / max(nbytes, 1)))))
    operands = cycle([first] + [tuple(make()) for _ in range(copies - 1)])
    return lambda: call(*next(operands))


def _cuda_time(torch: ModuleType, fn: Callable[[], object], repeats: int = 20) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats * 1e-3


def _gpu_gemm(torch: ModuleType, name: str, quick: bool) -> Measurements:
    ms = (1, 16, 128, 1024, 4096) if quick else (1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
    nks = (1024, 4096, 8192) if quick else (512, 1024, 2048, 4096, 8192, 16384)
    records = []
    for m, n, k in product(ms, nks, nks):
        fn = _cold(
            torch,
            lambda m=m, n=n, k=k: (
                torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
                torch.randn(k, n, device="cuda", dtype=torch.bfloat16),
            ),
            lambda a, w: a @ w,
        )
        records.append(
            {
                "hardware": name,
                "op": "gemm",
                "dtype": "bf16",
                "m": m,
                "n": n,
                "k": k,
                "time_s": _cuda_time(torch, fn),
                "source": "roofline measure (torch, cold L2)",
                "impl": "torch",
            }
        )
    return from_records(records)


def _gpu_attention(torch: ModuleType, name: str, quick: bool) -> Measurements:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    heads, kv_heads, dim = 32, 8, 128
    gqa = _has_gqa(torch, sdpa)
    read_heads = kv_heads if gqa else heads  # without native GQA, K/V are stored for every head
    extra = {"enable_gqa": True} if gqa else {}
    records = []
    batches = (1, 8, 64) if quick else (1, 4, 16, 64, 256)
    lengths = (512, 4096) if quick else (128, 512, 2048, 8192)
    for batch, length in product(batches, lengths):
        for q_len in (1, length):

            def make(b: int = batch, s: int = length, t: int = q_len) -> tuple[object, object]:
                return (
                    torch.randn(b, heads, t, dim, device="cuda", dtype=torch.bfloat16),
                    torch.randn(b, read_heads, s, dim, device="cuda", dtype=torch.bfloat16),
                )

            def call(q: object, kv: object, causal: bool = q_len > 1) -> object:
                return sdpa(q, kv, kv, is_causal=causal, **extra)

            op = "attention_decode" if q_len == 1 else "attention_prefill"
            records.append(
                {
                    "hardware": name,
                    "op": op,
                    "dtype": "bf16",
                    "batch": batch,
                    "q_len": q_len,
                    "kv_len": length,
                    "num_heads": heads,
                    "num_kv_heads": read_heads,
                    "head_dim": dim,
                    "time_s": _cuda_time(torch, _cold(torch, make, call)),
                    "impl": "torch-sdpa",
                    "source": "roofline measure (torch, cold L2)",
                }
            )
    return from_records(records)


def _has_gqa(torch: ModuleType, sdpa: object) -> bool:
    """Whether this torch's SDPA takes ``enable_gqa`` (native grouped-query attention), tried on a
    tiny call."""
    q = torch.randn(1, 2, 1, 8, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(1, 1, 1, 8, device="cuda", dtype=torch.bfloat16)
    try:
        sdpa(q, kv, kv, enable_gqa=True)
    except TypeError:
        return False
    return True


def _gpu_allreduce(torch: ModuleType, name: str, quick: bool) -> Measurements:
    dist = torch.distributed
    if not (dist.is_available() and "WORLD_SIZE" in os.environ):
        return from_records([])
    if not dist.is_initialized():
        dist.init_process_group("nccl")
    world = dist.get_world_size()
    records = []
    for power in range(10, 28 if quick else 30, 2):
        buf = torch.ones(2**power // 2, device="cuda", dtype=torch.bfloat16)
        seconds = _cuda_time(torch, lambda buf=buf: dist.all_reduce(buf))
        records.append(
            {
                "hardware": name,
                "op": "allreduce",
                "dtype": "bf16",
                "message_bytes": 2**power,
                "num_devices": world,
                "time_s": seconds,
                "impl": "nccl",
                "source": "roofline measure (torch.distributed)",
            }
        )
    return from_records(records)


def measure(device: str = "auto", quick: bool = True) -> Measurements:
    """CPU always (unless device == 'gpu'); the GPU too when torch+CUDA is present."""
    parts = []
    if device in ("auto", "cpu"):
        parts.append(measure_cpu(quick))
    if device in ("auto", "gpu"):
        gpu = measure_gpu(quick)
        if device == "gpu" and len(gpu) == 0:
            raise OptionError(
                "device: no CUDA GPU found (needs torch with CUDA); use device=cpu", parameters=("device",)
            )
        parts.append(gpu)
    return concat(parts)
