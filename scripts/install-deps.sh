#!/usr/bin/env bash
# Installs the Debian 12 packages framefs needs to build, test and demo, and
# nothing when they are all present. Safe to run again and again; quiet unless
# it installs something.
#
#   FFmpeg 5.1 libraries   cgo build of package decoder (go-astiav v0.16.0)
#   libturbojpeg0-dev      libjpeg-turbo, the JPEG encoder of package decoder
#   ffmpeg                 fixture generation and side-by-side comparisons
#   fuse3                  fusermount3 for mounts
#   python3, jq            end-to-end test scripts
#   python3-torchvision, python3-pil, python3-numpy, python3-av
#                          real image-folder loaders over a mount; PyAV as a
#                          benchmark peer
#   attr, rsync            getfattr and rsync for the mount's client tests
#   nodejs, npm            DuckDB (from npm) reads table files in end-to-end tests
#   ShellCheck (shellcheck) `make lint` checks the scripts with it
set -euo pipefail

packages=(
	gcc libc6-dev pkg-config
	libavcodec-dev libavformat-dev libavutil-dev libswscale-dev
	libswresample-dev libavfilter-dev libavdevice-dev libturbojpeg0-dev
	ffmpeg fuse3 python3 jq attr rsync
	python3-torchvision python3-pil python3-numpy python3-av
	shellcheck
)
# Node.js may come from elsewhere (a newer one first on PATH); Debian's is
# needed only when there is none.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
