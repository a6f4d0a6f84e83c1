"""The web image and the compose stack install the wheel, offline: there is no
Docker engine here, so the Dockerfile is read with dockerfile-parse (the parser
Red Hat's OSBS builds with) and the compose file as `docker-compose config`
renders it. What a build would prove about the wheel itself (its package data,
a fresh virtualenv, the commands from another directory) tests/packaging/test_wheel.py runs."""
from __future__ import annotations

import importlib.util
import shlex
import subprocess

import pytest
import yaml
from dockerfile_parse import DockerfileParser

from ansible_env import REPO, tool

DOCKERFILE = REPO / "docker" / "web" / "Dockerfile"
VENDOR = "webapp/iowatch_web/dashboard/static/dashboard/vendor/chart.umd.js"


def _stages() -> list[list[dict]]:
    """The Dockerfile's instructions, one list per FROM (line continuations joined)."""
    stages: list[list[dict]] = []
    for ins in DockerfileParser(path=str(DOCKERFILE)).structure:
        if ins["instruction"] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(ins)
    return stages


def _args(stage, instruction) -> list[str]:
    return [i["value"] for i in stage if i["instruction"] == instruction]


def test_the_image_is_built_from_the_wheel_with_chart_js_and_no_source_in_the_runtime():
    stages = _stages()
    assert len(stages) >= 2, f"{DOCKERFILE}: one stage; the wheel must be built in a stage of its own"
    builder = next((s for s in stages if any("pip wheel" in r for r in _args(s, "RUN"))), None)
    assert builder is not None, f"{DOCKERFILE}: no stage runs `pip wheel`"
    copies = _args(builder, "COPY")
    assert any(c.startswith("--from=") and c.split()[-1] == VENDOR for c in copies), (
        f"{DOCKERFILE}: the wheel stage does not copy Chart.js to {VENDOR} before `pip wheel`")
    assert any(c.split()[-1] in ("./src", "src", "src/") for c in copies)
    runtime = stages[-1]
    # The runtime copies only the built wheel out of another stage: no source tree.
    for c in _args(runtime, "COPY") + _args(runtime, "ADD"):
        assert c.startswith("--from="), f"{DOCKERFILE}: the runtime stage copies {c!r} from the context"
    installs = [r for r in _args(runtime, "RUN") if "pip install" in r]
    assert installs and ".whl)[server]" in installs[0].replace('"', ""), installs
    assert "iowatch" in " ".join(_args(runtime, "CMD"))


def test_the_dockerfile_names_what_exists():
    text = DOCKERFILE.read_text()
    for module in ("iowatch_web.site.settings", "iowatch_web.site.wsgi"):
        assert module in text
        assert importlib.util.find_spec(module) is not None, f"{module} does not exist"
    for needed in ("package.json", "package-lock.json", "pyproject.toml", "README.md"):
        assert (REPO / needed).is_file()


@pytest.fixture(scope="module")
def compose() -> dict:
    exe = tool("docker-compose", "apt-get install docker-compose (scripts/setup.sh installs it)")
    done = subprocess.run([exe, "-f", str(REPO / "docker-compose.yml"), "config"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)["services"]


def _command(service: dict) -> str:
    cmd = service.get("command") or []
    return cmd if isinstance(cmd, str) else shlex.join(cmd)


def test_compose_migrates_collects_static_then_serves_and_runs_the_worker(compose):
    setup = [name for name, s in compose.items()
             if "manage migrate" in _command(s) and "manage collectstatic" in _command(s)]
    assert setup, "no service runs `iowatch manage migrate` and `collectstatic`"
    web, worker = compose["web"], compose["worker"]
    for name, s in (("web", web), ("worker", worker)):
        assert s["depends_on"][setup[0]]["condition"] == "service_completed_successfully", name
        assert s["environment"]["DJANGO_SETTINGS_MODULE"] == "iowatch_web.site.settings", name
        assert s["image"] == "iowatch-web", name
    assert "iowatch_web.site.wsgi:application" in _command(web)
    assert _command(worker).split()[-2:] == ["manage", "verdict_worker"]
    assert (REPO / "webapp/iowatch_web/regressions/management/commands/verdict_worker.py").is_file()
    assert web["build"]["dockerfile"] == "docker/web/Dockerfile"
    # The image is the installed wheel: nothing mounts the checkout over it.
    for name, s in compose.items():
        for v in s.get("volumes") or []:
            source = v["source"] if isinstance(v, dict) else v.split(":")[0]
            assert not str(source).startswith((str(REPO / "src"), str(REPO / "webapp"))), (name, v)
