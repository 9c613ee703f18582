"""pixflow: GPU/CPU video and image pipelines from Python.

The C library (libpixflow) through a CPython extension: devices, models,
image ops, pipelines and the flagship jobs, with NumPy arrays (buffer
protocol) and DLPack tensors (PyTorch, CuPy) in and out without copies.

    import numpy as np, pixflow
    pixflow.devices()                                   # ['cpu', 'cuda:0', ...]
    m = pixflow.Model("selfie_segmentation.tflite", device="cpu")
    x = pixflow.ops.preprocess(image, (256, 256), layout="nhwc")
    mask = m.run({m.inputs[0].name: x})[m.outputs[0].name]

Every failure raises pixflow.Error (a subclass per kind: InvalidError,
IOError, FormatError, ...) carrying pixflow's own message. The GIL is
released while native code runs. See docs/python.md.
"""
import os as _os

from ._pixflow import (  # noqa: F401
    __version__,
    BusyError,
    CancelledError,
    ClosedError,
    DeviceError,
    Error,
    FormatError,
    InternalError,
    InvalidError,
    IOError,
    Item,
    Model,
    NoDeviceError,
    NoMemoryError,
    Pipeline,
    Tensor,
    TensorInfo,
    TimeoutError,
    UnsupportedError,
    build_info,
    device_info,
    devices,
    from_dlpack,
    set_log_level,
    version,
)
from . import ops  # noqa: F401
from . import _pixflow

# The jobs (segment, reproject, Segmenter) exist when the library has them.
for _name in ("segment", "reproject", "Segmenter", "Job", "model_find"):
    if hasattr(_pixflow, _name):
        globals()[_name] = getattr(_pixflow, _name)


def _models_dir():
    """Where this copy of the package finds the shipped models: its models/
    folder (pip installs), else node_modules/ of the source tree it was
    built in (the build tree)."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    for d in (_os.path.join(here, "models"),
              _os.path.join(_os.environ.get("PF_SOURCE_DIR") or "", "node_modules"),
              _os.path.join(here, "..", "..", "..", "node_modules")):
        if d and _os.path.isdir(d):
            return _os.path.normpath(d)
    return None


# The library looks models up by name (pixflow.segment(model="selfie"),
# Segmenter) in $PIXFLOW_MODELS first, then next to libpixflow, which inside
# a Python package is the wrong place: point it at ours unless the user
# chose a folder.
if not _os.environ.get("PIXFLOW_MODELS") and _models_dir():
    _os.environ["PIXFLOW_MODELS"] = _models_dir()


def model_path(name):
    """Full path of a model shipped with pixflow (e.g.
    'selfie_segmentation.tflite'): $PIXFLOW_MODELS, the package's models/
    folder (pip installs), then node_modules/@mediapipe/* of the source
    tree. Raises pixflow.IOError naming the places searched."""
    if _os.path.isabs(name) and _os.path.exists(name):
        return name
    here = _os.path.dirname(_os.path.abspath(__file__))
    dirs = []
    env = _os.environ.get("PIXFLOW_MODELS")
    if env:
        dirs += env.split(_os.pathsep)
    dirs.append(_os.path.join(here, "models"))
    src = _os.environ.get("PF_SOURCE_DIR")
    roots = [src] if src else []
    roots.append(_os.path.join(here, "..", "..", ".."))   # build/python/pixflow in a tree
    for r in roots:
        mp = _os.path.join(r, "node_modules", "@mediapipe")
        if _os.path.isdir(mp):
            dirs += [_os.path.join(mp, d) for d in sorted(_os.listdir(mp))]
    for d in dirs:
        p = _os.path.join(d, name)
        if _os.path.exists(p):
            return _os.path.normpath(p)
    raise IOError("model %s not found: looked in %s" % (name, ", ".join(dirs) or "nowhere"))
