"""One reader of random frames, no frame twice: through a framefs mount or
with PyAV exact seeks, for side-by-side comparison.

    random_reads.py mount DIR FRAMES_FILE [--gop N [--gap MS]]
                                              open DIR/NNNNNN.jpg (or .bmp), decode it with PIL;
                                              or load DIR/NNNNNN.npy with numpy
    random_reads.py pyav VIDEO FRAMES_FILE    seek to the keyframe, decode to the frame

FRAMES_FILE lists frame ordinals, one per line. Prints
`FRAMES SECONDS FRAMES_PER_S CPU_SECONDS` (CPU of this process).

--gop N (mount only; a video whose GOPs are all N frames) opens and closes
each file before PIL reads it and times that open, which is when the
mount makes the frame, and appends `FIRST_MS OTHER_MS`: the mean open of
the first frame read in each GOP and of the others. --gap MS sleeps that
long before each frame, so that nothing the earlier reads started is
still running (SECONDS and FRAMES_PER_S then count the sleeps too).
"""
import argparse
import os
import resource
import time

import numpy as np


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["mount", "pyav"])
    ap.add_argument("path")
    ap.add_argument("frames_file")
    ap.add_argument("--gop", type=int)
    ap.add_argument("--gap", type=float, default=0)
    a = ap.parse_args()
    if a.gop is not None and (a.mode != "mount" or a.gop <= 0):
        ap.error("--gop takes a number of frames, and only with mount")
    if a.gap and not a.gop:
        ap.error("--gap needs --gop")
    mode, path = a.mode, a.path
    targets = [int(x) for x in open(a.frames_file).read().split()]
    first, other, seen = [], [], set()
    if mode == "mount":
        from PIL import Image

        names = sorted(n for n in os.listdir(path) if n.endswith((".jpg", ".bmp", ".npy")))
        c0, t0 = cpu(), time.perf_counter()
        for i in targets:
            name = os.path.join(path, names[i])
            if a.gop:
                time.sleep(a.gap / 1000)
                start = time.perf_counter()
                os.close(os.open(name, os.O_RDONLY))
                opened = time.perf_counter() - start
                (other if i // a.gop in seen else first).append(opened)
                seen.add(i // a.gop)
            if name.endswith(".npy"):
                np.load(name)
            else:
                with Image.open(name) as im:
                    np.asarray(im.convert("RGB"))
    else:
        import av

        c = av.open(path)
        s = c.streams.video[0]
        pts = sorted(p.pts for p in c.demux(s) if p.pts is not None)
        c0, t0 = cpu(), time.perf_counter()
        for i in targets:
            want = pts[i]
            c.seek(want, backward=True, any_frame=False, stream=s)
            for f in c.decode(s):
                if f.pts == want:
                    f.to_ndarray(format="rgb24")
                    break
                if f.pts > want:
                    raise SystemExit("frame %d not found" % i)
    secs = time.perf_counter() - t0
    line = "%d %.3f %.1f %.3f" % (len(targets), secs, len(targets) / secs, cpu() - c0)
    if first:
        line += " %.2f %.2f" % (1000 * np.mean(first), 1000 * np.mean(other) if other else 0)
    print(line)


if __name__ == "__main__":
    main()
