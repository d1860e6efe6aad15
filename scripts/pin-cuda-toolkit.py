#!/usr/bin/env python3
"""Writes the CuPy profile's CUDA 13 toolchain pins for one CUDA release, from PyPI.

    scripts/pin-cuda-toolkit.py 13.3.1 --nccl 2.30.7 --cutensor 2.4.1

A CUDA bump is then a data change: this writes
pyproject-templates/cupy/toolchains/cuda-<version>-<platform>.txt for linux-64, linux-aarch64
and win-64, and the flavor's `cuda = "<version>"` in the profile picks them.

The versions come from NVIDIA's own `cuda-toolkit==<version>` metapackage (its `all` extra pins
every component), for the 14 packages a CuPy build reads; cuTENSOR (`cutensor-cu13`, every
platform) and NCCL (`nvidia-nccl-cu13`, Linux only) at the versions CuPy's
`cupyx/tools/install_library.py` names for the release built. Every hash is the sha256 PyPI's
simple index (JSON form) publishes for that exact file; nothing is downloaded but the
metapackage itself.
"""

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import urllib.request
import zipfile

PACKAGES = [
    "nvidia-cublas", "nvidia-cuda-cccl", "nvidia-cuda-crt", "nvidia-cuda-nvcc",
    "nvidia-cuda-nvrtc", "nvidia-cuda-profiler-api", "nvidia-cuda-runtime", "nvidia-cufft",
    "nvidia-curand", "nvidia-cusolver", "nvidia-cusparse", "nvidia-nvjitlink", "nvidia-nvtx",
    "nvidia-nvvm",
]
# The wheel platform tag each vouch platform takes (NVIDIA's wheels carry exactly one of these).
PLATFORMS = {
    "linux-64": re.compile(r"manylinux.*_x86_64"),
    "linux-aarch64": re.compile(r"manylinux.*_aarch64"),
    "win-64": re.compile(r"win_amd64"),
}
OUT = pathlib.Path(__file__).resolve().parent.parent / "pyproject-templates/cupy/toolchains"


def simple(name):
    req = urllib.request.Request(
        f"https://pypi.org/simple/{name}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def versions_of(cuda):
    """name -> the version `cuda-toolkit==<cuda>[all]` pins, for PACKAGES."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
             "-d", tmp, f"cuda-toolkit=={cuda}"],
            check=True,
        )
        wheel = next(pathlib.Path(tmp).glob("*.whl"))
        meta = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith("/METADATA"))
        text = zipfile.ZipFile(wheel).read(meta).decode()
    pins = {}
    for line in text.splitlines():
        m = re.match(r"Requires-Dist: ([A-Za-z0-9._-]+)(==|<14,>=)([0-9.]+?)(\.\*)?;.*extra == 'all'", line)
        if m and m.group(1) in PACKAGES:
            pins[m.group(1)] = (m.group(3), m.group(4) is not None)
    missing = sorted(set(PACKAGES) - set(pins))
    if missing:
        sys.exit(f"cuda-toolkit=={cuda} pins none of {missing} in its `all` extra")
    return pins


def pick(name, version, prefix, platform):
    """(exact version, sha256) of `name`'s wheel for `platform`: `version` itself, or the
    newest release below it when the metapackage pins a prefix (`13.6.0.2.*`)."""
    files = [f for f in simple(name)["files"] if f["filename"].endswith(".whl")]
    def ver(f):
        return f["filename"].split("-")[1]
    candidates = [f for f in files if PLATFORMS[platform].search(f["filename"])
                  and (ver(f) == version or (prefix and ver(f).startswith(version + ".")))]
    if not candidates:
        return None
    best = max(candidates, key=lambda f: [int(x) for x in re.findall(r"\d+", ver(f))])
    return ver(best), best["hashes"]["sha256"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cuda", help="the CUDA release, as CuPy's ci/versions.yml names it (13.3.1)")
    ap.add_argument("--nccl", required=True, help="nvidia-nccl-cu13 version (Linux)")
    ap.add_argument("--cutensor", required=True, help="cutensor-cu13 version")
    ap.add_argument("--cupy", default="main", help="the CuPy release these follow (for the header)")
    args = ap.parse_args()
    pins = versions_of(args.cuda)
    for platform in PLATFORMS:
        lines = [
            f"# CUDA {args.cuda} (the versions cuda-toolkit=={args.cuda} pins) for {platform}, with the",
            f"# cuTENSOR{'' if platform == 'win-64' else ' and NCCL'} CuPy {args.cupy} compiles in"
            " (cupyx/tools/install_library.py). Written by",
            f"# scripts/pin-cuda-toolkit.py {args.cuda} --nccl {args.nccl} --cutensor {args.cutensor}"
            f"{'' if args.cupy == 'main' else ' --cupy ' + args.cupy}: every wheel pinned by",
            "# the sha256 PyPI's simple index publishes; vouch downloads with pip --require-hashes",
            "# and checks each file again before unpacking.",
        ]
        extra = [("cutensor-cu13", args.cutensor, False)]
        if platform != "win-64":
            extra.append(("nvidia-nccl-cu13", args.nccl, False))
        for name, (version, prefix) in sorted(pins.items()):
            got = pick(name, version, prefix, platform)
            if got is None:
                sys.exit(f"{name} {version}: no {platform} wheel on PyPI")
            lines.append(f"{name}=={got[0]} --hash=sha256:{got[1]}")
        for name, version, prefix in extra:
            got = pick(name, version, prefix, platform)
            if got is None:
                sys.exit(f"{name} {version}: no {platform} wheel on PyPI")
            lines.append(f"{name}=={got[0]} --hash=sha256:{got[1]}")
        path = OUT / f"cuda-{args.cuda}-{platform}.txt"
        path.write_text("\n".join(lines) + "\n")
        print(f"wrote {path.relative_to(OUT.parent.parent.parent)}")


if __name__ == "__main__":
    main()
