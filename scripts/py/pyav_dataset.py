"""The peer a training job would write without framefs: a PyTorch Dataset
that decodes each frame straight from the MP4s with PyAV, seeking per item.

    pyav_dataset.py VIDEO... [--epochs 1] [--workers 2] [--seed 1]

Items are (video, frame) pairs over every frame of every video; a
DataLoader(shuffle=True) reads them. Each worker keeps its containers open
and, per item, seeks to the keyframe before the frame and decodes up to it
(an exact seek), returning an RGB tensor like PILToTensor does. Prints
`epoch N IMAGES SECONDS IMAGES_PER_S` per epoch.
"""
import argparse
import time

import av
import torch


class FramesDataset(torch.utils.data.Dataset):
    def __init__(self, paths):
        self.paths = paths
        self.items = []
        self.pts = []
        for vi, p in enumerate(paths):
            with av.open(p) as c:
                s = c.streams.video[0]
                pts = sorted(pk.pts for pk in c.demux(s) if pk.pts is not None)
            self.pts.append(pts)
            self.items += [(vi, i) for i in range(len(pts))]
        self.open = {}

    def __len__(self):
        return len(self.items)

    def __getitem__(self, k):
        vi, i = self.items[k]
        c = self.open.get(vi)
        if c is None:
            c = self.open[vi] = av.open(self.paths[vi])
        s = c.streams.video[0]
        want = self.pts[vi][i]
        c.seek(want, backward=True, any_frame=False, stream=s)
        for f in c.decode(s):
            if f.pts == want:
                return torch.from_numpy(f.to_ndarray(format="rgb24")).permute(2, 0, 1), vi
            if f.pts > want:
                break
        raise IndexError("frame %d of %s not found" % (i, self.paths[vi]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("videos", nargs="+")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    ds = FramesDataset(a.videos)
    g = torch.Generator()
    g.manual_seed(a.seed)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, shuffle=True, num_workers=a.workers, generator=g)
    for epoch in range(1, a.epochs + 1):
        start = time.perf_counter()
        n = sum(1 for _ in loader)
        secs = time.perf_counter() - start
        print("epoch %d %d %.3f %.1f" % (epoch, n, secs, n / secs), flush=True)


if __name__ == "__main__":
    main()
