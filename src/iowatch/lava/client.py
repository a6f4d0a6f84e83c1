"""LAVA's REST API (v0.2, lava-server 2023.01) as iowatch calls it: submit a
job, read its state and health, its test cases and its log, and list a device
type's boards with their state and health.

The shapes are lava_rest_app's serializers (v02/serializers.py: TestJob with
`state` and `health` as their display names, Device with `state` and `health`,
TestCase with `result` as pass/fail/skip/unknown and `metadata` a YAML string;
lists paginated as {count, next, previous, results}); a submission answers
201 {"job_ids": [...]} or 400 {"message": ...}. Authentication is LAVA's
`Authorization: Token <token>` header. Every failure is a LavaError naming
the URL and what LAVA said.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import requests
import yaml

from iowatch.lava.labels import BOARD_LABELS  # noqa: F401  (re-exported: the words of a board's state)

API = "api/v0.2/"
TIMEOUT_S = 60
JOB_FINISHED = "Finished"                 # TestJob.state's display value at the end
HEALTH_COMPLETE, HEALTH_INCOMPLETE, HEALTH_CANCELED = "Complete", "Incomplete", "Canceled"
INFRASTRUCTURE = "Infrastructure"         # the error_type of LAVA's lava/job case on an infrastructure error


class LavaError(RuntimeError):
    """LAVA did not answer or refused: the message names the URL and LAVA's words."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Job:
    id: int
    state: str                  # Submitted, Scheduling, Scheduled, Running, Canceling, Finished
    health: str                 # Unknown, Complete, Incomplete, Canceled
    device_type: str | None
    device: str | None          # actual_device: the board's hostname once scheduled
    failure_comment: str | None = None
    raw: dict = field(default_factory=dict, compare=False)

    @property
    def finished(self) -> bool:
        return self.state == JOB_FINISHED


@dataclass(frozen=True)
class Board:
    hostname: str
    device_type: str
    state: str                  # Idle, Reserved, Running
    health: str                 # Unknown, Maintenance, Good, Bad, Looping, Retired
    worker: str | None = None

    @property
    def label(self) -> str:
        """The board as the hosts page shows it: idle, running, offline or bad health."""
        if self.health in ("Bad", "Looping"):
            return "bad health"
        if self.health in ("Maintenance", "Retired"):
            return "offline"
        return "running" if self.state in ("Reserved", "Running") else "idle"

    @property
    def usable(self) -> bool:
        """Whether LAVA may schedule a job on it (Unknown: it runs a health check first)."""
        return self.health in ("Good", "Unknown")


@dataclass(frozen=True)
class Case:
    suite: str
    name: str
    result: str                 # pass, fail, skip, unknown
    measurement: float | None = None
    metadata: dict = field(default_factory=dict, compare=False)


class LavaClient:
    def __init__(self, server: str, token: str | None, *, session: requests.Session | None = None,
                 timeout: float = TIMEOUT_S):
        self.server = server.rstrip("/") + "/"
        self.session = session or requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Token {token}"
        self.timeout = timeout

    @classmethod
    def for_lab(cls, lab) -> "LavaClient":
        """A client of an inventory's LAVA lab (iowatch.inventory.LavaLab), its token from the environment."""
        return cls(lab.server, lab.token())

    # --- URLs people open --------------------------------------------------------------

    def job_url(self, job_id: int) -> str:
        return f"{self.server}scheduler/job/{job_id}"

    def log_url(self, job_id: int) -> str:
        return f"{self.server}{API}jobs/{job_id}/logs/"

    # --- calls -------------------------------------------------------------------------

    def _call(self, method: str, path: str, **kw) -> requests.Response:
        url = path if path.startswith("http") else f"{self.server}{API}{path}"
        try:
            answer = self.session.request(method, url, timeout=self.timeout, **kw)
        except requests.RequestException as e:
            raise LavaError(f"LAVA at {url} did not answer: {e}") from None
        if answer.status_code >= 400:
            try:
                said = answer.json()
                said = said.get("message") or said.get("detail") or said
            except ValueError:
                said = answer.text[:500]
            raise LavaError(f"LAVA refused {method} {url} ({answer.status_code}): {said}", answer.status_code)
        return answer

    def _pages(self, path: str, params: dict | None = None) -> list[dict]:
        rows, url = [], path
        while url:
            page = self._call("GET", url, params=params if url == path else None).json()
            rows += page["results"]
            url = page.get("next")
        return rows

    def submit(self, definition: str) -> int:
        """Submit a job definition (YAML); its job id."""
        ids = self._call("POST", "jobs/", json={"definition": definition}).json().get("job_ids") or []
        if len(ids) != 1:
            raise LavaError(f"LAVA at {self.server} answered job ids {ids} to one submission "
                            "(a multinode definition is not iowatch's)")
        return int(ids[0])

    def job(self, job_id: int) -> Job:
        d = self._call("GET", f"jobs/{job_id}/").json()
        return Job(int(d["id"]), d["state"], d["health"], d.get("requested_device_type"),
                   d.get("actual_device"), d.get("failure_comment"), d)

    def cases(self, job_id: int) -> list[Case]:
        """The job's test cases with their suites' names (LAVA's own suite is `lava`)."""
        suites = {s["id"]: s["name"] for s in self._pages(f"jobs/{job_id}/suites/")}
        out = []
        for c in self._pages(f"jobs/{job_id}/tests/"):
            meta = yaml.safe_load(c["metadata"]) if c.get("metadata") else {}
            value = c.get("measurement")
            out.append(Case(suites.get(c["suite"], str(c["suite"])), c["name"], c["result"],
                            float(value) if value not in (None, "") else None,
                            meta if isinstance(meta, dict) else {}))
        return out

    def logs(self, job_id: int, start: int = 0) -> list[dict]:
        """The job's log lines from `start` ({dt, lvl, msg} each); [] before it has any."""
        try:
            text = self._call("GET", f"jobs/{job_id}/logs/", params={"start": start}).text
        except LavaError as e:
            if e.status == 404:
                return []
            raise
        return yaml.safe_load(text) or []

    def boards(self, device_type: str | None = None) -> list[Board]:
        params = {"device_type": device_type} if device_type else None
        return [Board(d["hostname"], d["device_type"], d["state"], d["health"], d.get("worker_host"))
                for d in self._pages("devices/", params)]
