#!/usr/bin/env python3
"""Writes N frames spread evenly over a video as PNGs (OpenCV; the GPU
machine has no ffmpeg CLI). Used by bench/int8_accuracy.sh.

    python3 bench/quant_frames.py VIDEO OUT_DIR N
"""
import os
import sys

import cv2


def main():
    video, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    cap = cv2.VideoCapture(video)
    total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    if not cap.isOpened() or total <= 0:
        sys.exit("quant_frames: cannot read %s" % video)
    step = max(1, total // n)
    written = 0
    for i in range(0, total, step):
        if written == n:
            break
        cap.set(cv2.CAP_PROP_POS_FRAMES, i)
        ok, frame = cap.read()
        if not ok:
            break
        cv2.imwrite(os.path.join(out, "f_%04d.png" % i), frame)
        written += 1
    print("quant_frames: %d frames of %s -> %s" % (written, video, out))
    if written == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
