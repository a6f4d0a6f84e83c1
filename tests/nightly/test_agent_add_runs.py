""""Add runs" on an unsure cell, end to end (issue 44, Perfherder's retrigger):
`iowatch serve` on a scratch store, a maintainer logged in, `iowatch agent`
with the recorded boots (iowatch.agent.hosts.RecordedHost, as in test_agent.py:
the e2e check's real guest bundles relabelled as lab host lab-a's runs).

A series' patch 1 (a harmless xfs comment) was measured on lab-a against its
base with two repetitions a kernel: the writer's cell is unsure (its 279 KiB/s
outlier). The maintainer presses "add runs" on the overview; lab-b's agent
(bound to lab-b only) leaves the job alone; lab-a's agent claims it, boots the
base and the patch and runs that cell again, uploads; the same stored
comparison is judged again with the new runs in its sides: 7 samples a side
instead of 2, and the cell is decided: no change."""
from __future__ import annotations

import http.cookiejar
import json
import re
import shutil
import sys
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from iowatch import bundle

sys.path.insert(0, str(Path(__file__).parent.parent))
from nightly.test_agent import INVENTORY  # noqa: E402  lab-a and lab-b, a disk of class hdd each
from live_server import (create_agent, get_json, iowatch_cli, manage, running_server,  # noqa: E402
                         scratch_database, wait_verdict)

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "e2e-check"
FAST, HARMLESS = (FIXTURES / f"guest-0{i}" / "bundle" for i in (0, 1))
WRITER = ("odirect-vs-readers", "writer", "write.bw_kib_s")


# What the test reads from the store: the comparison of patch 2 with its parent
# and its writer cell (no API lists stored comparisons).
STORED = """
import json
from iowatch_web.regressions.models import StoredVerdict
v = StoredVerdict.objects.select_related("comparison").get(
    comparison__reason="parent", study__slug="{0}", group="{1}", metric_id="{2}")
c = v.comparison
print(json.dumps({{"verdict": v.pk, "comparison": c.pk, "outcome": v.outcome,
                  "base_n": v.base_n, "candidate_n": v.candidate_n, "needs_runs": v.needs_runs,
                  "base_runs": c.base_runs.count(), "candidate_runs": c.candidate_runs.count(), "words": v.words, "base_kernel": c.base_kernel_id, "candidate_kernel": c.candidate_kernel_id}}))
""".format(*WRITER)


def _as_lab_a(src: Path, dst: Path, reps: int | None = None) -> Path:
    """A copy of a recorded bundle as lab-a's run; with reps, only its first ones."""
    shutil.copytree(src, dst)
    doc = bundle.load(dst)
    doc["host"] = {"name": "lab-a", "kind": "bare-metal"}
    doc["run_id"] = str(uuid.uuid4())
    if reps is not None:
        for cell in doc["cells"]:
            for rep in cell["repetitions"][reps:]:
                shutil.rmtree(dst / Path(rep["artifacts"][0]["path"]).parent)
            cell["repetitions"] = cell["repetitions"][:reps]
    bundle.write_manifest(dst, doc)
    return dst


def _stored(env: dict) -> dict:
    return json.loads(manage(env, "shell", "-c", STORED).strip().splitlines()[-1])


def _logged_in(env: dict, url: str) -> urllib.request.OpenerDirector:
    manage(env, "shell", "-c", "from django.contrib.auth import get_user_model; "
           "get_user_model().objects.create_user('maintainer', password='add-runs-please')")
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(f"{url}/accounts/login/").read()
    csrf = next(c.value for c in jar if c.name == "csrftoken")
    form = urllib.parse.urlencode({"username": "maintainer", "password": "add-runs-please",
                                   "csrfmiddlewaretoken": csrf}).encode()
    opener.open(urllib.request.Request(f"{url}/accounts/login/", data=form,
                                       headers={"Referer": f"{url}/accounts/login/"})).read()
    assert any(c.name == "sessionid" for c in jar), "the login did not take"
    return opener


def _press_add_runs(opener, url: str, verdict: int) -> str:
    """The overview's "add runs" button of the cell, as a browser sends it."""
    page = opener.open(f"{url}/").read().decode()
    form = re.search(rf'<form method="post" action="(/cells/{verdict}/add-runs)" class="add-runs[^"]*">'
                     r'<input type="hidden" name="csrfmiddlewaretoken" value="([^"]+)">', page)
    assert form, "the unsure cell has no add-runs button on the overview: " + page[page.find("id=\"unsure\""):][:3000]
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": form.group(2)}).encode()
    with opener.open(urllib.request.Request(f"{url}{form.group(1)}", data=body,
                                            headers={"Referer": f"{url}/"})) as r:
        return r.read().decode()


def _agent(url: str, token: str, tmp: Path, host: str, replay: Path):
    (tmp / "inventory.yml").write_text(INVENTORY)
    return iowatch_cli("agent", "--host", host, "--server", url, "--token", token, "--once",
                       "--inventory", str(tmp / "inventory.yml"), "--replay", str(replay),
                       "--variants", str(tmp / "variants.json"), "--out", str(tmp / f"agent-{host}"))


def _recorded_lab(tmp: Path, configs: dict[int, str] | None = None) -> tuple[dict, Path]:
    """Two repetitions a kernel uploaded at first (the writer's cell is unsure
    at 2 vs 2); the full recordings are what lab-a's boots of the two commits give,
    built here with the recorded kernels' configs (configs: {index: another
    config hash} for a build of another config)."""
    first = {"parent": _as_lab_a(FAST, tmp / "first-parent", reps=2),
             "patch": _as_lab_a(HARMLESS, tmp / "first-patch", reps=2)}
    rows, replay = [], tmp / "replay-a"
    for i, src in enumerate((FAST, HARMLESS)):
        kernel = bundle.load(src)["kernel"]
        rows.append({"index": i, "commit": kernel["git_commit"], "subject": None, "status": "built",
                     "artifacts": str(tmp / "artifacts" / f"{i:02d}"),
                     "config_hash": (configs or {}).get(i, kernel["config_hash"])})
        _as_lab_a(src, replay / kernel["git_commit"] / "r1")
    (tmp / "variants.json").write_text(json.dumps(rows))
    return first, replay


def _uploaded(first: dict, env: dict, url: str, token: str, tmp: Path) -> dict:
    """The first runs uploaded as lab-a's and judged: the stored writer cell."""
    for path in first.values():
        up = iowatch_cli("upload", str(path), "--server", url, "--token", token, "--spool", str(tmp / "spool"))
        assert up.returncode == 0, up.stdout + up.stderr
        wait_verdict(url, bundle.load(path)["run_id"])
    return _stored(env)


def test_add_runs_is_worked_by_the_cells_host_and_the_comparison_is_judged_again(tmp_path):
    first, replay = _recorded_lab(tmp_path)
    with scratch_database() as env:
        token_a = create_agent(env, "agent-a", "lab-a")
        token_b = create_agent(env, "agent-b", "lab-b")
        with running_server(env) as (url, _):
            before = _uploaded(first, env, url, token_a, tmp_path)
            page = urllib.request.urlopen(f"{url}/").read().decode()
            assert "<td>writer write.bw_kib_s</td>" in page[page.index('id="unsure"'):]
            assert before["outcome"] in ("inconclusive", "suspected"), json.dumps(before)
            assert (before["base_n"], before["candidate_n"]) == (2, 2)

            maintainer = _logged_in(env, url)
            said = _press_add_runs(maintainer, url, before["verdict"])
            assert re.search(r"add-runs #\d+ queued: \d+ more runs a side on lab-a", said), said
            (job,) = get_json(f"{url}/api/v1/confirmations?state=queued")["items"]
            assert (job["purpose"], job["host"], job["comparison"]) == ("add-runs", "lab-a",
                                                                        before["comparison"])
            assert job["matrix"] == "e2e"  # the comparison's: the new runs pool with its own

            # lab-b's agent may not work lab-a's job: nothing for it, and the job stays queued.
            b = _agent(url, token_b, tmp_path, "lab-b", tmp_path / "replay-b")
            assert b.returncode == 0 and "agent: idle" in b.stdout, b.stdout + b.stderr
            assert get_json(f"{url}/api/v1/confirmations/{job['id']}")["state"] == "queued"

            a = _agent(url, token_a, tmp_path, "lab-a", replay)
            assert a.returncode == 0, a.stdout + a.stderr
            assert f"add-runs #{job['id']}" in a.stdout, a.stdout
            done = get_json(f"{url}/api/v1/confirmations/{job['id']}")
            assert done["state"] == "done" and done["agent_host"] == "lab-a", done
            assert len(done["good_runs"]) == len(done["bad_runs"]) == 1
            for run_id in done["good_runs"] + done["bad_runs"]:
                wait_verdict(url, run_id)

            after = _stored(env)
            # The same comparison, its sides grown by the new runs, and now decided.
            assert after["comparison"] == before["comparison"], (before, after)
            assert (after["base_runs"], after["candidate_runs"]) == (2, 2)
            assert (after["base_n"], after["candidate_n"]) == (7, 7)
            assert after["outcome"] == "no-change", json.dumps(after)
            # The job says so, and so does the agent.
            (row,) = done["verdicts"]
            assert (row["outcome"], row["base_n"], row["candidate_n"]) == ("no-change", 7, 7)
            assert "writer write.bw_kib_s" in a.stdout and "no-change (n 7 vs 7)" in a.stdout, a.stdout
            # The overview no longer offers it as unsure, and the compare page says 7 vs 7.
            page = maintainer.open(f"{url}/").read().decode()
            unsure = page[page.index('id="unsure"'):][:6000].split("</table>")[0]
            assert "<td>writer write.bw_kib_s</td>" not in unsure, unsure
            assert get_json(f"{url}/api/v1/regressions?limit=100")["items"] == []
            compare = urllib.request.urlopen(
                f"{url}/compare?base=kernel:{after['base_kernel']}&candidate=kernel:"
                f"{after['candidate_kernel']}").read().decode()
            assert "[7 vs 7 runs]" in compare and "[2 vs 2 runs]" not in compare


def test_add_runs_refuses_a_build_of_another_config_before_its_first_boot(tmp_path):
    """The comparison's patch kernel was built with one config; lab-a's agent
    builds that commit with another (its fragments changed). Its runs would be
    another kernel, refused at the end after every boot: the job fails before
    the first boot, naming the side and both configs, and nothing is uploaded."""
    other = "0" * 64
    first, replay = _recorded_lab(tmp_path, configs={1: other})
    with scratch_database() as env:
        token_a = create_agent(env, "agent-a", "lab-a")
        with running_server(env) as (url, _):
            before = _uploaded(first, env, url, token_a, tmp_path)
            said = _press_add_runs(_logged_in(env, url), url, before["verdict"])
            assert "queued" in said, said
            (job,) = get_json(f"{url}/api/v1/confirmations?state=queued")["items"]
            recorded = bundle.load(HARMLESS)["kernel"]["config_hash"]
            assert job["bad"]["config_hash"] == recorded, job
            a = _agent(url, token_a, tmp_path, "lab-a", replay)
            out = a.stdout + a.stderr
            done = get_json(f"{url}/api/v1/confirmations/{job['id']}")
            assert done["state"] == "failed", (done, out)
            assert (done["good_runs"], done["bad_runs"]) == ([], []), done
            assert f"builds here with config sha256 {other[:12]}" in done["error"], done["error"]
            assert f"the comparison's runs were of config {recorded[:12]}" in done["error"], done["error"]
            assert "the bad kernel" in done["error"] and "--fragment" in done["error"], done["error"]
            assert not list((tmp_path / "agent-lab-a").glob("confirm-*/*")), "a kernel was booted"
            assert _stored(env)["base_n"] == 2, "the comparison changed"
