"""The uploader against a real `iowatch serve`: a bundle the server keeps failing
on is set aside while the others arrive, a busy server is waited for as it asks,
a refused or damaged bundle is named and nothing of it is stored, and what
`iowatch upload` prints is true for each bundle."""
from __future__ import annotations

import email.utils
import json
import random
import subprocess
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from iowatch import bundle, upload as up
from live_server import IOWATCH, create_agent, get_json, running_server, scratch_database
from test_upload import make_bundle

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server():
    """(URL, token) of a real server on a scratch database, shared by this module."""
    with scratch_database() as env:
        token = create_agent(env, "lab-robust")
        with running_server(env) as (url, _):
            yield url, token


# Django's own page for an unhandled error (DEBUG off).
DJANGO_500 = (b'<!doctype html>\n<html lang="en">\n<head>\n  <title>Server Error (500)</title>\n'
              b'</head>\n<body>\n  <h1>Server Error (500)</h1><p></p>\n</body>\n</html>\n')


class Proxy:
    """An in-process HTTP server in front of the real one, for the answers the
    real server cannot be made to give on demand: a 500 for one run id every
    time, 503/429 with Retry-After, and a sick server (500 for every bundle,
    503 from its health check, as when its database is down). Everything else
    passes through."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.poison: set[str] = set()
        self.busy: list[tuple[int, dict]] = []  # (status, headers) for the next POSTs
        self.posted: list[str] = []              # run id of every POST that reached the proxy
        self.sick = False
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if proxy.sick and self.path == "/api/v1/health":
                    return proxy.answer(self, 503, {}, b'{"status": "error"}')
                proxy.forward(self, None)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                run_id = json.loads(body).get("run_id", "?")
                proxy.posted.append(run_id)
                if run_id in proxy.poison or proxy.sick:
                    return proxy.answer(self, 500, {"Content-Type": "text/html"}, DJANGO_500)
                if proxy.busy:
                    status, headers = proxy.busy.pop(0)
                    return proxy.answer(self, status, headers, b'{"error": "busy"}')
                proxy.forward(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @staticmethod
    def answer(handler, status: int, headers: dict, body: bytes) -> None:
        handler.send_response(status)
        for k, v in {"Content-Length": str(len(body)), **headers}.items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(body)

    def forward(self, handler, body: bytes | None) -> None:
        headers = {k: handler.headers[k] for k in ("Content-Type", "Authorization")
                   if handler.headers[k]}
        req = urllib.request.Request(self.upstream + handler.path, data=body, headers=headers,
                                     method=handler.command)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, reply = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, reply = e.code, e.read()
        self.answer(handler, status, {"Content-Type": "application/json"}, reply)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def proxy(server):
    p = Proxy(server[0])
    yield p
    p.close()


def cli(url, token, spool, *args):
    return subprocess.run([IOWATCH, "upload", *map(str, args), "--server", url, f"--token={token}",
                           "--spool", str(spool), "--backoff", "0.01"],
                          capture_output=True, text=True, timeout=300)


def printed(out: subprocess.CompletedProcess) -> dict[str, tuple[str, str]]:
    """{run id: (state, detail)} from the `state: run ID: detail` lines."""
    lines = {}
    for line in (out.stdout + out.stderr).splitlines():
        state, sep, rest = line.partition(": run ")
        if sep:
            run_id, _, detail = rest.partition(": ")
            lines[run_id] = (state, detail)
    return lines


def stored(url: str, run_id: str) -> bool:
    try:
        return get_json(f"{url}/api/v1/runs/{run_id}")["run_id"] == run_id
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return False
        raise


def bundles(tmp_path, n: int) -> list[tuple[str, object]]:
    """n fresh bundle directories as (run id, path), the first one oldest."""
    out = []
    for i in range(n):
        path = tmp_path / f"b{i}"
        out.append((make_bundle(path, n_samples=3 + i), path))
    return out


def test_a_bundle_the_server_keeps_failing_on_is_quarantined_across_calls_and_the_others_arrive(
        server, proxy, tmp_path):
    url, token = server
    spool = tmp_path / "spool"
    (poison, poison_dir), (good1, dir1), (good2, dir2) = bundles(tmp_path, 3)
    proxy.poison.add(poison)

    # One try a call, so the count must survive from one process to the next.
    first = cli(proxy.url, token, spool, poison_dir, dir1, dir2, "--retries", "0",
                "--quarantine-after", "2")
    assert first.returncode == 1, first.stderr
    lines = printed(first)
    assert lines[poison][0] == "kept" and "failure 1 of 2" in lines[poison][1]
    assert "(500: Server Error (500) Server Error (500))" in lines[poison][1]
    assert lines[good1][0] == lines[good2][0] == "sent"
    assert stored(url, good1) and stored(url, good2) and not stored(url, poison)
    assert "1 kept" in first.stderr and "2 sent" in first.stderr

    second = cli(proxy.url, token, spool, "--retries", "0", "--quarantine-after", "2")
    assert second.returncode == 1
    assert printed(second) == {poison: ("quarantined", printed(second)[poison][1])}
    assert "failed on it 2 times" in printed(second)[poison][1]
    assert (spool / "quarantine" / f"{poison}.json").is_file()
    reasons = (spool / "quarantine" / f"{poison}.reason").read_text().splitlines()
    assert len(reasons) == 2 and all("500" in r for r in reasons)
    assert not list(spool.glob("*.json"))
    assert proxy.posted.count(poison) == 2

    # Quarantined bundles wait for the operator, and say so.
    idle = cli(proxy.url, token, spool)
    assert idle.returncode == 0 and "nothing to send" in idle.stdout
    assert "--retry-quarantined" in idle.stdout and proxy.posted.count(poison) == 2

    proxy.poison.clear()  # the server is fixed
    released = cli(proxy.url, token, spool, "--retry-quarantined")
    assert released.returncode == 0, released.stderr
    assert printed(released) == {poison: ("sent", "1 cells, 3 samples")}
    assert stored(url, poison) and not list((spool / "quarantine").glob("*.json"))


def test_in_one_call_a_poison_bundle_is_set_aside_after_its_tries_and_the_rest_goes_on(
        server, proxy, tmp_path):
    url, token = server
    spool = up.Spool(tmp_path / "spool")
    (poison, poison_dir), (good, good_dir) = bundles(tmp_path, 2)
    proxy.poison.add(poison)
    sleeps: list[float] = []
    outcomes = up.upload([str(poison_dir), str(good_dir)], proxy.url, token, spool,
                         retries=5, backoff=1.0, sleep=sleeps.append, rng=random.Random(7))
    assert [(o.run_id, o.state) for o in outcomes] == [(poison, "quarantined"), (good, "sent")]
    assert proxy.posted.count(poison) == up.QUARANTINE_AFTER
    # Two waits between three tries: the backoff's upper half, 1 s then 2 s at most.
    assert len(sleeps) == 2 and 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0
    assert stored(url, good) and not stored(url, poison)


def test_a_server_failing_on_everything_and_its_health_check_quarantines_nothing(
        server, proxy, tmp_path):
    url, token = server
    spool = up.Spool(tmp_path / "spool")
    (first, dir1), (second, dir2) = bundles(tmp_path, 2)
    proxy.sick = True
    sleeps: list[float] = []
    outcomes = up.upload([str(dir1), str(dir2)], proxy.url, token, spool, retries=4,
                         sleep=sleeps.append, rng=random.Random(5))
    assert [(o.run_id, o.state) for o in outcomes] == [(first, "kept"), (second, "not-tried")]
    assert "fails its health check (500: Server Error (500)" in outcomes[0].detail
    assert proxy.posted == [first] * 5 and len(sleeps) == 4
    # Not the bundle's fault: no failure counted, nothing set aside.
    assert json.loads((spool.root / f"{first}.meta").read_text())["failures"] == []
    assert not spool.quarantine.exists()

    proxy.sick = False
    outcomes = up.upload([], proxy.url, token, spool, sleep=sleeps.append)
    assert [(o.run_id, o.state) for o in outcomes] == [(first, "sent"), (second, "sent")]
    assert stored(url, first) and stored(url, second)


def test_a_busy_server_is_waited_for_as_its_retry_after_asks(server, proxy, tmp_path):
    url, token = server
    (run_id, path), = bundles(tmp_path, 1)
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    proxy.busy = [(503, {"Retry-After": "7"}), (503, {"Retry-After": when}), (429, {})]
    sleeps: list[float] = []
    outcomes = up.upload([str(path)], proxy.url, token, up.Spool(tmp_path / "spool"),
                         retries=5, backoff=1.0, sleep=sleeps.append, rng=random.Random(3))
    assert [(o.run_id, o.state) for o in outcomes] == [(run_id, "sent")]
    assert len(sleeps) == 3
    assert 7.0 <= sleeps[0] <= 7.7          # delay-seconds, plus up to a tenth
    assert 17.0 <= sleeps[1] <= 22.0        # an HTTP-date 20 s ahead (whole seconds)
    assert 2.0 <= sleeps[2] <= 4.0          # no Retry-After: third wait's backoff, 4 s ceiling
    assert stored(url, run_id)


def test_a_server_asking_for_longer_than_the_cap_keeps_everything_for_the_next_call(
        server, proxy, tmp_path):
    url, token = server
    spool = up.Spool(tmp_path / "spool")
    (first, dir1), (second, dir2) = bundles(tmp_path, 2)
    proxy.busy = [(503, {"Retry-After": "3600"})]
    sleeps: list[float] = []
    outcomes = up.upload([str(dir1), str(dir2)], proxy.url, token, spool, sleep=sleeps.append)
    assert [(o.run_id, o.state) for o in outcomes] == [(first, "kept"), (second, "not-tried")]
    assert "asked to wait 3600 s" in outcomes[0].detail and sleeps == []
    assert proxy.posted == [first]
    assert {p.name for p in spool.root.glob("*.json")} == {f"{first}.json", f"{second}.json"}
    assert not stored(url, first) and not stored(url, second)


def test_backoff_and_retry_after_jitter_stay_within_bounds():
    rng = random.Random(11)
    for attempt in range(1, 12):
        ceiling = min(2.0 * 2 ** (attempt - 1), up.MAX_DELAY_S)
        draws = [up.backoff_delay(attempt, 2.0, rng) for _ in range(200)]
        assert all(ceiling / 2 <= d <= ceiling for d in draws)
        assert max(draws) - min(draws) > ceiling / 4  # spread, not one value
    draws = [up.retry_after_delay(30.0, rng) for _ in range(200)]
    assert all(30.0 <= d <= 33.0 for d in draws) and len(set(draws)) > 1
    assert up.retry_after_s("120") == 120.0
    assert up.retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert up.retry_after_s("soon") is None and up.retry_after_s(None) is None


def test_a_body_altered_after_to_wire_is_refused_by_the_server_naming_the_artifact(
        server, tmp_path):
    url, token = server
    spool = up.Spool(tmp_path / "spool")
    (run_id, path), = bundles(tmp_path, 1)
    doc = json.loads(bundle.to_wire(path))
    art = doc["cells"][0]["repetitions"][0]["artifacts"][0]
    art["content"] = art["content"][: len(art["content"]) // 2]
    spool.put(run_id, json.dumps(doc).encode(), url)

    out = cli(url, token, spool.root)
    assert out.returncode == 1
    state, detail = printed(out)[run_id]
    assert state == "rejected" and detail.startswith("the server refused it (400: ")
    assert "artifact 'fio.json' of repetition 1" in detail and art["sha256"] in detail
    reason = (spool.rejected / f"{run_id}.reason").read_text()
    assert "artifact 'fio.json'" in reason and "repetitions[0].artifacts[0].sha256" in reason
    assert json.loads((spool.rejected / f"{run_id}.json").read_bytes()) == doc
    assert not stored(url, run_id) and not list(spool.root.glob("*.json"))


def test_a_run_id_reused_by_another_bundle_is_rejected_with_the_servers_reason(server, tmp_path):
    url, token = server
    spool = tmp_path / "spool"
    (run_id, path), = bundles(tmp_path, 1)
    assert cli(url, token, spool, path).returncode == 0
    # Same run id, other samples: the server's 409.
    other = tmp_path / "other"
    make_bundle(other, n_samples=9)
    manifest = json.loads((other / "bundle.json").read_text())
    manifest["run_id"] = run_id
    (other / "bundle.json").write_text(json.dumps(manifest))

    out = cli(url, token, spool, other)
    assert out.returncode == 1
    assert printed(out)[run_id][0] == "rejected"
    assert "409" in printed(out)[run_id][1] and "different bundle" in printed(out)[run_id][1]
    assert "already stored from a different bundle" in (spool / "rejected" / f"{run_id}.reason").read_text()
    cells = get_json(f"{url}/api/v1/runs/{run_id}/cells")
    cells = cells["items"] if isinstance(cells, dict) else cells
    samples = get_json(f"{url}/api/v1/cells/{cells[0]['id']}/samples")
    assert len(samples["items"] if isinstance(samples, dict) else samples) == 3


def test_a_damaged_raw_file_is_refused_before_sending_and_the_other_bundles_go(server, tmp_path):
    url, token = server
    spool = tmp_path / "spool"
    (damaged, damaged_dir), (good, good_dir) = bundles(tmp_path, 2)
    raw = damaged_dir / "cells/ext4/loop-ssd/seqw/rep-1/fio.json"
    raw.write_bytes(raw.read_bytes()[: raw.stat().st_size // 2])

    out = cli(url, token, spool, damaged_dir, good_dir)
    assert out.returncode == 2
    lines = printed(out)
    assert lines[good][0] == "sent" and lines[damaged][0] == "refused-locally"
    detail = lines[damaged][1]
    assert str(damaged_dir) in detail and "cell 'ext4/loop-ssd/seqw' repetition 1" in detail
    assert "artifact 'fio.json'" in detail and "Re-run" in detail
    assert "1 sent, 1 refused-locally" in out.stderr
    assert stored(url, good) and not stored(url, damaged)
    assert not list(spool.rglob(f"{damaged}.*"))


def test_a_refused_token_keeps_everything_and_says_which_were_not_tried(server, tmp_path):
    url, _ = server
    spool = tmp_path / "spool"
    (first, dir1), (second, dir2) = bundles(tmp_path, 2)
    out = cli(url, "not-a-token", spool, dir1, dir2)
    assert out.returncode == 1
    lines = printed(out)
    assert lines[first][0] == "kept" and "the token was refused (401" in lines[first][1]
    assert lines[second][0] == "not-tried" and f"while sending run {first}, the token" in lines[second][1]
    assert "kept 2 bundle(s)" in out.stderr
    assert {p.name for p in spool.glob("*.json")} == {f"{first}.json", f"{second}.json"}
