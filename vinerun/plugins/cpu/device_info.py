"""Facts about the host CPU: name, ISA flags, precisions it computes fast."""

from __future__ import annotations

import functools
import platform

from vinerun.plugins.cpu import cpu_topology


@functools.cache
def cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.cache
def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def has_native_bf16() -> bool:
    """AMX or AVX512-BF16: where OpenVINO defaults to bf16 inference."""
    return bool({"amx_bf16", "avx512_bf16"} & cpu_flags())


def has_amx_bf16() -> bool:
    """AMX-BF16 tiles (a Sapphire Rapids or later Xeon)."""
    return "amx_bf16" in cpu_flags()


def optimization_capabilities() -> list[str]:
    caps = ["FP32", "INT8", "BIN", "EXPORT_IMPORT"]
    if has_native_bf16():
        caps.insert(1, "BF16")
    if "avx512_fp16" in cpu_flags():
        caps.insert(1, "FP16")
    return caps


def architecture() -> str:
    m = platform.machine().lower()
    return {"x86_64": "intel64", "amd64": "intel64", "aarch64": "arm64"}.get(m, m)


def core_count() -> int:
    """The logical CPUs this process may run on."""
    return len(cpu_topology.allowed_cpus())
