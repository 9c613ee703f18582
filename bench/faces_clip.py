#!/usr/bin/env python3
"""Writes a 1920x1080 Y4M (4:2:0, BT.601 limited range) clip with N copies of
the astronaut's face (.data/astronaut.png, the 200x200 around the face at
(127, 25)) on a grey canvas, drifting 2 px a frame so the tracker follows
moving faces. Used by bench/bench_faces.sh; needs only numpy (the PNG is
decoded here with zlib: the GPU machine's python3 and Debian's both have
numpy, not always an image library).

    faces_clip.py ASTRONAUT.png FACES(1|4|16) FRAMES OUT.y4m
"""
import struct
import sys
import zlib

import numpy as np


def read_png_rgb(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype == 2 and interlace == 0, "8-bit RGB only"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * 3)
    out = np.zeros((h, w * 3), np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        up = out[y - 1] if y else np.zeros(w * 3, np.int32)
        if f == 0:
            out[y] = line
        elif f == 2:
            out[y] = (line + up) & 255
        else:  # sub, average, paeth depend on the left neighbour: per pixel
            row = np.zeros(w * 3, np.int32)
            for x in range(w * 3):
                a = row[x - 3] if x >= 3 else 0
                b = up[x]
                c = up[x - 3] if x >= 3 else 0
                if f == 1:
                    p = a
                elif f == 3:
                    p = (a + b) // 2
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                row[x] = (line[x] + p) & 255
            out[y] = row
    return out.reshape(h, w, 3).astype(np.uint8)


def resize_nearest(img, size):
    h, w = img.shape[:2]
    ys = (np.arange(size) * h // size).clip(0, h - 1)
    xs = (np.arange(size) * w // size).clip(0, w - 1)
    return img[ys][:, xs]


def layout(faces):
    """(tile side, [(x, y)...]) of the face tiles in a 1920x1080 frame."""
    if faces == 1:
        return 600, [(660, 240)]
    if faces == 4:
        return 520, [(420 + 560 * (i % 2), 20 + 530 * (i // 2)) for i in range(4)]
    return 268, [(420 + 270 * (i % 4), 2 + 270 * (i // 4)) for i in range(16)]


def to_i420(rgb):
    f = rgb.astype(np.float32)
    r, g, b = f[..., 0], f[..., 1], f[..., 2]
    y = 16 + 0.257 * r + 0.504 * g + 0.098 * b
    u = 128 - 0.148 * r - 0.291 * g + 0.439 * b
    v = 128 + 0.439 * r - 0.368 * g - 0.071 * b
    sub = lambda p: p.reshape(p.shape[0] // 2, 2, p.shape[1] // 2, 2).mean(axis=(1, 3))
    return [np.clip(np.rint(p), 0, 255).astype(np.uint8) for p in (y, sub(u), sub(v))]


def main():
    src, faces, frames, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    face = read_png_rgb(src)[25:225, 127:327]
    side, spots = layout(faces)
    tile = resize_nearest(face, side)
    with open(out, "wb") as f:
        f.write(b"YUV4MPEG2 W1920 H1080 F30:1 Ip A1:1 C420jpeg\n")
        for k in range(frames):
            canvas = np.full((1080, 1920, 3), 128, np.uint8)
            dx = 2 * (k % 30) - 30  # back and forth over 60 px
            for x, y in spots:
                x0 = min(max(x + dx, 0), 1920 - side)
                canvas[y:y + side, x0:x0 + side] = tile
            f.write(b"FRAME\n")
            for p in to_i420(canvas):
                f.write(p.tobytes())


if __name__ == "__main__":
    main()
