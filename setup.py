"""Builds the pixflow Python package with CMake (see pyproject.toml).

build_ext configures the repository's CMake project for the running
interpreter (Python3_EXECUTABLE = sys.executable) with only what the
package needs (no CLI, tests or benchmarks), builds the `pixflow_python`
target (the extension with libpixflow linked in statically) and copies it
into the package. build_py adds the models of node_modules/@mediapipe
(pixflow.model_path finds them in the installed package).

Environment:
  PIXFLOW_CMAKE_ARGS       extra CMake arguments, e.g. "-DPF_CUDA=off"
  PIXFLOW_CMAKE_BUILD_DIR  an already configured build tree to build in
                           (tests reuse theirs; default: a fresh one under
                           build-pip/)
  PIXFLOW_JOBS             parallel build jobs (default: all cores)
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def read_version():
    text = open(os.path.join(ROOT, "include", "pixflow", "version.h")).read()
    parts = [re.search(r"#define PF_VERSION_%s (\d+)" % k, text).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class CMakeBuildExt(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("PIXFLOW_CMAKE_BUILD_DIR")
        if not build_dir:
            build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
            args = ["cmake", "-S", ROOT, "-B", build_dir,
                    "-DCMAKE_BUILD_TYPE=Release",
                    "-DPython3_EXECUTABLE=" + sys.executable,
                    "-DPF_BUILD_TOOLS=OFF", "-DBUILD_TESTING=OFF", "-DPF_BUILD_BENCH=OFF",
                    "-DPF_PYTHON=ON"]
            if shutil.which("ccache") and "CMAKE_C_COMPILER_LAUNCHER" not in os.environ:
                args.append("-DCMAKE_C_COMPILER_LAUNCHER=ccache")
            args += shlex.split(os.environ.get("PIXFLOW_CMAKE_ARGS", ""))
            subprocess.check_call(args)
        jobs = os.environ.get("PIXFLOW_JOBS") or str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "pixflow_python",
                               "-j", jobs])
        built = glob.glob(os.path.join(build_dir, "python", "pixflow", "_pixflow*.so"))
        if not built:
            raise RuntimeError("CMake did not build the extension (Python 3 development files "
                               "missing? Debian: python3-dev)")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)


class BuildPyWithModels(build_py):
    def run(self):
        super().run()
        models = glob.glob(os.path.join(ROOT, "node_modules", "@mediapipe", "*", "*.tflite"))
        if models:
            out = os.path.join(self.build_lib, "pixflow", "models")
            os.makedirs(out, exist_ok=True)
            for m in models:
                shutil.copyfile(m, os.path.join(out, os.path.basename(m)))


setup(
    version=read_version(),
    packages=["pixflow"],
    package_dir={"": "python"},
    package_data={"pixflow": ["*.pyi", "py.typed"]},
    ext_modules=[Extension("pixflow._pixflow", sources=[])],
    cmdclass={"build_ext": CMakeBuildExt, "build_py": BuildPyWithModels},
    options={"build": {"build_base": "build-pip"}},
    zip_safe=False,
)
