"""``compose.yaml`` (and its CPU override) validate with docker-compose, and say what the deployment needs."""

from __future__ import annotations

import os
import shutil
import subprocess

import yaml

from tests.server.pieces import ROOT
from tests.support import need

ENV = {"POSTGRES_PASSWORD": "pw", "SECRET_KEY": "sk", "RUNNER_TOKEN": "msr_x"}


def _config(*files: str, env: dict[str, str] = ENV) -> subprocess.CompletedProcess:
    need(shutil.which("docker-compose") is not None, "docker-compose is not installed (apt-get install docker-compose)")
    args = ["docker-compose"] + [a for f in files for a in ("-f", f)] + ["config"]
    clean = {k: v for k, v in os.environ.items() if k not in ENV}
    return subprocess.run(args, cwd=ROOT, env={**clean, **env}, capture_output=True, text=True)


def test_compose_yaml_validates_with_a_gpu_runner_postgresql_and_the_site():
    r = _config("compose.yaml")
    assert r.returncode == 0, r.stderr
    cfg = yaml.safe_load(r.stdout)["services"]
    assert set(cfg) == {"db", "site", "runner"}
    assert cfg["site"]["environment"]["DATABASE_URL"] == "postgresql://practice:pw@db:5432/practice"
    assert "gunicorn" not in str(cfg["site"].get("command", ""))  # the image's default command serves it
    devices = cfg["runner"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}] or \
        devices[0]["driver"] == "nvidia" and devices[0]["capabilities"] == ["gpu"]
    volumes = str(cfg["runner"]["volumes"])
    assert "/var/run/docker.sock" in volumes and "/var/lib/minisgl-runner" in volumes
    assert "--executor" in cfg["runner"]["command"] and "docker" in cfg["runner"]["command"]


def test_the_cpu_override_validates_and_drops_the_gpu_reservation():
    r = _config("compose.yaml", "compose.cpu.yaml")
    assert r.returncode == 0, r.stderr
    cfg = yaml.safe_load(r.stdout)["services"]
    assert "runner-cpu" in cfg and "deploy" not in cfg["runner-cpu"] and "--emulate-gpu" in cfg["runner-cpu"]["command"]


def test_missing_secrets_are_named():
    r = _config("compose.yaml", env={})
    assert r.returncode != 0 and "POSTGRES_PASSWORD" in r.stderr
