"""Process control of a judging: its walls, its limits, its environment, and ending what it started.

One module, used by the isolated layer's parent (``judge.isolation``), its child (``judge.child``), the
trusted mode (``judge.trusted``) and the runner's job process (``runner.job``), so that each of these
holds in one place:

- walls: ``namespace_prefix`` is the command that starts the child in new namespaces (util-linux
  ``unshare``): a PID namespace (every process the judging starts dies with it; ``/proc`` shows only its
  own), and in trusted mode a network namespace (no interface is up: no connection anywhere, 127.0.0.1
  included) and a mount namespace. ``enter`` runs first thing in the child, before any of the learner's
  code: it hides the paths it must not see (the repository with the engine's source and the exercises'
  secrets, home folders, /tmp) under empty file systems, shows again what it needs (the interpreter, the
  site-packages, its private folder), makes every mount read-only except that folder, and drops every
  capability for good. Where namespaces are not available (no ``unshare``, or a kernel/container that
  refuses them), nothing of this applies and the verdict's trust measures say so; the runner's Docker
  container is then the wall.
- limits: ``set_limits`` (address space, file size, processes, no core files), set in the child;
- the environment: ``python_path`` (the interpreter's own import path) and ``learner_env`` (the only
  variables the learner's process gets in trusted mode);
- a process per judging: ``run_in_fork`` (a fork that runs one function and ends, and its exit status);
- ending: ``become_subreaper``, ``children``, ``kill_and_reap``, ``kill_group``, ``kill_descendants``,
  ``kill_orphans`` (marked orphans of a child, for the parent) and ``kill_all_others`` (as PID 1 of a
  container).

Pure standard library (ctypes for mount, prctl and the capability calls).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 18, 1 << 21, 1 << 24
_FLAG_OPTS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
              "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 24, 28, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, each locked: uid 0 never gets capabilities back, not even by exec
SECUREBITS_LOCKED_DOWN = 0x01 | 0x02 | 0x04 | 0x08 | 0x20
_CAP_VERSION_3 = 0x20080522


class SandboxError(OSError):
    """A wall could not be built: the child must not run the learner's code without it."""


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise SandboxError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


@functools.cache
def namespaces_available(trusted: bool) -> bool:
    """Whether ``namespace_prefix(trusted)`` starts a process here (probed once: a fraction of a second)."""
    if os.name != "posix" or shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(namespace_prefix(trusted) + ["true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def namespace_prefix(trusted: bool) -> list[str]:
    cmd = ["unshare", "--fork", "--kill-child", "--pid", "--mount-proc"]
    if trusted:
        cmd += ["--net"]  # --mount-proc implies --mount
    if os.geteuid() != 0:
        cmd += ["--map-root-user"]
    return cmd


def _mounts() -> list[tuple[str, set[str]]]:
    """(mount point, options) of every mount this process sees, parents first."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            out.append((point, set(fields[5].split(","))))
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def enter(writable: str, hide: list[str], keep: list[str]) -> None:
    """Called in a new mount namespace, as its root: hide ``hide``, show ``keep`` again (read-only),
    make everything read-only but ``writable``, then drop every capability. Raises SandboxError."""
    writable = os.path.realpath(writable)
    hide = sorted({os.path.realpath(h) for h in hide if os.path.isdir(h)}, key=len)
    keep = sorted({os.path.realpath(k) for k in keep + [writable] if os.path.exists(k)}, key=len)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    fds = {k: os.open(k, os.O_PATH) for k in keep if any(_under(k, h) for h in hide)}
    for h in hide:
        if any(_under(h, other) and h != other for other in hide):
            continue  # already under a hidden parent
        _mount("tmpfs", h, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for k, fd in fds.items():
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(k, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(k), exist_ok=True)
            open(k, "a").close()  # noqa: SIM115 - a mount point for a file
        _mount(f"/proc/self/fd/{fd}", k, None, MS_BIND | MS_REC)
        os.close(fd)
    for point, opts in _mounts():
        if _under(point, writable) or "ro" in opts:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for name, bit in _FLAG_OPTS.items():
            if name in opts:
                flags |= bit
        try:
            _mount(None, point, None, flags)
        except SandboxError:
            pass  # shadowed by a hidden path, or a pseudo file system that refuses: checked below
    for path in ["/"] + [k for k in keep if not _under(k, writable)]:
        if not os.statvfs(path).f_flag & os.ST_RDONLY:
            raise SandboxError(0, f"{path} is still writable")
    _drop_capabilities()


def _drop_capabilities() -> None:
    libc = _libc()
    try:
        last = int(open("/proc/sys/kernel/cap_last_cap").read())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(libc.prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_DOWN, 0, 0, 0), "lock the securebits")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(_CAP_VERSION_3, 0), (Data * 2)()
    _check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "drop the capabilities")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "set no_new_privs")


# ----------------------------------------------------------------------------------------------
# limits and environment


def set_limits(memory_mb: int | None, fsize_mb: int, nproc: int | None) -> None:
    """This process's resource limits (the child sets them before any of the learner's code runs)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if memory_mb:
            b = memory_mb * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
        b = fsize_mb * 2**20
        resource.setrlimit(resource.RLIMIT_FSIZE, (b, b))
        if nproc:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails instead of killing us
    except (ImportError, ValueError, OSError):  # not on Linux: the parent's wall clock still holds
        pass


def python_path() -> list[str]:
    """The interpreter's own import path: its standard library and site-packages (the user's too, where
    this interpreter uses them), not the folders a script or test added to ``sys.path``."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    found = [paths["stdlib"], paths["platstdlib"], os.path.join(paths["platstdlib"], "lib-dynload")]
    found += site.getsitepackages() + [paths["purelib"], paths["platlib"]]
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    out: list[str] = []
    for p in found:
        if p and os.path.isdir(p) and p not in out:
            out.append(p)
    return out


PASSED_TO_LEARNER = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")


def learner_env(home: str, exercises: str, models: str) -> dict[str, str]:
    """Every environment variable the learner's process of a trusted judging gets: a fixed ``PATH`` and
    locale, its private ``home``, the exercises folder and tiny models it reads, and the GPU selection
    (``PASSED_TO_LEARNER``, where this process has them). Nothing else of ours reaches it."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home,
           "MINISGL_TEST_MODELS": models, "MINISGL_EXERCISES": exercises}
    for k in PASSED_TO_LEARNER:
        if k in os.environ:
            env[k] = os.environ[k]
    return env


# ----------------------------------------------------------------------------------------------
# ending every process a judging started


def become_subreaper() -> bool:
    """Orphans of our children are re-parented to this process (so they can be found and ended)."""
    if not os.path.exists("/proc/self"):
        return False
    try:
        return _libc().prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def not_dumpable() -> None:
    """No ptrace of this process and no reading of its memory through /proc (PR_SET_DUMPABLE 0)."""
    try:
        _libc().prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def run_in_fork(body: Callable[[], None]) -> int:
    """Run ``body`` in a fork of this process, which ends when it returns (exit 0) or raises (exit 3) without
    running anything else of ours; its exit status as ``Popen.returncode`` (negative: the ending signal)."""
    pid = os.fork()
    if pid == 0:
        rc = 3
        try:
            body()
            rc = 0
        finally:
            os._exit(rc)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def children(pid: int) -> list[int]:
    """The live children of ``pid`` (a subreaper's include the orphans re-parented to it): from its tasks'
    ``children`` lists where the kernel keeps them, else by reading every process's parent in /proc."""
    try:
        return [int(c) for t in os.listdir(f"/proc/{pid}/task")
                for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
    except (OSError, ValueError):
        pass
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.append(int(name))
    return found


def kill_and_reap(pids: list[int]) -> None:
    """SIGKILL each process and reap it (one already gone, or not ours, is passed over)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError, PermissionError):
            pass


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the process group ``pgid`` (a child started in a session of its own);
    a group already gone, or not ours, is passed over. The caller reaps its own child."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_descendants(timeout_s: float = 10.0, spare: frozenset[int] = frozenset()) -> None:
    """As a subreaper: kill and reap our children (but ``spare``) until none is left (their orphans come to us
    in turn)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        kids = [k for k in children(os.getpid()) if k not in spare]
        if not kids:
            return
        kill_and_reap(kids)


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not died yet (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2:][:1] != b"Z"
    except (OSError, ValueError):
        return False


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, parents before children."""
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


def kill_tree(pid: int, reap: Callable[[], object], timeout_s: float = 10.0) -> None:
    """SIGKILL ``pid`` (our child, reaped by ``reap``) and every descendant it has, wherever they were started (their
    own sessions, PID namespaces), and wait until each has died or ``timeout_s`` passed."""
    tree = [pid, *descendants(pid)] if running(pid) else [pid]
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    reap()
    wait_gone(tree, timeout_s)


def wait_gone(pids: list[int], timeout_s: float = 10.0) -> None:
    """Wait until none of ``pids`` is running (killed processes die a moment later: a PID namespace's own with its
    first), or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)


def kill_orphans(variable: str, value: str, exclude: set[int]) -> None:
    """As a subreaper: kill the orphans re-parented to us whose environment has ``variable=value`` (the
    marker of one child), other than ``exclude`` (our live children), until none is left."""
    token = f"{variable}={value}".encode()
    for _ in range(50):
        found = []
        for pid in children(os.getpid()):
            if pid in exclude:
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if token in f.read().split(b"\0"):
                        found.append(pid)
            except OSError:
                continue
        if not found:
            return
        kill_and_reap(found)


def kill_all_others(timeout_s: float = 10.0) -> int:
    """As PID 1 of a container: SIGKILL every other process (``kill(-1)`` spares only us) and reap them,
    until /proc shows none. Returns the rounds it took."""
    deadline = time.monotonic() + timeout_s
    rounds = 0
    while time.monotonic() < deadline:
        rounds += 1
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                break
        if not [p for p in os.listdir("/proc") if p.isdigit() and p != "1"]:
            break
        time.sleep(0.01)
    return rounds
