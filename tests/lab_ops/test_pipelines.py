"""The Jenkins side, offline: every `iowatch …` command line in the Jenkinsfiles
parses against the real CLI parser (a renamed flag fails here, not in the lab),
the Jenkins Job Builder definitions render, and docker-compose.yml validates."""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from ansible_env import REPO, tool
from iowatch.cli import build_parser

PIPELINES = REPO / "jobs" / "pipelines"
JENKINSFILES = sorted(PIPELINES.glob("*.Jenkinsfile"))
_STOP = {";", "&&", "||", "|", "&", ">", ">>", "<", ">&", "2>", "then", "do"}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}|\$\([^)]*\)|\$([A-Za-z_][A-Za-z0-9_]*)")
# What the pipelines' parameters hold, where the CLI checks the type; any other variable: VALUE.
SAMPLE_VALUES = {"REPS": "5", "REGRESSION_ID": "7"}


def _value(m: re.Match) -> str:
    return SAMPLE_VALUES.get(m.group(1) or m.group(2) or "", "VALUE")


_SCRIPTS = re.compile(r"'''(.*?)'''|\bsh\s+'(?!'')([^'\n]*)'|\bsh\s+\"([^\"\n]*)\"", re.S)


def shell_scripts(text: str) -> list[tuple[int, str]]:
    """(first line, body) of each shell step: every '''...''' block and one-line sh '...'."""
    return [(text.count("\n", 0, m.start()) + 1, next(g for g in m.groups() if g is not None))
            for m in _SCRIPTS.finditer(text)]


def iowatch_commands(path: Path) -> list[tuple[int, list[str]]]:
    """(line, argv after `iowatch`) of every iowatch call in a Jenkinsfile's shell steps."""
    found = []
    for first, script in shell_scripts(path.read_text()):
        lines = script.split("\n")
        for offset, line in enumerate(lines):
            more = offset
            while line.endswith("\\") and more + 1 < len(lines):  # shell line continuations
                more += 1
                line = line[:-1] + " " + lines[more]
            for m in re.finditer(r"(?<![\w/.-])iowatch\s+(?=[a-z-])", line):
                rest = _VAR.sub(_value, line[m.end():])
                lexer = shlex.shlex(rest, posix=True, punctuation_chars=True)
                lexer.whitespace_split = True
                argv = []
                try:
                    for token in lexer:
                        if token in _STOP or token.startswith((">", "<", "2>")):
                            break
                        argv.append(token)
                except ValueError as e:
                    raise ValueError(f"{path.name}:{first + offset}: {e}: {line.strip()}") from None
                found.append((first + offset, argv))
    return found


CALLS = [(f, n, argv) for f in JENKINSFILES for n, argv in iowatch_commands(f)]


def test_the_pipelines_exist_and_call_iowatch():
    assert {f.name for f in JENKINSFILES} == {"series-check.Jenkinsfile", "nightly.Jenkinsfile",
                                            "bisect.Jenkinsfile", "lab-agent.Jenkinsfile"}
    called = {argv[0] for _, _, argv in CALLS}
    assert {"kernel", "run", "upload", "compare", "bisect", "nightly", "agent"} <= called


@pytest.mark.parametrize("name,command", [("nightly", "nightly"), ("bisect", "bisect"),
                                          ("lab-agent", "agent")])
def test_the_nightly_and_bisect_pipelines_leave_the_deciding_to_iowatch(name, command):
    """One iowatch command per stage and no exit-code or JSON juggling in Groovy:
    the package decides (and is tested), the pipeline locks and fans out."""
    path = PIPELINES / f"{name}.Jenkinsfile"
    text = path.read_text()
    assert {argv[0] for n, argv in iowatch_commands(path)} == {command}
    for juggling in ("returnStatus", "readJSON", "readFile", "iowatch compare"):
        assert juggling not in text, f"{path.name} does {juggling} itself"


def parse_problem(where: str, argv: list[str], capsys) -> str | None:
    """Why `iowatch ARGV` of a Jenkinsfile would not run, or None."""
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    if argv[0] not in commands:
        return (f"{where}: `iowatch {argv[0]}` is not a subcommand of iowatch "
                f"(iowatch.cli knows {', '.join(sorted(commands))})")
    try:
        args = parser.parse_args(argv)
    except SystemExit:
        return f"{where}: `iowatch {' '.join(argv)}` does not parse:\n{capsys.readouterr().err}"
    if not getattr(args, "func", None):
        return f"{where}: `iowatch {' '.join(argv)}` runs nothing"
    return None


@pytest.mark.parametrize("path,line,argv", CALLS, ids=[f"{f.stem}:{n}:{a[0]}" for f, n, a in CALLS])
def test_iowatch_command_parses(path, line, argv, capsys):
    problem = parse_problem(f"{path.name}:{line}", argv, capsys)
    if problem:
        pytest.fail(problem)


def test_a_subcommand_iowatch_does_not_have_is_a_failure(tmp_path, capsys):
    f = tmp_path / "x.Jenkinsfile"
    f.write_text("sh 'iowatch nosuch --server \"$IOWATCH_SERVER\"'\nsh 'iowatch nightly --bogus'\n")
    (line1, nosuch), (line2, bogus) = iowatch_commands(f)
    assert "`iowatch nosuch` is not a subcommand of iowatch" in parse_problem(f"x:{line1}", nosuch, capsys)
    assert "does not parse" in parse_problem(f"x:{line2}", bogus, capsys)


def test_the_extractor_sees_through_shell(tmp_path):
    f = tmp_path / "x.Jenkinsfile"
    f.write_text("string(description: 'what iowatch kernel build makes')\n"
                 "sh '''\n  sudo iowatch run \"$MATRIX\" --target \"${HOST}\" \\\n   --reps 5 > out 2>&1\n"
                 "  iowatch upload a b && echo done\n'''\nsh 'iowatch device check h \"$P\"'\n")
    assert iowatch_commands(f) == [(3, ["run", "VALUE", "--target", "VALUE", "--reps", "5"]),
                                   (5, ["upload", "a", "b"]), (7, ["device", "check", "h", "VALUE"])]


def test_jenkins_job_builder_renders_the_jobs(tmp_path):
    jjb = tool("jenkins-jobs", "pip install -e '.[dev]' (jenkins-job-builder is in the dev extra)")
    done = subprocess.run([jjb, "test", str(PIPELINES / "jjb"), "-o", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    jobs = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert set(jobs) == {"iowatch-series-check", "iowatch-nightly", "iowatch-bisect",
                         "iowatch-lab-agent"}
    for name, xml in jobs.items():
        script = re.search(r"<scriptPath>(.*)</scriptPath>", xml).group(1)
        assert (REPO / script).is_file(), f"{name} points at {script}, which does not exist"
        assert "CpsScmFlowDefinition" in xml


def test_docker_compose_file_validates():
    compose = tool("docker-compose", "apt-get install docker-compose (scripts/setup.sh installs it)")
    done = subprocess.run([compose, "-f", str(REPO / "docker-compose.yml"), "config", "-q"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    config = subprocess.run([compose, "-f", str(REPO / "docker-compose.yml"), "config"],
                            capture_output=True, text=True, cwd=REPO, timeout=60).stdout
    for service in ("db:", "web:", "jenkins:"):
        assert f"\n  {service}" in config
    assert "/api/v1/health" in config and "service_healthy" in config
