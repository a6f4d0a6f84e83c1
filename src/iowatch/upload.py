"""Send result bundles to the server, and keep what could not be sent.

Every bundle goes into the spool first (an atomic write), and leaves it only
when the server has stored it (201) or already had it (200). A server that is
down or answers 5xx keeps the bundle spooled; the next upload sends the spool
first, oldest first. A bundle the server refuses for what it is (4xx) moves to
spool/rejected/ with the server's reason, so it is neither lost nor retried
forever. The run UUID makes a repeated send harmless.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from iowatch import bundle

# Statuses worth trying again: the server may be busy, restarting or throttling.
RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}
MAX_DELAY_S = 30.0


@dataclass
class Outcome:
    run_id: str
    state: str          # "sent", "already-stored", "rejected", "kept"
    detail: str


class ServerUnreachable(Exception):
    pass


def _endpoint(server: str) -> str:
    return server.rstrip("/") + "/api/v1/bundles"


class Spool:
    """A directory of <run_id>.json bodies with <run_id>.meta sidecars."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.rejected = self.root / "rejected"

    def put(self, run_id: str, body: bytes, server: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        meta = {"run_id": run_id, "server": server.rstrip("/"), "queued_at": time.time()}
        for name, data in ((f"{run_id}.json", body), (f"{run_id}.meta", json.dumps(meta).encode())):
            tmp = self.root / f".{name}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, self.root / name)

    def pending(self, server: str) -> list[dict]:
        """Entries queued for this server, oldest first."""
        if not self.root.is_dir():
            return []
        entries = []
        for meta_path in self.root.glob("*.meta"):
            try:
                meta = json.loads(meta_path.read_text())
            except (OSError, ValueError):
                continue
            if meta.get("server") == server.rstrip("/") and (self.root / f"{meta['run_id']}.json").is_file():
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


def post(server: str, token: str, body: bytes, timeout: float = 120.0) -> tuple[int, dict]:
    req = urllib.request.Request(
        _endpoint(server), data=body, method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, _json_or_text(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, _json_or_text(e.read())
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise ServerUnreachable(f"{server}: {reason}") from None


def _json_or_text(raw: bytes) -> dict:
    try:
        data = json.loads(raw)
        return data if isinstance(data, dict) else {"body": data}
    except ValueError:
        return {"error": raw.decode("utf-8", "replace")[:500]}


def send_one(server: str, token: str, body: bytes, retries: int, backoff: float,
             sleep: Callable[[float], None] = time.sleep) -> tuple[int, dict]:
    """POST with exponential backoff; raises ServerUnreachable when every try failed."""
    last = ""
    for attempt in range(retries + 1):
        if attempt:
            sleep(min(backoff * 2 ** (attempt - 1), MAX_DELAY_S))
        try:
            status, reply = post(server, token, body)
        except ServerUnreachable as e:
            last = str(e)
            continue
        if status not in RETRYABLE_STATUS:
            return status, reply
        last = f"{server} answered {status}: {reply.get('error', reply)}"
    raise ServerUnreachable(f"{last} (after {retries + 1} tries)")


def upload(bundle_dirs: list[str], server: str, token: str, spool: Spool,
           retries: int = 5, backoff: float = 1.0,
           sleep: Callable[[float], None] = time.sleep,
           report: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Spool the given bundles, then send everything spooled for this server.

    Raises bundle.BundleError for a bundle directory that breaks the contract;
    then nothing of that call is spooled."""
    bodies = []
    for d in bundle_dirs:
        body = bundle.to_wire(d)
        bodies.append((json.loads(body)["run_id"], body))
    for run_id, body in bodies:
        spool.put(run_id, body, server)

    outcomes: list[Outcome] = []
    pending = spool.pending(server)
    for i, entry in enumerate(pending):
        run_id = entry["run_id"]
        try:
            status, reply = send_one(server, token, spool.body(run_id), retries, backoff, sleep)
        except ServerUnreachable as e:
            # The server is down: keep this and every later entry for the next call.
            for later in pending[i:]:
                outcomes.append(Outcome(later["run_id"], "kept", str(e)))
                report(outcomes[-1])
            break
        if status in (200, 201):
            spool.remove(run_id)
            state = "sent" if status == 201 else "already-stored"
            detail = f"{reply.get('cells', '?')} cells, {reply.get('samples', '?')} samples"
        elif status in (401, 403):
            # A token problem is the caller's to fix, not the bundle's: keep it.
            outcomes.append(Outcome(run_id, "kept", f"{server} refused the token ({status}): "
                                    f"{reply.get('error', reply)}"))
            report(outcomes[-1])
            for later in pending[i + 1:]:
                outcomes.append(Outcome(later["run_id"], "kept", "not tried: the token was refused"))
                report(outcomes[-1])
            break
        else:
            where = f" ({reply['where']})" if reply.get("where") else ""
            reason = f"{status}: {reply.get('error', reply)}{where}"
            kept_at = spool.reject(run_id, reason)
            state, detail = "rejected", f"{reason}; the body is kept at {kept_at}"
        outcomes.append(Outcome(run_id, state, detail))
        report(outcomes[-1])
    return outcomes
