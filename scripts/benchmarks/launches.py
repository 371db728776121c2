"""What a profiled stretch of GPU work launched: kernels, CUDA graphs, host waits, GPU busy time.

A step whose kernels are small is bound by the host launching them: the GPU is busy for a
small part of the wall time. ``counts(prof, wall_s)`` reads a finished ``torch.profiler``
profile (CPU and CUDA activities) and gives the numbers that show it. The profiler slows the
host, so the busy share it gives is a lower bound.
"""

from __future__ import annotations

LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")
WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")


def busy_us(intervals) -> float:
    """The time covered by ``(start, end)`` intervals, each instant counted once: kernels that
    overlap (several streams, a graph's kernels beside its own event) are not summed twice."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def counts(prof, wall_s: float | None = None) -> dict:
    """Kernel and graph launches and host waits; with ``wall_s``, the share of it in which the
    GPU ran at least one kernel (the union of the device events' time ranges)."""
    from torch.autograd import DeviceType

    events = prof.events()
    names = [e.name for e in events]
    out = {
        "kernel_launches": sum(n in LAUNCHES for n in names),
        "graph_launches": names.count("cudaGraphLaunch"),
        "host_waits": sum(n in WAITS for n in names),
    }
    if wall_s:
        spans = [
            (e.time_range.start, e.time_range.end)
            for e in events
            if e.device_type == DeviceType.CUDA and e.time_range.end > e.time_range.start
        ]
        out["gpu_busy_share"] = round(busy_us(spans) / 1e6 / wall_s, 3)
    return out
