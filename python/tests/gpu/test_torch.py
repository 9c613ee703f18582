"""GPU machine: pixflow and PyTorch on CUDA (skipped without torch or a GPU).

- DLPack round trips without copies (data_ptr equality both ways) and with
  correct values;
- stream ordering: a tensor written by a slow kernel on a side torch stream
  is read by pixflow after that kernel, and pixflow's output read by torch on
  another stream is complete;
- a model exported from PyTorch to ONNX, run by pixflow on the GPU (fp32 and
  fp16) against PyTorch's own output;
- a training-style loop: uint8 frames on the GPU -> pixflow preprocess ->
  torch model forward/backward, the preprocess checked against torch.

Runs under pytest, or as a plain script where pytest is missing:
  PYTHONPATH=build-gpu/python python3 python/tests/gpu/test_torch.py
"""
import os
import sys
import tempfile

import numpy as np

try:
    import pytest
except ImportError:                       # plain-script mode (see __main__)
    pytest = None

import pixflow
from pixflow import ops

try:
    import torch
    HAVE_CUDA = torch.cuda.is_available() and any(d.startswith("cuda") for d in pixflow.devices())
except ImportError:
    torch = None
    HAVE_CUDA = False

if pytest is not None:
    pytestmark = pytest.mark.skipif(not HAVE_CUDA,
                                    reason="needs torch, CUDA and pixflow's CUDA backend")

DEV = "cuda:0"


def test_dlpack_round_trip_zero_copy():
    x = torch.arange(2 * 3 * 4, dtype=torch.float32, device="cuda").reshape(2, 3, 4)
    t = pixflow.from_dlpack(x)
    assert t.device == DEV and t.shape == (2, 3, 4) and t.dtype == "float32"
    assert t.data_ptr == x.data_ptr()                       # zero copy in
    assert t.__dlpack_device__() == (2, 0)
    y = torch.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr()                     # zero copy out
    assert torch.equal(y, x)
    x.add_(1)                                               # shared memory
    assert torch.equal(torch.from_dlpack(t), x)
    for dt in (torch.uint8, torch.int32, torch.float16):
        z = torch.ones(5, dtype=dt, device="cuda")
        assert torch.from_dlpack(pixflow.from_dlpack(z)).data_ptr() == z.data_ptr()
    host = pixflow.from_dlpack(x).cpu().numpy()
    assert np.array_equal(host, x.cpu().numpy())


def test_ops_on_gpu_tensors_stay_on_the_gpu():
    img = torch.randint(0, 256, (120, 160, 3), dtype=torch.uint8, device="cuda")
    out = ops.preprocess(img, (160, 120), mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    assert isinstance(out, pixflow.Tensor) and out.device == DEV
    got = torch.from_dlpack(out)
    ref = ((img.float() / 255 - 0.5) / 0.25).permute(2, 0, 1)[None]
    assert torch.allclose(got, ref, atol=1e-4)
    small = torch.from_dlpack(ops.resize(img, (80, 60), "area"))
    ref = torch.nn.functional.avg_pool2d(img.permute(2, 0, 1)[None].float(), 2)[0].permute(1, 2, 0)
    assert (small.float() - ref).abs().max() <= 1
    mask = torch.zeros(1, 1, 16, 16, device="cuda")
    comp = torch.from_dlpack(ops.composite(img, mask, (1, 2, 3)))
    assert (comp == torch.tensor([1, 2, 3], dtype=torch.uint8, device="cuda")).all()


def _slow_fill(x, value, stream):
    """Writes `value` into x on `stream` after enough work that a reader not
    ordered after it would see the old contents."""
    with torch.cuda.stream(stream):
        a = torch.randn(2048, 2048, device="cuda")
        for _ in range(30):
            a = a @ a
            a = a / a.abs().max()
        x.fill_(value)
        x.add_((a[0, 0] * 0).to(x.dtype))  # depends on the slow chain


def test_stream_ordering_torch_to_pixflow():
    side = torch.cuda.Stream()
    img = torch.zeros(64, 64, 3, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    _slow_fill(img, 200, side)
    with torch.cuda.stream(side):
        # torch.from_dlpack-style consumers pass their stream; pixflow asks the
        # producer with its own stream, which torch orders after `side`.
        out = ops.preprocess(img, (64, 64))
    got = torch.from_dlpack(out)
    assert torch.allclose(got, torch.full_like(got, 200 / 255), atol=1e-6)


def test_stream_ordering_pixflow_to_torch():
    img = torch.full((256, 256, 3), 77, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    other = torch.cuda.Stream()
    with torch.cuda.stream(other):
        out = ops.resize(img, (1024, 1024))
        y = torch.from_dlpack(out)          # __dlpack__(stream=other)
        s = int(y.sum().item())
    assert s == 77 * 1024 * 1024 * 3


def _export_small_model(path):
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 1, 1), torch.nn.Sigmoid()).eval()
    x = torch.randn(1, 3, 64, 64)
    torch.onnx.export(m, x, path, input_names=["input"], output_names=["mask"],
                      dynamic_axes={"input": {0: "n"}, "mask": {0: "n"}}, opset_version=17,
                      dynamo=False)
    return m


def test_model_matches_pytorch():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "small.onnx")
        ref_model = _export_small_model(path).cuda()
        x = torch.randn(4, 3, 64, 64, device="cuda")
        with torch.no_grad():
            ref = ref_model(x)
        m = pixflow.Model(path, device=DEV, precision="fp32", max_batch=4)
        assert [i.name for i in m.inputs] == ["input"] and m.inputs[0].shape[0] == -1
        out = m.run({"input": x})["mask"]
        assert isinstance(out, pixflow.Tensor) and out.device == DEV
        got = torch.from_dlpack(out)
        assert got.shape == ref.shape
        assert (got - ref).abs().max().item() < 1e-4
        host = m.run({"input": x.cpu().numpy()})["mask"]          # host in, host out
        assert isinstance(host, np.ndarray) and np.abs(host - ref.cpu().numpy()).max() < 1e-4
        h = pixflow.Model(path, device=DEV, precision="fp16", max_batch=4)
        got16 = torch.from_dlpack(h.run({"input": x})["mask"])
        assert (got16 - ref).abs().max().item() < 2e-2


def test_training_loop_feeds_pixflow_preprocess_into_torch():
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(8, 2)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    losses = []
    for step in range(20):
        frames = [torch.randint(0, 256, (96, 128, 3), dtype=torch.uint8, device="cuda")
                  for _ in range(8)]
        labels = torch.tensor([int(f.float().mean() > 127.5) for f in frames], device="cuda")
        batch = torch.from_dlpack(ops.preprocess(frames, (64, 48), mean=mean, std=std))
        assert batch.shape == (8, 3, 48, 64) and batch.is_cuda
        if step == 0:
            ref = torch.nn.functional.interpolate(
                torch.stack(frames).permute(0, 3, 1, 2).float() / 255, size=(48, 64),
                mode="bilinear", align_corners=False, antialias=False)
            ref = (ref - torch.tensor(mean, device="cuda")[:, None, None]) / \
                torch.tensor(std, device="cuda")[:, None, None]
            # pixflow's bilinear downscale samples like align_corners=False
            assert (batch - ref).abs().max().item() < 1e-3
        loss = torch.nn.functional.cross_entropy(net(batch), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(np.isfinite(losses))


if __name__ == "__main__":
    if not HAVE_CUDA:
        print("skipped: needs torch, CUDA and pixflow's CUDA backend")
        sys.exit(0)
    failed = 0
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print("PASS", name)
            except Exception as e:          # noqa: BLE001 - a report, not handling
                failed += 1
                print("FAIL", name, type(e).__name__, e)
    sys.exit(1 if failed else 0)
