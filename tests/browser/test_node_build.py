"""The browser assets: verified before they are served, content-addressed, incremental; and how the site serves them."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.browser import judge_browser
from tests.browser.judge_browser import REPO, TOY, browser_build
from web import create_app


@pytest.fixture(scope="module")
def site():
    return judge_browser.site()


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_manifest_names_every_served_file_with_its_hash(site):
    m = json.loads((site / "manifest.json").read_text())
    served = {str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()} - {"manifest.json"}
    assert served == set(m["files"]), "the manifest lists exactly the served files"
    for rel, f in m["files"].items():
        assert sha(site / rel) == f["sha256"] and (site / rel).stat().st_size == f["size"], rel
    assert m["pyodide"] == "0.27.7"
    for name in ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"):
        assert m["indexURL"] + name in m["files"]
    assert {"numpy", "minisgl", "judge"} <= set(m["packages"])


def test_the_lock_is_the_official_one_plus_our_wheels(site):
    m = json.loads((site / "manifest.json").read_text())
    lock = json.loads((site / m["lockFileURL"]).read_text())
    official = json.loads((browser_build.cache_dir() / "npm/node_modules/pyodide/pyodide-lock.json").read_text())
    assert lock["info"] == official["info"]
    for name in ("numpy", "micropip", "packaging"):
        assert lock["packages"][name] == official["packages"][name], "official entries unchanged"
    for name in m["packages"]:
        entry = lock["packages"][name]
        wheel = site / m["indexURL"] / entry["file_name"]
        assert wheel.is_file() and sha(wheel) == entry["sha256"], f"{name}: the lock's sha256 is the served wheel's"
        assert entry["file_name"].endswith("-py3-none-any.whl") or name == "numpy"


def test_a_rebuild_with_nothing_changed_runs_nothing_and_is_identical(site, monkeypatch):
    """Nothing changed: no pip, npm or pyodide-build command runs, no served file is rewritten."""
    before = (site / "manifest.json").read_text()
    stamps = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    commands = []
    monkeypatch.setattr(browser_build, "run", lambda cmd, what, **kw: commands.append(what))
    browser_build.build(quiet=True)
    assert commands == []
    assert (site / "manifest.json").read_text() == before
    assert {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()} == stamps


def test_a_changed_input_gets_new_urls_and_the_runtime_keeps_its_own(toy_site, tmp_path):
    ex = tmp_path / "exercises"
    shutil.copytree(TOY / "exercises", ex)
    out = tmp_path / "site"
    a = json.loads(browser_build.build(out, ex, [TOY / "toyengine"], quiet=True).read_text())
    with open(ex / "toy-counter" / "statement.md", "a") as f:
        f.write("\nOne more line.\n")
    b = json.loads(browser_build.build(out, ex, [TOY / "toyengine"], quiet=True).read_text())
    assert a["data"]["url"] != b["data"]["url"], "new data, new URL (old caches can never serve it)"
    assert a["indexURL"] == b["indexURL"] and a["lockFileURL"] == b["lockFileURL"]
    assert not (out / a["data"]["url"]).exists(), "the old build's file was pruned"
    assert set(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == set(b["files"]) | {
        "manifest.json"}


def _cache_copy(tmp_path: Path) -> Path:
    """A cache with the verified runtime (npm package and the three wheels), to be tampered with."""
    src = browser_build.cache_dir()
    cache = tmp_path / "cache"
    shutil.copytree(src / "npm", cache / "npm", symlinks=True)
    shutil.copytree(src / "pip" / "wheels", cache / "pip" / "wheels")
    return cache


@pytest.mark.parametrize("victim", ["pip/wheels/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl",
                                    "npm/node_modules/pyodide/pyodide.asm.wasm"])
def test_a_mismatched_file_stops_the_build_naming_it_and_both_hashes(site, tmp_path, monkeypatch, victim):
    cache = _cache_copy(tmp_path)
    path = cache / victim
    want = sha(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    monkeypatch.setenv("MINISGL_BROWSER_CACHE", str(cache))
    with pytest.raises(browser_build.BuildError) as e:
        browser_build.build(tmp_path / "site", quiet=True)
    text = str(e.value)
    assert path.name in text and want in text and sha(path) in text and "mismatch" in text
    assert not (tmp_path / "site" / "manifest.json").exists(), "nothing is served"


def test_a_missing_file_stops_the_build(site, tmp_path, monkeypatch):
    cache = _cache_copy(tmp_path)
    (cache / "npm/node_modules/pyodide/python_stdlib.zip").unlink()
    monkeypatch.setenv("MINISGL_BROWSER_CACHE", str(cache))
    with pytest.raises(browser_build.BuildError, match=r"python_stdlib\.zip: missing .*expected sha256 [0-9a-f]{64}"):
        browser_build.build(tmp_path / "site", quiet=True)


def test_the_site_serves_assets_with_their_types_and_cache_headers(site):
    m = json.loads((site / "manifest.json").read_text())
    client = create_app({"BROWSER_SITE": str(site)}).test_client()
    r = client.get("/judge/assets/manifest.json")
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-cache" and r.json["build"] == m["build"]
    assert r.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert r.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    types = {".wasm": "application/wasm", ".mjs": "text/javascript", ".whl": "application/zip",
             ".zip": "application/zip", ".json": "application/json", ".js": "text/javascript"}
    for rel in m["files"]:
        r = client.get(f"/judge/assets/{rel}")
        assert r.status_code == 200, rel
        assert r.mimetype == types[Path(rel).suffix], rel
        assert r.headers["Cache-Control"] == "public, max-age=31536000, immutable", rel
        assert hashlib.sha256(r.data).hexdigest() == m["files"][rel]["sha256"]
        r.close()
    for name in ("client.mjs", "supervisor.mjs", "worker.mjs", "core.mjs"):
        r = client.get(f"/judge/js/{name}")
        assert r.status_code == 200 and r.mimetype == "text/javascript" and r.headers["Cache-Control"] == "no-cache"
        assert r.data == (REPO / "browser/js" / name).read_bytes()
    assert client.get("/judge/js/node-runner.mjs").status_code == 404, "only what a page loads"
    assert client.get("/judge/assets/../../pyproject.toml").status_code == 404
    assert client.get("/judge/").status_code == 200


def test_the_site_says_when_the_assets_are_not_built(tmp_path):
    client = create_app({"BROWSER_SITE": str(tmp_path / "nothing")}).test_client()
    r = client.get("/judge/assets/manifest.json")
    assert r.status_code == 503 and "make browser" in r.json["error"]
