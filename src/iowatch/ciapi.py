"""The iowatch server's JSON API as the runner side calls it, the one HTTP client:
the uploader sends bundles through `Client.send` (every answer returned, for
its spool to decide), `iowatch compare --server` and `iowatch export` read
runs and regressions, the nightly waits for a run's verdict and reads the
regressions it raised, the bisect agent claims jobs and posts steps and
results, the report fetches a regression, the agent beats its host's state
(iowatch.heartbeat).

Plain urllib: the runner side installs no HTTP library for a few JSON calls. Every failure is a ServerError whose message
names the URL and what the server said.
"""
from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from urllib.parse import quote
from dataclasses import dataclass, field

TIMEOUT_S = 60


class ServerError(RuntimeError):
    """The server did not answer, or answered an error: the message says which."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class JobCancelled(ServerError):
    """An administrator cancelled the job this post was for (409, where
    "cancelled"): the agent stops working it."""


@dataclass
class Answer:
    """What the server answered to one call, whatever it was."""
    status: int | None          # None: no HTTP answer (refused, dropped, timed out)
    reply: dict = field(default_factory=dict)
    retry_after: str | None = None
    body: bytes = b""           # the answer as it came
    reason: str = ""            # why there was no answer

    def __str__(self) -> str:
        if self.status is None:
            return self.reply["error"]
        where = f" ({self.reply['where']})" if self.reply.get("where") else ""
        return f"{self.status}: {self.reply.get('error', self.reply)}{where}"


def json_or_text(raw: bytes) -> dict:
    """An answer's body as a dict: its JSON, or an error page's text."""
    try:
        data = json.loads(raw)
        return data if isinstance(data, dict) else {"body": data}
    except ValueError:
        # An HTML error page (a proxy's, Django's 500) on one line, tags dropped.
        text = " ".join(re.sub(r"<[^>]*>", " ", raw.decode("utf-8", "replace")).split())
        return {"error": text[:300]}


@dataclass
class Client:
    server: str
    token: str = ""
    # The lab host a job is worked on: sent with each step and result, so the
    # server refuses a claim this host lost (webapp/iowatch_web/hosts/giveback.py).
    host: str = ""

    def url(self, path: str) -> str:
        return self.server.rstrip("/") + "/api/v1/" + path.lstrip("/")

    def send(self, method: str, path: str, data: bytes | None = None, *,
             timeout: float = TIMEOUT_S) -> Answer:
        """One call, its answer returned whatever it is (an error status too)."""
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.url(path), data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                return Answer(resp.status, json_or_text(raw), body=raw)
        except urllib.error.HTTPError as e:
            raw = e.read()
            return Answer(e.code, json_or_text(raw),
                          e.headers.get("Retry-After") if e.headers else None, body=raw)
        except OSError as e:  # URLError, refused, reset, timed out
            reason = getattr(e, "reason", e)
            said = str(reason) or type(reason).__name__
            return Answer(None, {"error": f"{self.server}: no answer ({said})"}, reason=said)

    def _call(self, method: str, path: str, body: dict | None, *,
              timeout: float = TIMEOUT_S) -> tuple[int, dict | list | None]:
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        answer = self.send(method, path, data, timeout=timeout)
        if answer.status is None:
            raise ServerError(f"{method} {self.url(path)}: no answer ({answer.reason}); "
                              "is the server up?")
        if answer.status >= 400:
            said = answer.reply.get("error") or answer.reply.get("detail") or answer.reply
            error = (JobCancelled if answer.status == 409 and answer.reply.get("where") == "cancelled"
                     else ServerError)
            raise error(f"{method} {self.url(path)}: {answer.status} {said}", answer.status)
        try:
            return answer.status, (json.loads(answer.body) if answer.body.strip() else None)
        except ValueError as e:
            raise ServerError(f"{method} {self.url(path)}: the answer is not JSON ({e})") from None

    def get(self, path: str):
        return self._call("GET", path, None)[1]

    def paged(self, path: str, limit: int) -> list:
        """Every item of a paged list (`items` and `count`), `limit` a call."""
        items, offset = [], 0
        sep = "&" if "?" in path else "?"
        while True:
            page = self.get(f"{path}{sep}limit={limit}&offset={offset}")
            items += page["items"]
            offset += limit
            if offset >= page["count"]:
                return items

    def post(self, path: str, body: dict, *, timeout: float = TIMEOUT_S) -> tuple[int, dict | list | None]:
        return self._call("POST", path, body, timeout=timeout)

    # --- the calls of the nightly/bisect contract --------------------------

    def run(self, run_id: str) -> dict:
        return self.get(f"runs/{run_id}")

    def regression(self, regression_id: int) -> dict:
        """The regression's detail with every deciding cell of its comparison
        (the server gives them a page at a time: verdict_count says how many)."""
        detail = self.get(f"regressions/{regression_id}")
        verdicts = detail.get("verdicts") or []
        while len(verdicts) < detail.get("verdict_count", 0):
            more = self.get(f"regressions/{regression_id}?verdicts_offset={len(verdicts)}")["verdicts"]
            if not more:
                break
            verdicts += more
        detail["verdicts"] = verdicts
        return detail

    def regressions(self, **filters) -> list[dict]:
        query = "&".join(f"{k}={v}" for k, v in filters.items() if v is not None)
        page = self.get("regressions" + (f"?{query}" if query else ""))
        return page["items"] if isinstance(page, dict) else page

    def claim(self, host: str, device_classes: list[str] | tuple[str, ...] | None = None,
              own_only: bool = False, holds_none: bool = False) -> dict | None:
        """The next queued bisect job (one of these device classes when given;
        only of this host's regressions with own_only), or None when nothing is
        queued (204). holds_none: the caller holds no job, so the server gives
        back what this host held (an agent that started again)."""
        body = {"host": host, **({"device_classes": list(device_classes)} if device_classes else {}),
                **({"own_only": True} if own_only else {}), **({"holds_none": True} if holds_none else {})}
        status, job = self.post("bisects/claim", body)
        return job if status == 200 and job else None

    def claim_confirmation(self, host: str, holds_none: bool = False) -> dict | None:
        """The next confirmation queued for this host, or None (204)."""
        status, job = self.post("confirmations/claim",
                                {"host": host, **({"holds_none": True} if holds_none else {})})
        return job if status == 200 and job else None

    def _as_host(self, body: dict) -> dict:
        return {**body, "host": self.host} if self.host else body

    def post_confirmation(self, job_id: int, result: dict) -> dict:
        return self.post(f"confirmations/{job_id}/result", self._as_host(result))[1] or {}

    def post_step(self, job_id: int, step: dict) -> None:
        self.post(f"bisects/{job_id}/steps", self._as_host(step))

    def post_result(self, job_id: int, result: dict) -> None:
        self.post(f"bisects/{job_id}/result", self._as_host(result))

    def heartbeat(self, host: str, state: dict, *, timeout: float = TIMEOUT_S) -> dict:
        """Tell the server what `host` is doing now (`state`: phase, cell, job,
        commit, detail; iowatch.heartbeat.HostState.body); the host's state as
        the server keeps it is returned. iowatch.heartbeat.Heartbeat calls it."""
        return self.post(f"hosts/{quote(host, safe='')}/heartbeat", state, timeout=timeout)[1]
