"""Send result bundles to the server, and keep what could not be sent.

Every bundle is checked and turned into its wire form first: one whose raw
files no longer match the sha256 the runner recorded, or that breaks the
contract, is refused here ("refused-locally") and nothing of it is spooled.
The others go into the spool (an atomic write) and leave it only when the
server has stored them (201) or already had them (200). Each answer decides
what happens to that one bundle:

- 4xx that judge the bundle (400, 409, 413, 422, ...): the bundle is bad. It
  moves to spool/rejected/ with the server's reason, neither lost nor retried.
- 401, 403, 404, 405, 407, 415, 421, 426, 3xx: the call is wrong (token, URL),
  not the bundle. Everything stays spooled; the rest is not tried.
- 408, 425, 429, 503, a refused connection, or a server whose /api/v1/health
  does not answer: the server is busy or down. Retry with exponential backoff
  and jitter, honouring Retry-After; when the tries run out, everything stays
  spooled for the next call (the rest is not tried: it would fail the same way).
- 500 and the other 5xx, a timeout or a dropped connection while the server
  is healthy: the server failed on this bundle. Each such failure is counted
  in the bundle's .meta sidecar (so the count survives restarts); after
  QUARANTINE_AFTER of them the bundle moves to spool/quarantine/ with the
  reasons, and the bundles behind it go on either way. `iowatch upload
  --retry-quarantined` puts them back once the server is fixed.

The run UUID makes a repeated send harmless.
"""
from __future__ import annotations

import email.utils
import fcntl
import json
import os
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timezone
from pathlib import Path
from typing import Callable, Iterator

from iowatch import bundle
from iowatch.ciapi import Answer, Client

# Timeout of each wait on the socket. The longest is for the answer while the
# server validates and stores the bundle, which grows with its size: 30 s for
# a small bundle plus 5 s per MiB (a floor of about 200 KiB/s end to end), so
# the largest bundle the server takes by default (64 MiB) gets 350 s.
TIMEOUT_BASE_S = 30.0
TIMEOUT_PER_MIB_S = 5.0
HEALTH_TIMEOUT_S = 10.0

# Longest wait between two tries, whether from the backoff or from Retry-After.
# A server that asks for longer is left alone until the next call.
MAX_DELAY_S = 60.0
# Failures of the server on one bundle (counted across calls) before it is set aside.
QUARANTINE_AFTER = 3

STORED_STATES = ("sent", "already-stored")
# The server is busy and says so: never held against the bundle.
TRY_LATER = {408, 425, 429, 503}
# The call is wrong, not the bundle: the same answer would come for every bundle.
CALL_REFUSED = {401: "the token was refused", 403: "the token was refused",
                404: "no ingest API at this URL: check --server",
                405: "no ingest API at this URL: check --server",
                407: "a proxy wants credentials", 415: "the server is not an iowatch server",
                421: "the server does not answer for this host name",
                426: "the server wants another protocol (https?)"}


@dataclass
class Outcome:
    run_id: str
    # "sent", "already-stored", "rejected", "quarantined", "kept" (tried, stays
    # spooled), "not-tried" (stays spooled), "refused-locally" (never spooled)
    state: str
    detail: str

    def line(self) -> str:
        return f"{self.state}: run {self.run_id}: {self.detail}"


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class Spool:
    """A directory of <run_id>.json bodies with <run_id>.meta sidecars, and
    rejected/ and quarantine/ for what left it without being stored."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.rejected = self.root / "rejected"
        self.quarantine = self.root / "quarantine"

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One uploader at a time moves files in this spool."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    def _meta(self, path: Path) -> dict | None:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def put(self, run_id: str, body: bytes, server: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        # A bundle given again keeps its place in the queue and its failure count.
        meta = self._meta(self.root / f"{run_id}.meta") or {
            "run_id": run_id, "queued_at": time.time(), "failures": []}
        meta["server"] = server.rstrip("/")
        _write_atomic(self.root / f"{run_id}.json", body)
        _write_atomic(self.root / f"{run_id}.meta", json.dumps(meta).encode())

    def pending(self, server: str) -> list[dict]:
        """Entries queued for this server, oldest first."""
        if not self.root.is_dir():
            return []
        entries = []
        for meta_path in self.root.glob("*.meta"):
            meta = self._meta(meta_path)
            if meta and meta.get("server") == server.rstrip("/") and \
                    (self.root / f"{meta['run_id']}.json").is_file():
                entries.append(meta)
        return sorted(entries, key=lambda m: m["queued_at"])

    def body(self, run_id: str) -> bytes:
        return (self.root / f"{run_id}.json").read_bytes()

    def remove(self, run_id: str) -> None:
        for suffix in (".json", ".meta"):
            (self.root / f"{run_id}{suffix}").unlink(missing_ok=True)

    def reject(self, run_id: str, reason: str) -> Path:
        self.rejected.mkdir(parents=True, exist_ok=True)
        os.replace(self.root / f"{run_id}.json", self.rejected / f"{run_id}.json")
        (self.rejected / f"{run_id}.reason").write_text(reason + "\n")
        (self.root / f"{run_id}.meta").unlink(missing_ok=True)
        return self.rejected / f"{run_id}.json"

    def record_failure(self, run_id: str, reason: str) -> int:
        """Count one failure of the server on this bundle; returns the count so far."""
        path = self.root / f"{run_id}.meta"
        meta = self._meta(path) or {"run_id": run_id, "queued_at": time.time()}
        meta.setdefault("failures", []).append(
            f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {reason}")
        _write_atomic(path, json.dumps(meta).encode())
        return len(meta["failures"])

    def is_quarantined(self, run_id: str) -> bool:
        return (self.quarantine / f"{run_id}.json").is_file()

    def set_aside(self, run_id: str) -> Path:
        """Move a bundle the server keeps failing on to quarantine/, reasons beside it."""
        self.quarantine.mkdir(parents=True, exist_ok=True)
        meta = self._meta(self.root / f"{run_id}.meta") or {}
        (self.quarantine / f"{run_id}.reason").write_text(
            "".join(f"{r}\n" for r in meta.get("failures", [])))
        os.replace(self.root / f"{run_id}.meta", self.quarantine / f"{run_id}.meta")
        os.replace(self.root / f"{run_id}.json", self.quarantine / f"{run_id}.json")
        return self.quarantine / f"{run_id}.json"

    def release(self, server: str) -> list[str]:
        """Put this server's quarantined bundles back in the queue with no failures counted."""
        released = []
        for meta_path in sorted(self.quarantine.glob("*.meta")) if self.quarantine.is_dir() else []:
            meta = self._meta(meta_path)
            run_id = meta and meta.get("run_id")
            if not run_id or meta.get("server") != server.rstrip("/"):
                continue
            meta["failures"] = []
            os.replace(self.quarantine / f"{run_id}.json", self.root / f"{run_id}.json")
            _write_atomic(self.root / f"{run_id}.meta", json.dumps(meta).encode())
            meta_path.unlink()
            (self.quarantine / f"{run_id}.reason").unlink(missing_ok=True)
            released.append(run_id)
        return released


def timeout_for(size: int) -> float:
    return TIMEOUT_BASE_S + TIMEOUT_PER_MIB_S * size / 2**20


def post(server: str, token: str, body: bytes, timeout: float | None = None) -> Answer:
    """One bundle to POST /api/v1/bundles, through the one client (iowatch.ciapi)."""
    return Client(server, token).send("POST", "bundles", body,
                                      timeout=timeout or timeout_for(len(body)))


def healthy(server: str) -> bool:
    """Whether the server answers its health check: a failure with a healthy
    server is this bundle's, one with a sick server is the server's."""
    answer = Client(server).send("GET", "health", timeout=HEALTH_TIMEOUT_S)
    return answer.status is not None and answer.status < 500


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds from now: delay-seconds or an HTTP-date; None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_delay(attempt: int, base: float, rng: random.Random) -> float:
    """Wait before try attempt + 1: base * 2^(attempt - 1) capped at MAX_DELAY_S,
    drawn from its upper half so agents that failed together do not return together."""
    ceiling = min(base * 2 ** (attempt - 1), MAX_DELAY_S)
    return rng.uniform(ceiling / 2, ceiling)


def retry_after_delay(seconds: float, rng: random.Random) -> float:
    """At least what the server asked, and up to a tenth more (jitter)."""
    return rng.uniform(seconds, seconds * 1.1)


def _bundle_run_id(bundle_dir: str) -> str:
    try:
        return str(json.loads((Path(bundle_dir) / bundle.MANIFEST).read_text())["run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"? (bundle {bundle_dir})"


@dataclass
class _Sender:
    server: str
    token: str
    spool: Spool
    retries: int
    backoff: float
    quarantine_after: int
    sleep: Callable[[float], None]
    rng: random.Random

    def deliver(self, run_id: str) -> tuple[Outcome, str | None]:
        """Send one spooled bundle; returns its outcome and, when the later
        bundles should not be tried, why."""
        body = self.spool.body(run_id)
        down = failures = last = None
        wait = 0.0
        for attempt in range(1, self.retries + 2):
            if attempt > 1:
                self.sleep(wait)
            answer = post(self.server, self.token, body)
            status = answer.status
            if status in (200, 201):
                self.spool.remove(run_id)
                state = "sent" if status == 201 else "already-stored"
                return Outcome(run_id, state, f"{answer.reply.get('cells', '?')} cells, "
                                              f"{answer.reply.get('samples', '?')} samples"), None
            if status in CALL_REFUSED or (status is not None and status < 400):
                why = f"{CALL_REFUSED.get(status, 'the server redirects elsewhere')} ({answer})"
                return Outcome(run_id, "kept", f"stays in the spool: {why}"), why
            if status is not None and status < 500 and status not in TRY_LATER:
                kept_at = self.spool.reject(run_id, str(answer))
                return Outcome(run_id, "rejected", f"the server refused it ({answer}); "
                                                   f"the body is kept at {kept_at}"), None
            delay = retry_after_s(answer.retry_after)
            if status in TRY_LATER or not healthy(self.server):
                down = (f"the server is busy ({answer})" if status in TRY_LATER else
                        f"the server is unreachable ({answer})" if status is None else
                        f"the server fails its health check ({answer})")
                if delay is not None and delay > MAX_DELAY_S:
                    why = f"{down}; it asked to wait {delay:.0f} s, more than {MAX_DELAY_S:.0f} s"
                    return Outcome(run_id, "kept", f"stays in the spool: {why}"), why
            else:
                down = None
                failures = self.spool.record_failure(run_id, str(answer))
                if failures >= self.quarantine_after:
                    where = self.spool.set_aside(run_id)
                    return Outcome(run_id, "quarantined", (
                        f"the server failed on it {failures} times, last {answer}; set aside "
                        f"at {where} with the reasons; after fixing the server, `iowatch upload "
                        "--retry-quarantined` sends it again")), None
                last = answer
            wait = (retry_after_delay(delay, self.rng) if delay is not None and delay <= MAX_DELAY_S
                    else backoff_delay(attempt, self.backoff, self.rng))
        if down:
            why = f"{down} after {self.retries + 1} tries"
            return Outcome(run_id, "kept", f"stays in the spool: {why}"), why
        return Outcome(run_id, "kept", (
            f"stays in the spool: the server failed on it ({last}), failure {failures} of "
            f"{self.quarantine_after} before quarantine; it does not hold up the others")), None


def upload(bundle_dirs: list[str], server: str, token: str, spool: Spool,
           retries: int = 5, backoff: float = 1.0,
           sleep: Callable[[float], None] = time.sleep,
           report: Callable[[Outcome], None] = lambda o: None,
           quarantine_after: int = QUARANTINE_AFTER,
           rng: random.Random | None = None) -> list[Outcome]:
    """Spool the given bundles, then send everything spooled for this server.

    Returns one Outcome per bundle handled, in the order handled (each also
    passed to report as it happens). A bundle directory that breaks the
    contract or whose raw files changed since the run is "refused-locally"
    and nothing of it is spooled; the others go on."""
    outcomes: list[Outcome] = []

    def emit(o: Outcome) -> None:
        outcomes.append(o)
        report(o)

    sender = _Sender(server, token, spool, max(retries, 0), backoff, max(quarantine_after, 1),
                     sleep, rng or random.Random())
    with spool.locked():
        for d in bundle_dirs:
            try:
                body = bundle.to_wire(d)
            except (bundle.BundleError, OSError) as e:
                emit(Outcome(_bundle_run_id(d), "refused-locally",
                             f"{e}; nothing of it was spooled or sent"))
                continue
            run_id = json.loads(body)["run_id"]
            if spool.is_quarantined(run_id):
                emit(Outcome(run_id, "not-tried", (
                    f"it is in quarantine ({spool.quarantine}): the server failed on it before; "
                    "`iowatch upload --retry-quarantined` sends it again")))
                continue
            spool.put(run_id, body, server)

        pending = spool.pending(server)
        for i, entry in enumerate(pending):
            outcome, stop = sender.deliver(entry["run_id"])
            emit(outcome)
            if stop:
                for later in pending[i + 1:]:
                    emit(Outcome(later["run_id"], "not-tried",
                                 f"stays in the spool, not tried: while sending run "
                                 f"{entry['run_id']}, {stop}"))
                break
    return outcomes
