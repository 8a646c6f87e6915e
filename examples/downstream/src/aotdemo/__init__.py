"""aotdemo: a minimal package whose extension carries ahead-of-time Intel GPU code.

``images()`` is the extension's table of embedded images, ``(triple, source, bytes)`` each;
``saxpy()`` runs the kernel through aotwheel's OpenCL loader, which picks the native image for the
device (else the SPIR-V, JIT-compiled once and cached). Its run-time dependencies, declared in
pyproject.toml: ``aotwheel[opencl]`` (the loader and pyopencl) and numpy.
"""

from __future__ import annotations

from typing import Any

from aotdemo._demo import images

__all__ = ["images", "saxpy"]

_PROGRAMS: dict[Any, Any] = {}


def saxpy(a: float, x: Any, y: Any, device: Any = None) -> Any:
    """``a * x + y`` as float32, on ``device`` (a pyopencl device; default: the first GPU, else
    the first OpenCL device)."""
    import numpy as np
    import pyopencl as cl

    from aotwheel.opencl import build_program

    if device is None:
        found = [d for p in cl.get_platforms() for d in p.get_devices()]
        device = next((d for d in found if d.type & cl.device_type.GPU), found[0])
    if device not in _PROGRAMS:
        context = cl.Context([device])
        _PROGRAMS[device] = (context, build_program(context, device, "aotdemo._demo"))
    context, program = _PROGRAMS[device]
    queue = cl.CommandQueue(context)
    x = np.ascontiguousarray(x, dtype=np.float32)
    y = np.array(y, dtype=np.float32)
    flags = cl.mem_flags
    bx = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    by = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=y)
    program.saxpy(queue, (x.size,), None, np.float32(a), bx, by)
    cl.enqueue_copy(queue, y, by)
    queue.finish()
    return y
