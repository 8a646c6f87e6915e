"""examples/downstream as a setup.py project: the same CMakeLists lines, built by aotwheel.setuptools."""
from setuptools import setup

from aotwheel.setuptools import CMakeExtension, build_ext

setup(
    name="aotdemo-setuptools",
    version="0.1.0",
    packages=["aotdemo"],
    package_dir={"": "src"},
    # At run time: aotwheel's OpenCL loader (+ pyopencl, its [opencl] extra) and NumPy, as examples/downstream.
    install_requires=["aotwheel[opencl]", "numpy"],
    # CMakeLists.txt beside this file; "cp310": an abi3 wheel for Python 3.10+.
    ext_modules=[CMakeExtension("aotdemo._demo", py_limited_api="cp310")],
    cmdclass={"build_ext": build_ext},
)
