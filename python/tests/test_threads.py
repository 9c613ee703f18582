"""Threads calling in parallel get the same results as one thread, and the
GIL is released while native code runs."""
import threading
import time

import numpy as np

import pixflow
from pixflow import ops


def test_parallel_calls_match_serial(selfie):
    rng = np.random.default_rng(4)
    imgs = [rng.integers(0, 256, (60, 80, 3), dtype=np.uint8) for _ in range(8)]
    name, out = selfie.inputs[0].name, selfie.outputs[0].name

    def work(img):
        x = ops.preprocess(img, (256, 256), layout="nhwc")
        r = ops.resize(img, (40, 30), "area")
        c = ops.composite(img, np.full((4, 4), 0.3, np.float32), "blur", sigma=4)
        return x, r, c, selfie.run({name: x})[out]

    serial = [work(i) for i in imgs]
    results = [None] * len(imgs)
    errors = []

    def run(k):
        try:
            for _ in range(3):
                results[k] = work(imgs[k])
        except Exception as e:       # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(imgs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for a, b in zip(serial, results):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)


def test_gil_is_released_during_model_runs(selfie):
    """A Python thread keeps counting while another runs the model."""
    name = selfie.inputs[0].name
    x = np.zeros((4, 256, 256, 3), np.float32)
    ticks = 0
    stop = False

    def count():
        nonlocal ticks
        while not stop:
            ticks += 1
            time.sleep(0.0005)

    t = threading.Thread(target=count)
    t.start()
    before = ticks
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.3:
        selfie.run({name: x})
    stop = True
    t.join()
    assert ticks - before > 20
