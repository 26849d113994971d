"""Shuffled training epochs over an image folder, as a training job reads it.

    shuffled_epochs.py ROOT [--epochs 2] [--workers 2] [--seed 1] [--evict]
                            [--resize N] [--batch-size B] [--npy | --bytes]
                            [--daemon-pid PID] [--stats FILE]

torchvision's ImageFolder + DataLoader(shuffle=True): every image of ROOT/CLASS/
once per epoch, in a new random order each epoch, decoded by PIL in worker
processes (--resize N resizes each to NxN first, as a model's input
transform does; --batch-size B collates batches of B tensors, as training
reads). --npy reads .npy files with numpy.load instead (DatasetFolder), no
image library involved. --bytes reads each file's bytes and decodes nothing:
a reader that leaves the cores to the daemon. Prints one line per epoch (epoch 1 counts the listing of ROOT too):

    epoch N IMAGES SECONDS IMAGES_PER_S [DAEMON_CPU_S DECODED SERVED]

--evict drops the files from the page cache first (a cold local disk).
With --daemon-pid and --stats (a framefs mount's .stats file), each line also
gives the mount daemon's CPU seconds and the frames it decoded and served
during the epoch.
"""
import argparse
import os
import time

import numpy as np
import torch
import torchvision


def daemon_cpu(pid):
    # utime + stime, fields 14 and 15 of /proc/PID/stat, in clock ticks.
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def counters(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, value = line.rsplit(None, 1)
            out[name] = float(value)
    return out


def evict(root):
    for d, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(d, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def load_bytes(path):
    # The file's size, once read whole: nothing decoded, nothing collated
    # but a number.
    with open(path, "rb") as f:
        return len(f.read())


def load_npy(path):
    # HWC uint8, as the frame was decoded; a model's pipeline permutes it.
    return torch.from_numpy(np.load(path))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--evict", action="store_true")
    ap.add_argument("--resize", type=int)
    ap.add_argument("--batch-size", type=int)
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--npy", action="store_true")
    what.add_argument("--bytes", action="store_true")
    ap.add_argument("--daemon-pid", type=int)
    ap.add_argument("--stats")
    a = ap.parse_args()
    if a.evict:
        evict(a.root)
    # Epoch 1 counts from before the listing: a mount works out frame sizes
    # it has not stored while the folder is listed, and a training job
    # waits for that too.
    cpu0 = daemon_cpu(a.daemon_pid) if a.daemon_pid else 0
    st0 = counters(a.stats) if a.stats else {}
    start = time.perf_counter()
    if a.npy:
        ds = torchvision.datasets.DatasetFolder(a.root, loader=load_npy, extensions=(".npy",))
    elif a.bytes:
        ds = torchvision.datasets.DatasetFolder(a.root, loader=load_bytes, extensions=(".jpg", ".png", ".bmp", ".ppm", ".npy"))
    else:
        steps = [torchvision.transforms.Resize((a.resize, a.resize))] if a.resize else []
        ds = torchvision.datasets.ImageFolder(a.root, transform=torchvision.transforms.Compose(steps + [torchvision.transforms.PILToTensor()]))
    g = torch.Generator()
    g.manual_seed(a.seed)
    loader = torch.utils.data.DataLoader(ds, batch_size=a.batch_size, shuffle=True, num_workers=a.workers, generator=g)
    for epoch in range(1, a.epochs + 1):
        if epoch > 1:
            cpu0 = daemon_cpu(a.daemon_pid) if a.daemon_pid else 0
            st0 = counters(a.stats) if a.stats else {}
            start = time.perf_counter()
        n = 0
        for item in loader:
            n += len(item[1]) if a.batch_size else 1
        secs = time.perf_counter() - start
        line = "epoch %d %d %.3f %.1f" % (epoch, n, secs, n / secs)
        if a.daemon_pid and a.stats:
            st1 = counters(a.stats)
            decoded = st1.get("framefs_decoder_frames_decoded_total", 0) - st0.get("framefs_decoder_frames_decoded_total", 0)
            served = st1.get("framefs_frames_served_total", 0) - st0.get("framefs_frames_served_total", 0)
            line += " %.3f %d %d" % (daemon_cpu(a.daemon_pid) - cpu0, decoded, served)
        print(line, flush=True)


if __name__ == "__main__":
    main()
