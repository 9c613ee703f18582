"""Reference counts and memory over 10,000 calls: nothing grows."""
import gc
import os
import sys
import tracemalloc

import numpy as np

import pytest

import pixflow
from pixflow import ops

SANITIZED = bool(os.environ.get("PF_TEST_SANITIZED"))


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@pytest.mark.skipif(SANITIZED, reason="ASan's quarantine grows memory by design (ASan checks "
                    "the frees instead)")
def test_no_leaks_over_10000_calls(selfie):
    img = np.random.default_rng(3).integers(0, 256, (24, 32, 3), dtype=np.uint8)
    mask = np.full((8, 8), 0.5, np.float32)
    small = np.zeros((1, 256, 256, 3), np.float32)
    name = selfie.inputs[0].name

    def calls(n):
        for _ in range(n):
            ops.resize(img, (16, 12))
            ops.composite(img, mask, (1, 2, 3))
            np.from_dlpack(pixflow.from_dlpack(img))
            try:
                ops.resize(img.astype(np.float64), (3, 3))
            except pixflow.InvalidError:
                pass

    calls(200)
    selfie.run({name: small})
    gc.collect()
    refs = (sys.getrefcount(img), sys.getrefcount(mask), sys.getrefcount(small))
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    rss0 = rss_kib()
    calls(10000)
    for _ in range(50):
        selfie.run({name: small})
    gc.collect()
    rss1 = rss_kib()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert (sys.getrefcount(img), sys.getrefcount(mask), sys.getrefcount(small)) == refs
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    assert grown < 64 * 1024, grown
    assert rss1 - rss0 < 8 * 1024, (rss0, rss1)      # KiB: 40,000 calls, < 8 MiB


def test_pipeline_objects_are_released():
    img = np.zeros((8, 8, 3), np.uint8)
    before = sys.getrefcount(img)
    for _ in range(20):
        p = pixflow.Pipeline()
        s = p.add_source([pixflow.Item(frame=img)] * 3)
        f = p.add_function(lambda it: it)
        p.connect(s, f)
        p.output(f)
        for it in p:
            pass
        del p, it
    gc.collect()
    assert sys.getrefcount(img) == before
