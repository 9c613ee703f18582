"""Image kernels on arrays (pixflow/ops.h): preprocess, convert, resize,
reproject, cubemap, mask post-processing and compositing.

Each function runs where its main input lives: NumPy arrays and other host
buffers on the CPU, CUDA tensors (torch, CuPy, pixflow.Tensor, by DLPack) on
their GPU, and returns new arrays on the same side (NumPy on the host,
pixflow.Tensor on a GPU). Inputs are read in place; the GIL is released
while the kernel runs; the call returns when the work is complete.

Images are uint8 arrays: [H, W, 3] rgb24 (format="bgr24" for BGR), [H, W, 4]
rgba, [H, W] gray8, and [H * 3 / 2, W] for nv12 / i420 (format given).
"""
from ._pixflow import ops as _ops

preprocess = _ops.preprocess
convert = _ops.convert
resize = _ops.resize
reproject = _ops.reproject
cubemap = _ops.cubemap
mask_threshold = _ops.mask_threshold
mask_argmax = _ops.mask_argmax
mask_feather = _ops.mask_feather
mask_morph = _ops.mask_morph
mask_temporal = _ops.mask_temporal
composite = _ops.composite

__all__ = ["preprocess", "convert", "resize", "reproject", "cubemap", "mask_threshold",
           "mask_argmax", "mask_feather", "mask_morph", "mask_temporal", "composite"]
