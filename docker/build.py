#!/usr/bin/env python3
"""Build the grading server's images: ``python docker/build.py [base|job|site|runner|all] [--offline]``.

Online (a normal Docker host with a registry): the images start from ``python:3.11-slim-bookworm`` and pip
installs from PyPI; the job image gets CUDA PyTorch and FlashInfer (``minisgl-job:gpu``).

Offline (``--offline``; CI, or any host without a registry): the base image is made with ``debootstrap``
from Debian's mirror and ``docker import`` (``minisgl-base:bookworm``; the root file system is cached as a
tarball, so it is made once), the wheels are downloaded on the host by pip (the registry's ordinary
client) and the builds themselves run with no network. The job image then has the CPU PyTorch
(``minisgl-job:cpu``): CUDA graphs are emulated there; it is what the tests of the docker executor use.

Images: minisgl-base:bookworm, minisgl-job:{gpu,cpu}, minisgl-site:latest, minisgl-runner:latest.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCKER = ROOT / "docker"
CACHE = Path(os.environ.get("MINISGL_IMAGE_CACHE", Path.home() / ".cache" / "minisgl-practice"))
BASE_IMAGE = "minisgl-base:bookworm"
ONLINE_BASE = "python:3.11-slim-bookworm"
MIRROR = os.environ.get("MINISGL_DEBIAN_MIRROR", "http://deb.debian.org/debian")
BASE_PACKAGES = "python3,python3-venv,passwd"
SOURCES = ("minisgl", "judge", "exercises", "runner", "web", "browser")
IMAGES = {  # name -> (Dockerfile, requirements files, tag online, tag offline)
    "job": ("job.Dockerfile", ("requirements-job.txt", "requirements-models.txt"), "minisgl-job:gpu",
            "minisgl-job:cpu"),
    "site": ("site.Dockerfile", ("requirements-site.txt",), "minisgl-site:latest", "minisgl-site:latest"),
    "runner": ("runner.Dockerfile", ("requirements-runner.txt",), "minisgl-runner:latest", "minisgl-runner:latest"),
}


def log(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def have_image(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def build_base(force: bool = False) -> float:
    """minisgl-base:bookworm from debootstrap (cached tarball). Returns the seconds it took."""
    t0 = time.monotonic()
    if have_image(BASE_IMAGE) and not force:
        log(f"{BASE_IMAGE}: present")
        return 0.0
    tarball = CACHE / "debian-bookworm-minbase.tar"
    if not tarball.exists() or force:
        if shutil.which("debootstrap") is None:
            sys.exit("debootstrap is missing: apt-get install -y debootstrap")
        CACHE.mkdir(parents=True, exist_ok=True)
        rootfs = Path(tempfile.mkdtemp(prefix="rootfs-", dir=CACHE))
        try:
            log(f"debootstrap bookworm from {MIRROR} (about a minute)")
            subprocess.run(["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", "bookworm", str(rootfs),
                            MIRROR], check=True, stdout=subprocess.DEVNULL)
            for cache_dir in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for p in (rootfs / cache_dir).glob("*"):
                    if p.is_file():
                        p.unlink()
            partial = tarball.with_suffix(".partial")
            subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(partial), "."], check=True)
            partial.rename(tarball)
        finally:
            shutil.rmtree(rootfs, ignore_errors=True)
        log(f"root file system cached at {tarball} ({time.monotonic() - t0:.0f} s)")
    path = "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    subprocess.run(["docker", "import", "--change", path, str(tarball), BASE_IMAGE], check=True,
                   stdout=subprocess.DEVNULL)
    log(f"{BASE_IMAGE}: imported ({time.monotonic() - t0:.0f} s)")
    return time.monotonic() - t0


def download_wheels(requirements: tuple[str, ...], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(dest)]
    for r in requirements:
        args += ["-r", str(DOCKER / r)]
    subprocess.run(args, check=True)


def context_tar(dockerfile: str, wheels: Path | None) -> tempfile.SpooledTemporaryFile:
    """The build context: the sources the images need, the docker/ folder, and the wheels (offline)."""
    f = tempfile.TemporaryFile()
    skip = lambda ti: None if "__pycache__" in ti.name or ti.name.endswith(".pyc") else ti  # noqa: E731
    with tarfile.open(fileobj=f, mode="w") as tar:
        for name in SOURCES:
            tar.add(ROOT / name, arcname=name, filter=skip)
        for p in DOCKER.iterdir():
            if p.is_file():
                tar.add(p, arcname=f"docker/{p.name}")
        readme = (DOCKER / "wheels" / "README.md").read_bytes()
        info = tarfile.TarInfo("docker/wheels/README.md")
        info.size = len(readme)
        tar.addfile(info, io.BytesIO(readme))
        for w in sorted(wheels.iterdir()) if wheels else ():
            tar.add(w, arcname=f"docker/wheels/{w.name}")
    f.seek(0)
    return f


def build_image(name: str, offline: bool, base: str | None, network: str | None,
                no_cache: bool = False) -> tuple[str, float]:
    import docker

    dockerfile, requirements, tag_online, tag_offline = IMAGES[name]
    if name == "site" and not (ROOT / "web" / "static" / "dist" / "exercise.js").is_file():
        sys.exit("[build] the site's scripts are not built: run `make site` first (npm ci + esbuild)")
    tag = tag_offline if offline else tag_online
    t0 = time.monotonic()
    buildargs = {"BASE": base or (BASE_IMAGE if offline else ONLINE_BASE)}
    wheels = None
    if offline:
        wheels = CACHE / f"wheels-{name}"  # only this image's: the context (and a COPY layer) carry them
        log(f"{tag}: downloading wheels on the host ({', '.join(requirements)})")
        download_wheels(requirements, wheels)
        buildargs["PIP_ARGS"] = "--no-index --find-links /wheels"
        if name == "job":
            buildargs["EXTRA"] = ""  # FlashInfer needs CUDA
    log(f"{tag}: building from {buildargs['BASE']}")
    client = docker.from_env(timeout=1800)
    ctx = context_tar(dockerfile, wheels)
    try:
        stream = client.api.build(fileobj=ctx, custom_context=True, dockerfile=f"docker/{dockerfile}", tag=tag,
                                  buildargs=buildargs, rm=True, forcerm=True, decode=True, nocache=no_cache,
                                  network_mode="none" if offline else network)
        last = []
        for chunk in stream:
            if "error" in chunk:
                sys.exit(f"[build] {tag} failed: {chunk['error']}\n" + "".join(last[-20:]))
            text = chunk.get("stream", "")
            if text:
                last.append(text)
                if text.startswith("Step "):
                    log(f"  {text.strip()[:120]}")
    finally:
        ctx.close()
    took = time.monotonic() - t0
    log(f"{tag}: built in {took:.0f} s")
    return tag, took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python docker/build.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="*", default=["all"], help="base, job, site, runner or all")
    ap.add_argument("--offline", "--cpu", action="store_true", help="debootstrap base, host wheels, no network")
    ap.add_argument("--base", default=None, help="the base image (default: python:3.11-slim-bookworm, offline: "
                    f"{BASE_IMAGE})")
    ap.add_argument("--network", default=None, help="the build's network when online (e.g. host)")
    ap.add_argument("--force-base", action="store_true", help="run debootstrap again")
    ap.add_argument("--no-cache", action="store_true", help="rebuild every layer (to time a build from scratch)")
    args = ap.parse_args(argv)
    what = ["job", "site", "runner"] if "all" in args.what else args.what
    unknown = [w for w in what if w != "base" and w not in IMAGES]
    if unknown:
        ap.error(f"unknown image(s): {unknown}")
    if args.offline or "base" in what:
        build_base(force=args.force_base)
    for name in what:
        if name != "base":
            build_image(name, args.offline, args.base, args.network, args.no_cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
