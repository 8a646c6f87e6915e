"""Intel device probes: Level Zero (ctypes), OpenCL (pyopencl), SYCL (dpctl), ``torch.xpu``.

Each module has ``probe() -> aotwheel.probe.ProbeResult``; :mod:`aotwheel.probe` runs them.
"""
