"""What a profiled stretch of GPU work launched: kernels, CUDA graphs, host waits, GPU busy time.

A step whose kernels are small is bound by the host launching them: the GPU is busy for a
small part of the wall time. ``counts(prof, wall_s)`` reads a finished ``torch.profiler``
profile (CPU and CUDA activities) and gives the numbers that show it. The profiler slows the
host, so the busy share it gives is a lower bound.
"""

from __future__ import annotations

LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")
WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")


def counts(prof, wall_s: float | None = None) -> dict:
    """Kernel and graph launches and host waits; with ``wall_s``, the share of it the GPU ran
    kernels (the summed kernel time, which overlapping kernels would count twice)."""
    from torch.autograd import DeviceType

    events = prof.events()
    names = [e.name for e in events]
    out = {
        "kernel_launches": sum(n in LAUNCHES for n in names),
        "graph_launches": names.count("cudaGraphLaunch"),
        "host_waits": sum(n in WAITS for n in names),
    }
    if wall_s:
        gpu_us = sum(
            getattr(e, "device_time", 0.0) for e in events if e.device_type == DeviceType.CUDA
        )
        out["gpu_busy_share"] = round(gpu_us / 1e6 / wall_s, 3)
    return out
