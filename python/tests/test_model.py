"""pixflow.Model on the CPU: inputs/outputs, run with dicts, lists, batches
and DLPack, errors with pixflow's messages."""
import numpy as np
import pytest

import pixflow


def test_inputs_outputs(selfie):
    (i,) = selfie.inputs
    (o,) = selfie.outputs
    assert i.name == "input_1" and i.shape == (-1, 256, 256, 3) and i.dtype == "float32"
    assert i.layout == "nhwc"
    assert o.shape == (-1, 256, 256, 1) and o.dtype == "float32"
    assert selfie.device == "cpu" and selfie.precision == "fp32" and selfie.max_batch == 4


def test_run_dict_list_single_and_batch(selfie, rgb):
    x = pixflow.ops.preprocess([rgb, rgb[::-1].copy()], (256, 256), layout="nhwc")
    name, out = selfie.inputs[0].name, selfie.outputs[0].name
    both = selfie.run({name: x})
    assert list(both) == [out]
    y = both[out]
    assert isinstance(y, np.ndarray) and y.shape == (2, 256, 256, 1) and y.dtype == np.float32
    assert 0.0 <= y.min() and y.max() <= 1.0          # a sigmoid mask
    first = selfie.run({name: x[:1]})[out]
    assert np.allclose(first[0], y[0], atol=1e-5)      # batch rows are independent
    assert np.array_equal(selfie.run([x[1:]])[out], selfie.run(x[1:])[out])


def test_run_accepts_dlpack_producers(selfie, rgb):
    x = pixflow.ops.preprocess(rgb, (256, 256), layout="nhwc")
    name, out = selfie.inputs[0].name, selfie.outputs[0].name
    ref = selfie.run({name: x})[out]
    t = pixflow.from_dlpack(x)
    assert np.array_equal(selfie.run({name: t})[out], ref)


def test_run_errors(selfie):
    name = selfie.inputs[0].name
    with pytest.raises(pixflow.InvalidError, match="input_1"):
        selfie.run({name: np.zeros((1, 128, 128, 3), np.float32)})
    with pytest.raises(pixflow.InvalidError, match="no array for input 'input_1'"):
        selfie.run({"x": np.zeros((1, 256, 256, 3), np.float32)})
    with pytest.raises(pixflow.InvalidError):
        selfie.run({name: np.zeros((5, 256, 256, 3), np.float32)})     # over max_batch


def test_load_errors(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(pixflow.IOError, match="missing.onnx"):
        pixflow.Model(missing)
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"TFL3" + b"\0" * 60)
    with pytest.raises(pixflow.Error) as e:
        pixflow.Model(str(bad))
    assert "bad.tflite" in str(e.value)
    with pytest.raises(pixflow.UnsupportedError):
        pixflow.Model(pixflow.model_path("selfie_segmentation.tflite"), precision="fp16")
    with pytest.raises(pixflow.InvalidError, match="precision"):
        pixflow.Model(pixflow.model_path("selfie_segmentation.tflite"), precision="int4")


def test_onnx_model_from_the_conformance_data():
    import glob, os
    cases = sorted(glob.glob("/usr/share/libonnx-testdata/data/node/test_relu/model.onnx"))
    if not cases or "onnx" not in str(pixflow.build_info()) and not os.path.exists(cases[0]):
        pytest.skip("no ONNX test data")
    try:
        m = pixflow.Model(cases[0])
    except pixflow.UnsupportedError:
        pytest.skip("built without the ONNX reader")
    (i,) = m.inputs
    x = np.linspace(-2, 2, int(np.prod(i.shape)), dtype=np.float32).reshape(i.shape)
    y = m.run({i.name: x})[m.outputs[0].name]
    assert np.array_equal(y, np.maximum(x, 0))
