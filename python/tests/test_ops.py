"""The ops on NumPy arrays against NumPy references."""
import numpy as np
import pytest

import pixflow
from pixflow import ops


def test_preprocess_normalises_exactly_without_resize(rgb):
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    x = ops.preprocess(rgb, (64, 48), mean=mean, std=std)
    assert x.shape == (1, 3, 48, 64) and x.dtype == np.float32
    ref = (rgb.astype(np.float64) / 255 - mean) / std
    assert np.allclose(x[0].transpose(1, 2, 0), ref, atol=1e-5)
    nhwc = ops.preprocess(rgb, (64, 48), layout="nhwc", dtype="float16", bgr=True)
    assert nhwc.shape == (1, 48, 64, 3) and nhwc.dtype == np.float16
    assert np.allclose(nhwc[0].astype(np.float32), rgb[..., ::-1] / 255.0, atol=1e-3)


def test_preprocess_batch_letterbox_info(rgb):
    big = np.zeros((100, 50, 3), np.uint8)
    x, info = ops.preprocess([rgb, big], (32, 32), letterbox=True, return_info=True)
    assert x.shape == (2, 3, 32, 32)
    assert info[0]["content_width"] == 32 and info[0]["content_height"] == 24
    assert info[1]["content_height"] == 32 and info[1]["pad_left"] == 8
    with pytest.raises(pixflow.InvalidError):
        ops.preprocess(rgb, (32, 32), std=(0, 1, 1))


def test_convert(rgb):
    bgr = ops.convert(rgb, "bgr24")
    assert np.array_equal(bgr, rgb[..., ::-1])
    rgba = ops.convert(rgb, "rgba")
    assert rgba.shape == (48, 64, 4) and (rgba[..., 3] == 255).all()
    gray = ops.convert(rgb, "gray8")
    ref = np.floor(rgb @ np.array([0.299, 0.587, 0.114]) + 0.5)
    assert np.abs(gray.astype(int) - ref).max() <= 1
    flat = np.full((48, 64, 3), (90, 140, 200), np.uint8)
    nv12 = ops.convert(flat, "nv12")
    assert nv12.shape == (72, 64)
    back = ops.convert(nv12, "rgb24", format="nv12")
    assert np.abs(back.astype(int) - flat).max() <= 2
    with pytest.raises(pixflow.InvalidError, match="nv12"):
        ops.convert(np.zeros((7, 64), np.uint8), "rgb24", format="nv12")


def test_resize(rgb):
    up = ops.resize(rgb, (128, 96), "nearest")
    assert np.array_equal(up, rgb.repeat(2, 0).repeat(2, 1))
    down = ops.resize(up, (64, 48), "area")
    assert np.array_equal(down, rgb)
    m = np.random.default_rng(0).random((1, 1, 8, 8), dtype=np.float32)
    mr = ops.resize(m, (16, 16), "nearest")
    assert mr.shape == (1, 1, 16, 16)
    assert np.array_equal(mr[0, 0], m[0, 0].repeat(2, 0).repeat(2, 1))
    with pytest.raises(pixflow.InvalidError):
        ops.resize(rgb, (0, 4))


def test_reproject_and_cubemap():
    eq = np.zeros((64, 128, 3), np.uint8)
    eq[:, :64] = (255, 0, 0)          # left half red (longitudes < 0)
    eq[:, 64:] = (0, 0, 255)          # right half blue
    left, right = ops.reproject(eq, [dict(yaw=-90, fov=60, width=16, height=8),
                                     (90, 0, 0, 60, 16, 8)])
    assert (left[..., 0] == 255).all() and (right[..., 2] == 255).all()
    cube = ops.cubemap(eq, 8)
    assert cube.shape == (16, 24, 3)
    assert ops.cubemap(eq, 8, "1x6").shape == (48, 8, 3)
    with pytest.raises(pixflow.InvalidError, match="fov"):
        ops.reproject(eq, [dict(fov=200, width=4, height=4)])


def test_masks():
    p = np.array([[[[0.2, 0.5, 0.9]]]], np.float32)
    assert ops.mask_threshold(p).tolist() == [[[[0, 255, 255]]]]
    assert ops.mask_threshold(np.log(p / (1 - p)), 0.6, logits=True).tolist() == [[[[0, 0, 255]]]]
    logits = np.random.default_rng(2).normal(size=(2, 3, 5, 7)).astype(np.float32)
    labels, prob = ops.mask_argmax(logits, cls=1)
    assert np.array_equal(labels, logits.argmax(1))
    e = np.exp(logits - logits.max(1, keepdims=True))
    assert np.allclose(prob, (e / e.sum(1, keepdims=True))[:, 1], atol=1e-6)
    assert ops.mask_argmax(logits)[1] is None
    flat = np.full((9, 9), 0.25, np.float32)
    assert np.allclose(ops.mask_feather(flat, 2.0), 0.25)
    u = np.zeros((9, 9), np.uint8)
    u[4, 4] = 255
    d = ops.mask_morph(u, "dilate", 1)
    assert d.sum() == 9 * 255 and ops.mask_morph(d, "erode", 1).sum() == 255
    state = np.zeros((4, 4), np.float32)
    mask = np.ones((4, 4), np.float32)
    assert ops.mask_temporal(state, mask, 0.25) is state
    assert np.allclose(state, 0.25)
    ops.mask_temporal(state, mask, 0.5, reset=True)
    assert np.allclose(state, 1.0)
    with pytest.raises(pixflow.InvalidError):
        ops.mask_temporal(state, mask, 0.0)
    with pytest.raises(pixflow.InvalidError, match="writable"):
        ops.mask_temporal(bytes(64), mask, 0.5)


def test_composite(rgb):
    ones = np.ones((10, 10), np.float32)
    assert np.array_equal(ops.composite(rgb, ones, (0, 255, 0)), rgb)
    green = ops.composite(rgb, np.zeros((1, 1, 4, 4), np.float32), (0, 255, 0))
    assert (green == (0, 255, 0)).all()
    rgba = ops.composite(rgb, np.full((48, 64), 255, np.uint8), "none", out_format="rgba")
    assert rgba.shape == (48, 64, 4) and (rgba[..., 3] == 255).all()
    nhwc = np.zeros((1, 4, 4, 1), np.float32)          # a model's mask as it comes
    assert (ops.composite(rgb, nhwc, (5, 6, 7)) == (5, 6, 7)).all()
    bg = np.full((10, 10, 3), 9, np.uint8)
    assert (ops.composite(rgb, np.zeros((2, 2), np.float32), bg) == 9).all()
    blurred = ops.composite(rgb, np.zeros((2, 2), np.float32), "blur", sigma=3)
    assert blurred.std() < rgb.std()
    with pytest.raises(pixflow.InvalidError, match="background"):
        ops.composite(rgb, ones, "sky")
