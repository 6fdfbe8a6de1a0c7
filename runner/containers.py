"""Run one argv in a fresh Docker container: the runner's job containers, knowing nothing about judging.

``DockerSandbox.run_container(argv, files_in, limits)`` returns what the container left in its output
folder, its exit status, and whether it was killed at the wall clock. Every container:

- has no network (``network_mode=none``), a read-only root, and writable tmpfs folders only
  (``/scratch``, its working directory and ``HOME``, and ``/tmp``), each with a size limit;
- runs as a non-root user with every capability dropped and ``no-new-privileges``;
- has memory (no swap), CPU, process-count, open-file and file-size limits;
- gets one GPU through ``device_requests`` when ``limits.gpu`` names one (the NVIDIA container toolkit);
- sees ``files_in`` read-only at ``/in`` and writes results to ``/out`` (a folder of its own on the host,
  capped at ``limits.out_mb``: the runner kills a container that writes more);
- is killed at ``limits.wall_s`` (or when ``cancel`` is set) and always removed, whatever happens.

Results are read from ``/out`` only (regular files, no symlinks followed, each size-capped); the
container's stdout and stderr are kept as a log tail for diagnosis, never parsed.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

LABEL = "minisgl.job"  # every container we start carries it (the value: the runner's name)


@dataclass
class ContainerLimits:
    wall_s: float = 120.0
    memory_mb: int = 4096  # RAM, with no swap beyond it
    cpus: float = 1.0
    pids: int = 256
    scratch_mb: int = 256
    tmp_mb: int = 256
    out_mb: int = 16  # everything under /out together
    file_mb: int = 64  # RLIMIT_FSIZE: the largest file the container can write
    nofile: int = 1024
    gpu: str | None = None  # a device id ("0") to reserve, None: no GPU


@dataclass
class ContainerResult:
    exit_code: int | None  # None when it was killed before it exited
    files_out: dict[str, bytes] = field(default_factory=dict)
    timed_out: bool = False
    cancelled: bool = False
    oom_killed: bool = False
    out_overflow: bool = False  # wrote more than limits.out_mb to /out (and was killed for it)
    wall_s: float = 0.0
    log_tail: str = ""


class ContainerError(Exception):
    """The sandbox itself failed (the daemon, the image): never the fault of what ran inside."""


def read_out(folder: Path, cap_bytes: int) -> dict[str, bytes]:
    """Regular files directly in ``folder``: never a symlink, FIFO or device, at most ``cap_bytes`` in all."""
    out: dict[str, bytes] = {}
    budget = cap_bytes
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return out
    for entry in entries:
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = os.read(fd, budget + 1) if budget > 0 else b""
            if len(data) > budget:
                break
            budget -= len(data)
            out[entry.name] = data
        finally:
            os.close(fd)
    return out


def _folder_bytes(folder: Path, limit_entries: int = 10000) -> int:
    total = 0
    stack = [str(folder)]
    seen = 0
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    seen += 1
                    if seen > limit_entries:
                        return 1 << 62  # a flood of files is over any quota
                    st = e.stat(follow_symlinks=False)
                    total += st.st_blocks * 512 if stat.S_ISREG(st.st_mode) else 4096
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        except OSError:
            continue
    return total


class DockerSandbox:
    def __init__(self, image: str, work_dir: str | os.PathLike, *, owner: str = "runner", user: str = "10001:10001",
                 client=None):
        import docker

        self.image = image
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.work_dir, 0o711)
        self.owner = owner
        self.user = user
        self.client = client or docker.from_env(timeout=120)
        self._ncpu: int | None = None

    def host_cpus(self) -> int:
        if self._ncpu is None:
            try:
                self._ncpu = int(self.client.info().get("NCPU") or os.cpu_count() or 1)
            except Exception:  # noqa: BLE001
                self._ncpu = os.cpu_count() or 1
        return self._ncpu

    def check_image(self) -> str:
        """The image's id; ContainerError (saying how to build it) when it is missing."""
        import docker

        try:
            return self.client.images.get(self.image).id
        except docker.errors.ImageNotFound:
            raise ContainerError(f"Docker image {self.image!r} not found: build it first (docs/deploy.md, "
                               "'python docker/build.py job').") from None
        except docker.errors.DockerException as e:
            raise ContainerError(f"Docker is not reachable: {e}") from None

    def remove_leftovers(self) -> int:
        """Remove containers a previous run of this runner left behind (it was killed mid-job)."""
        n = 0
        for c in self.client.containers.list(all=True, filters={"label": f"{LABEL}={self.owner}"}):
            try:
                c.remove(force=True)
                n += 1
            except Exception:  # noqa: BLE001 - gone already
                pass
        return n

    def run_container(self, argv: list[str], files_in: dict[str, bytes], limits: ContainerLimits,
                      cancel: threading.Event | None = None, env: dict[str, str] | None = None,
                      mask: tuple[str, ...] = ()) -> ContainerResult:
        """Run ``argv``; ``mask``: folders of the image hidden under empty read-only mounts."""
        import docker
        from docker.types import DeviceRequest, LogConfig, Mount, Ulimit

        job_dir = Path(tempfile.mkdtemp(prefix="job-", dir=self.work_dir))
        in_dir, out_dir = job_dir / "in", job_dir / "out"
        container = None
        t0 = time.monotonic()
        try:
            in_dir.mkdir()
            out_dir.mkdir()
            for rel, data in files_in.items():
                path = (in_dir / rel).resolve()
                if in_dir.resolve() not in path.parents:
                    raise ValueError(f"files_in: {rel!r} is outside /in")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                os.chmod(path, 0o444)
            for d in (job_dir, in_dir):
                os.chmod(d, 0o755)
            uid, gid = (int(x) for x in self.user.split(":"))
            try:
                os.chown(out_dir, uid, gid)
                os.chmod(out_dir, 0o700)
            except PermissionError:  # a runner that is not root: a private job folder, writable by anyone in it
                os.chmod(out_dir, 0o777)
            mb = 2**20
            kwargs = dict(
                command=list(argv), user=self.user, working_dir="/scratch", hostname="judge",
                environment={"HOME": "/scratch", "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1",
                             "PYTHONUNBUFFERED": "1", **(env or {})},
                network_mode="none", read_only=True, ipc_mode="private",
                tmpfs={"/scratch": f"rw,nosuid,nodev,size={limits.scratch_mb}m,mode=1777",
                       "/tmp": f"rw,nosuid,nodev,size={limits.tmp_mb}m,mode=1777"},
                mounts=[Mount("/in", str(in_dir), type="bind", read_only=True),
                        Mount("/out", str(out_dir), type="bind", read_only=False)]
                + [Mount(m, None, type="tmpfs", read_only=True, tmpfs_size=4096) for m in mask],
                mem_limit=limits.memory_mb * mb, memswap_limit=limits.memory_mb * mb, mem_swappiness=0,
                nano_cpus=int(min(limits.cpus, self.host_cpus()) * 1e9), pids_limit=limits.pids,
                cap_drop=["ALL"], security_opt=["no-new-privileges"],
                ulimits=[Ulimit(name="nofile", soft=limits.nofile, hard=limits.nofile),
                         Ulimit(name="core", soft=0, hard=0),
                         Ulimit(name="fsize", soft=limits.file_mb * mb, hard=limits.file_mb * mb)],
                labels={LABEL: self.owner}, name=f"minisgl-job-{uuid.uuid4().hex[:12]}",
                log_config=LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
                stop_signal="SIGKILL",
            )
            if limits.gpu is not None:
                kwargs["device_requests"] = [DeviceRequest(device_ids=[str(limits.gpu)], capabilities=[["gpu"]])]
            try:
                container = self.client.containers.create(self.image, **kwargs)
                container.start()
            except docker.errors.DockerException as e:
                raise ContainerError(f"could not start a container from {self.image!r}: {e}") from None
            result = self._watch(container, out_dir, limits, cancel, t0)
            result.files_out = read_out(out_dir, limits.out_mb * mb)
            return result
        finally:
            if container is not None:
                try:
                    container.remove(force=True)
                except Exception:  # noqa: BLE001 - removed already, or the daemon is away (remove_leftovers)
                    pass
            shutil.rmtree(job_dir, ignore_errors=True)

    def _watch(self, container, out_dir: Path, limits: ContainerLimits, cancel: threading.Event | None,
               t0: float) -> ContainerResult:
        import docker

        exited = threading.Event()
        status: dict = {}

        def wait():
            try:
                status.update(container.wait())
            except Exception as e:  # noqa: BLE001
                status["error"] = str(e)
            exited.set()

        threading.Thread(target=wait, daemon=True, name="container-wait").start()
        result = ContainerResult(exit_code=None)
        deadline = t0 + limits.wall_s
        next_quota = 0.0
        while not exited.wait(0.1):
            now = time.monotonic()
            why = None
            if now >= deadline:
                why = "timed_out"
            elif cancel is not None and cancel.is_set():
                why = "cancelled"
            elif now >= next_quota:
                next_quota = now + 0.5
                if _folder_bytes(out_dir) > limits.out_mb * 2**20:
                    why = "out_overflow"
            if why:
                setattr(result, why, True)
                try:
                    container.kill()
                except docker.errors.DockerException:
                    pass
                exited.wait(30)
                break
        result.wall_s = round(time.monotonic() - t0, 3)
        try:
            container.reload()
            state = container.attrs.get("State", {})
            result.oom_killed = bool(state.get("OOMKilled"))
            if not (result.timed_out or result.cancelled or result.out_overflow):
                result.exit_code = int(state.get("ExitCode", status.get("StatusCode", -1)))
            result.log_tail = container.logs(tail=40).decode("utf-8", "replace")[-4000:]
        except docker.errors.DockerException as e:
            if "error" in status and not result.timed_out:
                raise ContainerError(f"lost the container: {status['error']} / {e}") from None
        return result
