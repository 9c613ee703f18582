"""`pip install --no-build-isolation --no-index .` from the repository root
into a fresh venv made with --system-site-packages, then the installed
package (not the build tree) imports, finds its models and runs a model.

The ctest entry (python_pip_install) hands pip the CMake tree it was built
in (PIXFLOW_CMAKE_BUILD_DIR, derived from PYTHONPATH) so the test takes
seconds; PF_PIP_FRESH=1 makes pip configure and build from scratch as a
user's install does (minutes on 2 cores)."""
import os
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

pytestmark = pytest.mark.pip


def build_tree():
    for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if p and os.path.isfile(os.path.join(p, "..", "CMakeCache.txt")):
            return os.path.abspath(os.path.join(p, ".."))
    return None


def test_pip_install_into_a_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.check_call([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    py = str(venv / "bin" / "python")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)            # the installed package, not the build tree
    env.pop("PF_SOURCE_DIR", None)
    tree = build_tree()
    if tree and not os.environ.get("PF_PIP_FRESH"):
        env["PIXFLOW_CMAKE_BUILD_DIR"] = tree
    subprocess.check_call([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                           SOURCE_DIR], env=env, cwd=str(tmp_path), timeout=1800)
    check = r"""
import numpy as np, pixflow, os
assert pixflow.__file__.startswith(os.environ["VENV"]), pixflow.__file__
assert pixflow.devices()[0] == "cpu"
path = pixflow.model_path("selfie_segmentation.tflite")
assert path.startswith(os.environ["VENV"]), path
m = pixflow.Model(path, device="cpu")
out = m.run({m.inputs[0].name: np.zeros((1, 256, 256, 3), np.float32)})
assert out[m.outputs[0].name].shape == (1, 256, 256, 1)
print("ok")
"""
    env["VENV"] = str(venv)
    out = subprocess.check_output([py, "-c", check], env=env, cwd=str(tmp_path), text=True)
    assert out.strip() == "ok"
