"""Module, devices, errors, Tensor and the buffer protocol, DLPack on the CPU."""
import gc
import sys

import numpy as np
import pytest

import pixflow


def test_devices_and_version():
    devs = pixflow.devices()
    assert isinstance(devs, list) and devs and devs[0] == "cpu"
    assert pixflow.version() == pixflow.__version__
    info = pixflow.device_info("cpu")
    assert info["type"] == "cpu" and info["total_memory"] > 0
    assert "cuda" in pixflow.build_info()


def test_bad_device_is_an_error_with_the_spec():
    with pytest.raises(pixflow.NoDeviceError, match="cuda:99"):
        pixflow.Model(pixflow.model_path("selfie_segmentation.tflite"), device="cuda:99")
    with pytest.raises(TypeError):
        pixflow.device_info(3)


def test_error_classes():
    assert issubclass(pixflow.InvalidError, pixflow.Error)
    assert issubclass(pixflow.InvalidError, ValueError)
    assert issubclass(pixflow.IOError, OSError)
    assert issubclass(pixflow.NoMemoryError, MemoryError)
    assert issubclass(pixflow.UnsupportedError, NotImplementedError)
    with pytest.raises(pixflow.InvalidError) as e:
        pixflow.ops.resize(np.zeros((4, 4, 3), np.float64), (2, 2))
    assert "float64" in str(e.value)
    assert e.value.status == -1 and e.value.status_name == "invalid argument"


def test_results_share_memory_with_a_tensor(rgb):
    out = pixflow.ops.resize(rgb, (32, 24))
    assert isinstance(out, np.ndarray) and out.flags.writeable
    # The array's memory is pixflow's: its base chain ends in a pixflow.Tensor.
    base = out.base
    while base is not None and not isinstance(base, pixflow.Tensor):
        base = getattr(base, "obj", None) if isinstance(base, memoryview) else base.base
    assert isinstance(base, pixflow.Tensor)
    assert base.shape == (24, 32, 3) and base.dtype == "uint8" and base.device == "cpu"
    assert base.data_ptr == out.__array_interface__["data"][0]


def test_tensor_buffer_protocol_and_dlpack_with_numpy(rgb):
    t = pixflow.from_dlpack(rgb)                      # numpy exports DLPack
    assert isinstance(t, pixflow.Tensor) and t.shape == rgb.shape and t.dtype == "uint8"
    assert t.data_ptr == rgb.__array_interface__["data"][0]       # zero copy
    assert t.__dlpack_device__() == (1, 0)
    a = np.asarray(t)                                  # buffer protocol back
    assert a.__array_interface__["data"][0] == t.data_ptr
    m = memoryview(t)
    assert m.format == "B" and m.shape == rgb.shape
    m.release()
    b = np.from_dlpack(t)                              # our __dlpack__
    assert b.__array_interface__["data"][0] == t.data_ptr
    assert np.array_equal(b, rgb)
    assert t.cpu() is t and np.array_equal(t.numpy(), rgb)
    f = np.arange(6, dtype=np.float32).reshape(2, 3)
    tf = pixflow.from_dlpack(f)
    assert tf.dtype == "float32" and tf.strides == (3, 1)
    assert "pixflow.Tensor(shape=(2, 3)" in repr(tf)


def test_dlpack_capsule_protocol(rgb):
    t = pixflow.from_dlpack(rgb)
    cap = t.__dlpack__()
    assert "dltensor" in repr(cap)
    cap_v = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap_v)
    del cap, cap_v                                     # unconsumed: deleters run
    gc.collect()
    before = sys.getrefcount(t)
    for _ in range(100):
        np.from_dlpack(t)
    assert sys.getrefcount(t) == before
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))


def test_unsupported_dlpack_dtype():
    with pytest.raises(pixflow.InvalidError, match="dtype"):
        pixflow.from_dlpack(np.zeros(3, np.float64))


def test_inputs_are_read_in_place():
    """An op reading a bytearray (any buffer) sees its current bytes, and a
    non-contiguous array is refused with a message, not copied silently."""
    buf = bytearray(4 * 4 * 3)
    img = np.frombuffer(buf, np.uint8).reshape(4, 4, 3)
    buf[:] = b"\x07" * len(buf)
    assert pixflow.ops.resize(img, (2, 2)).max() == 7
    with pytest.raises(pixflow.InvalidError, match="contiguous"):
        pixflow.ops.mask_threshold(np.zeros((4, 4), np.float32)[:, ::2])


def test_type_stubs_cover_the_api():
    import ast
    import os
    here = os.path.dirname(pixflow.__file__)
    declared = set()
    for f in ("__init__.pyi", "ops.pyi"):
        tree = ast.parse(open(os.path.join(here, f)).read())
        declared |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    public = {n for n in dir(pixflow._pixflow) if not n.startswith("_") and n != "ops"}
    public |= {n for n in dir(pixflow.ops) if not n.startswith("_")} - {"annotations"}
    public.add("model_path")
    assert public - declared == set()
    # and the docstrings are there
    for name in ("Model", "Pipeline", "Tensor", "from_dlpack", "devices"):
        assert getattr(pixflow, name).__doc__
    assert "letterbox" in pixflow.ops.preprocess.__doc__
