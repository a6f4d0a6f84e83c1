"""What a lab host is doing, told to the server (docs/lab.md, "What each host is doing").

The agent (`iowatch agent`) keeps a `Heartbeat` open while it works: a daemon
thread posts the host's state to `POST /api/v1/hosts/{name}/heartbeat` every
`every` seconds, and at once after each `set(phase, ...)`. A server that does
not answer never stops the agent's work: the outage is logged once, when it
begins, and once when the server answers again; the state goes on being kept
and the next beat that gets through carries the newest.

The phases and job kinds are declared here, once: the server validates beats
against them and the hosts page shows each phase's plain word from here.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from iowatch.ciapi import Client, ServerError

log = logging.getLogger(__name__)

# phase -> the words a page shows for it. Closed: the server refuses others.
PHASES = {
    "idle": "idle, waiting for work",
    "claiming": "asking the server for work",
    "building": "building the kernel",
    "booting": "booting the kernel",
    "running": "running cells",
    "uploading": "uploading the bundle",
    "boot-failed": "the kernel did not boot",
    "error": "stopped on an error",
}
# The kinds of work an agent claims: the bisect queue today, the second host's
# confirmation next, checks and nightlies when a Jenkins stage hands them over.
JOB_KINDS = ("bisect", "confirmation", "check", "nightly")

EVERY_S = 60.0
# A beat is small; one that takes longer than this is an outage, not a slow answer.
BEAT_TIMEOUT_S = 10.0
# Beats kept while the server is away: a phase change is worth sending late,
# a backlog of them is not.
MAX_PENDING = 20


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class HostState:
    """One beat's body: `job` is {"kind", "id"} or None; `at` when the host
    entered this state (UTC), so a beat sent late after an outage still says
    when the phase changed."""
    phase: str
    cell: str = ""
    job: dict | None = None
    commit: str = ""
    detail: str = ""
    at: str = field(default_factory=_utc_now)

    def __post_init__(self):
        if self.phase not in PHASES:
            raise ValueError(f"phase {self.phase!r} is not one of {', '.join(PHASES)}")
        if self.job is not None:
            if set(self.job) != {"kind", "id"}:
                raise ValueError(f"job {self.job!r} must be {{'kind': ..., 'id': ...}} or None")
            if self.job["kind"] not in JOB_KINDS:
                raise ValueError(f"job kind {self.job['kind']!r} is not one of {', '.join(JOB_KINDS)}")
            if not isinstance(self.job["id"], int) or isinstance(self.job["id"], bool):
                raise ValueError(f"job id {self.job['id']!r} is not a whole number")

    def body(self) -> dict:
        return asdict(self)


@dataclass
class Heartbeat:
    """`with Heartbeat(client, "lab-1") as beat: beat.set("building", commit=...)`."""
    client: Client
    host: str
    every: float = EVERY_S
    state: HostState = field(default_factory=lambda: HostState("idle"))

    def __post_init__(self):
        self._lock = threading.Lock()
        self._pending: list[HostState] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.outage: str | None = None  # what the server said when this outage began
        self.beats = 0                  # beats the server took
        self.missed = 0                 # beats it did not

    def set(self, phase: str, *, cell: str = "", job: dict | None = None, commit: str = "",
            detail: str = "") -> None:
        """The host's new state, beaten at once (from the thread: a server that
        hangs never holds the caller). A bad phase or job is a ValueError here."""
        state = HostState(phase, cell, job, commit, detail)
        with self._lock:
            self.state = state
            self._pending = [*self._pending, state][-MAX_PENDING:]
        self._wake.set()

    def __enter__(self) -> Heartbeat:
        with self._lock:
            self._pending = [*self._pending, self.state][-MAX_PENDING:]
        self._thread = threading.Thread(target=self._beating, daemon=True,
                                        name=f"heartbeat-{self.host}")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=BEAT_TIMEOUT_S + 5)

    def _beating(self) -> None:
        while not self._stop.is_set():
            # Cleared before the state is read: a set() from here on wakes the next wait.
            self._wake.clear()
            with self._lock:
                due, self._pending = self._pending or [self.state], []
            for n, state in enumerate(due):
                if not self._beat(state):
                    with self._lock:  # the unsent go first at the next try, the newest kept
                        self._pending = (due[n:] + self._pending)[-MAX_PENDING:]
                    break
            self._wake.wait(self.every)
        # Stopped: what was set last still goes out once (an agent's final idle).
        with self._lock:
            last, self._pending = self._pending, []
        for state in last:
            if not self._beat(state):
                break

    def _beat(self, state: HostState) -> bool:
        try:
            self.client.heartbeat(self.host, state.body(), timeout=BEAT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - nothing in a beat may stop the agent's work
            if self.outage is None:
                # A ServerError says the URL and the answer; anything else is a bug worth its trace.
                log.warning("heartbeat of %s not taken (the work goes on; said once until it is "
                            "taken again): %s", self.host, e, exc_info=not isinstance(e, ServerError))
            self.outage = str(e) or type(e).__name__
            self.missed += 1
            return False
        if self.outage is not None:
            log.warning("heartbeat of %s taken again after: %s", self.host, self.outage)
            self.outage = None
        self.beats += 1
        return True
