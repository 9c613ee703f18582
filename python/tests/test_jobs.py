"""The jobs (pixflow/jobs.h) from Python: segment and reproject files,
Segmenter on arrays, errors, and Ctrl-C cancelling a long job. Skipped when
the library has no jobs API."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import pixflow
from conftest import SOURCE_DIR

pytestmark = pytest.mark.skipif(not hasattr(pixflow, "segment"),
                                reason="this libpixflow has no jobs API")

ASTRONAUT = os.path.join(SOURCE_DIR, ".data", "astronaut.png")
VIDEO = os.path.join(SOURCE_DIR, ".data", "vtest.avi")


def test_segmenter_on_arrays():
    seg = pixflow.Segmenter(device="cpu", background="#00ff00")
    img = np.zeros((96, 128, 3), np.uint8)
    img[20:80, 40:90] = (200, 150, 120)
    comp, mask = seg.process(img)
    assert comp.shape == (96, 128, 3) and comp.dtype == np.uint8
    assert mask.shape == (96, 128) and mask.dtype == np.uint8
    only_mask = seg.process(img, composite=False)
    assert only_mask[0] is None and np.array_equal(only_mask[1], mask)
    with pytest.raises(pixflow.InvalidError):
        seg.process(np.zeros((4, 4), np.float64))
    with pytest.raises(pixflow.Error, match="nope.tflite"):
        pixflow.Segmenter(model="nope.tflite")


@pytest.mark.skipif(not os.path.exists(ASTRONAUT), reason="no sample image (scripts/setup.sh)")
def test_segment_an_image_matches_the_segmenter(tmp_path):
    out = tmp_path / "astro.png"
    mask = tmp_path / "astro_mask.png"
    r = pixflow.segment(ASTRONAUT, str(out), mask_out=str(mask), device="cpu")
    assert r["status"] == "done" and r["frames"] == 1 and r["kind"] == "segment"
    assert out.exists() and mask.exists()
    assert isinstance(r["messages"], list)


@pytest.mark.skipif(not os.path.exists(ASTRONAUT), reason="no sample image (scripts/setup.sh)")
def test_reproject_an_image(tmp_path):
    r = pixflow.reproject([ASTRONAUT], tmp_path / "views",
                          views=[dict(yaw=0, fov=90, width=64, height=48), (90, 0, 0, 90, 32, 32)],
                          format="png", device="cpu")
    assert r["status"] == "done" and r["reproject"]["files_written"] == 2
    assert len(os.listdir(tmp_path / "views")) == 2
    r = pixflow.reproject(ASTRONAUT, tmp_path / "cube", cube="3x2", cube_size=16, device="cpu")
    assert r["reproject"]["files_written"] == 1


def test_job_errors(tmp_path):
    with pytest.raises(pixflow.Error) as e:
        pixflow.segment(str(tmp_path / "missing.png"), str(tmp_path / "o.png"), device="cpu")
    assert "missing.png" in str(e.value)
    with pytest.raises(pixflow.InvalidError):
        pixflow.reproject([ASTRONAUT], tmp_path, views=[dict(fov=500)], device="cpu")


@pytest.mark.skipif(not os.path.exists(VIDEO) or not pixflow.build_info()["ffmpeg"],
                    reason="no sample video or no FFmpeg")
def test_background_job_progress_and_cancel(tmp_path):
    job = pixflow.segment(VIDEO, "null", device="cpu", wait=False)
    assert isinstance(job, pixflow.Job)
    assert job.wait(timeout=0.2) is None or job.done
    p = job.progress()
    assert set(p) == {"done", "failed", "total", "elapsed_s"}
    job.cancel()
    r = job.wait()
    assert r["status"] in ("interrupted", "done")


LONG_JOB = r"""
import signal, sys, pixflow
signal.signal(signal.SIGINT, signal.default_int_handler)
print("started", flush=True)
try:
    pixflow.segment(sys.argv[1], "null", device="cpu")
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""


@pytest.mark.skipif(not os.path.exists(VIDEO) or not pixflow.build_info()["ffmpeg"],
                    reason="no sample video or no FFmpeg")
def test_sigint_cancels_a_long_job():
    proc = subprocess.Popen([sys.executable, "-c", LONG_JOB, VIDEO], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(1.0)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3 and "interrupted" in out, out
    # The frames in flight are finished first; sanitizers make that slower.
    assert took < (40 if os.environ.get("PF_TEST_SANITIZED") else 10), took
