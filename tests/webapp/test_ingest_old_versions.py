"""A lab whose agents are a bundle version behind keeps uploading to a newer server.

A live `iowatch serve` on a scratch database takes the e2e check's bundles,
which version 1 runners wrote (tests/fixtures/e2e-check), through the real
`iowatch upload`; the run reads back through the API as the same samples, and
a version the server does not know is refused naming it."""
from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from iowatch import bundle, upload
from iowatch.side_sources import manifest_from_api
from live_server import IOWATCH, create_agent, running_server, scratch_database

pytestmark = pytest.mark.slow

E2E = Path(__file__).parents[1] / "fixtures" / "e2e-check"


def _samples(doc: dict) -> dict:
    """Per cell id, the (repetition, metric, group, job, value) of every sample."""
    return {c["id"]: Counter((r["index"], s["metric"], s["group"], s.get("job"), s["value"])
                             for r in c["repetitions"] for s in r["samples"])
            for c in doc["cells"]}


def _upload(url: str, token: str, spool: Path, *dirs: Path) -> subprocess.CompletedProcess:
    return subprocess.run([IOWATCH, "upload", *map(str, dirs), "--server", url, f"--token={token}",
                           "--spool", str(spool), "--retries", "1", "--backoff", "0.05"],
                          capture_output=True, text=True, timeout=300)


def test_a_version_1_bundle_is_stored_and_read_back_as_the_current_version(tmp_path):
    old = tmp_path / "guest-02"
    shutil.copytree(E2E / "guest-02" / "bundle", old)
    written = json.loads((old / "bundle.json").read_text())
    assert written["schema_version"] == 1 < bundle.SCHEMA_VERSION

    with scratch_database() as env:
        token = create_agent(env, "lab-behind")
        with running_server(env, args=("--no-worker",)) as (url, _):
            sent = _upload(url, token, tmp_path / "spool", old)
            assert sent.returncode == 0, sent.stderr
            assert sent.stdout.startswith("sent:"), sent.stdout

            back = manifest_from_api(url, written["run_id"])
            assert _samples(back) == _samples(written)
            assert back["kernel"]["series"]["name"] == written["kernel"]["series"]["name"]
            assert back["kernel"]["patch"]["index"] == written["kernel"]["patch"]["index"]

            # The server hashed the bundle as it was sent: the same old bundle
            # sent again is already stored, not a conflict.
            again = _upload(url, token, tmp_path / "spool", old)
            assert again.returncode == 0, again.stderr
            assert again.stdout.startswith("already-stored:"), again.stdout

            newer = json.loads(bundle.to_wire(old))
            newer.update(schema_version=bundle.SCHEMA_VERSION + 1,
                         run_id="00000000-0000-4000-8000-000000000099")
            answer = upload.post(url, token, json.dumps(newer).encode())
            assert answer.status == 400, answer.reply
            assert answer.reply["where"] == "bundle field schema_version"
            assert f"schema_version {bundle.SCHEMA_VERSION + 1} is not supported" in answer.reply["error"]
            assert "reads versions 1 and 2" in answer.reply["error"]
