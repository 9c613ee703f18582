"""Shared fixtures. The package is imported from the build tree: ctest sets
PYTHONPATH=<build>/python (python/CMakeLists.txt); by hand:
  PYTHONPATH=build-cpu/python /usr/bin/python3 -m pytest python/tests
"""
import os

import numpy as np
import pytest

import pixflow

SOURCE_DIR = os.environ.get("PF_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))


def pytest_configure(config):
    config.addinivalue_line("markers", "pip: builds and installs the package into a venv (slow)")


def have_yaml():
    """Whether this build reads YAML pipelines (libyaml is optional: the GPU
    machine has none)."""
    try:
        pixflow.Pipeline.from_yaml("stages: []\n")
    except pixflow.UnsupportedError:
        return False
    except pixflow.Error:
        return True
    return True


HAVE_YAML = have_yaml()
needs_yaml = pytest.mark.skipif(not HAVE_YAML, reason="built without libyaml")


@pytest.fixture(scope="session")
def selfie_path():
    return pixflow.model_path("selfie_segmentation.tflite")


@pytest.fixture(scope="session")
def selfie(selfie_path):
    return pixflow.Model(selfie_path, device="cpu", max_batch=4)


@pytest.fixture
def rgb():
    rng = np.random.default_rng(1)
    return rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8)
