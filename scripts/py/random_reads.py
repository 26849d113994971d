"""One reader of random frames, no frame twice: through a framefs mount or
with PyAV exact seeks, for side-by-side comparison.

    random_reads.py mount DIR FRAMES_FILE     open DIR/NNNNNN.jpg (or .bmp), decode it with PIL
    random_reads.py pyav VIDEO FRAMES_FILE    seek to the keyframe, decode to the frame

FRAMES_FILE lists frame ordinals, one per line. Prints
`FRAMES SECONDS FRAMES_PER_S CPU_SECONDS` (CPU of this process).
"""
import os
import resource
import sys
import time

import numpy as np


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    mode, path, frames_file = sys.argv[1:4]
    targets = [int(x) for x in open(frames_file).read().split()]
    if mode == "mount":
        from PIL import Image

        names = sorted(n for n in os.listdir(path) if n.endswith((".jpg", ".bmp")))
        c0, t0 = cpu(), time.perf_counter()
        for i in targets:
            with Image.open(os.path.join(path, names[i])) as im:
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
    print("%d %.3f %.1f %.3f" % (len(targets), secs, len(targets) / secs, cpu() - c0))


if __name__ == "__main__":
    main()
