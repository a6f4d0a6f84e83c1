"""The iowatch server's JSON API as the runner side calls it: the nightly waits
for a run's verdict and reads the regressions it raised, the bisect agent
claims jobs and posts steps and results, the report fetches a regression.

Plain urllib like the uploader (iowatch.upload): the runner side installs no
HTTP library for a few JSON calls. Every failure is a ServerError whose message
names the URL and what the server said.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from iowatch.upload import _json_or_text

TIMEOUT_S = 60


class ServerError(RuntimeError):
    """The server did not answer, or answered an error: the message says which."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass
class Client:
    server: str
    token: str = ""

    def url(self, path: str) -> str:
        return self.server.rstrip("/") + "/api/v1/" + path.lstrip("/")

    def _call(self, method: str, path: str, body: dict | None) -> tuple[int, dict | list | None]:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, allow_nan=False).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.url(path), data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw.strip() else None)
        except urllib.error.HTTPError as e:
            answer = _json_or_text(e.read())
            said = answer.get("error") or answer.get("detail") or answer
            raise ServerError(f"{method} {self.url(path)}: {e.code} {said}", e.code) from None
        except ValueError as e:
            raise ServerError(f"{method} {self.url(path)}: the answer is not JSON ({e})") from None
        except OSError as e:  # refused, reset, timed out
            reason = getattr(e, "reason", e)
            raise ServerError(f"{method} {self.url(path)}: no answer "
                              f"({str(reason) or type(reason).__name__}); is the server up?") from None

    def get(self, path: str):
        return self._call("GET", path, None)[1]

    def post(self, path: str, body: dict) -> tuple[int, dict | list | None]:
        return self._call("POST", path, body)

    # --- the calls of the nightly/bisect contract --------------------------

    def run(self, run_id: str) -> dict:
        return self.get(f"runs/{run_id}")

    def regression(self, regression_id: int) -> dict:
        return self.get(f"regressions/{regression_id}")

    def regressions(self, **filters) -> list[dict]:
        query = "&".join(f"{k}={v}" for k, v in filters.items() if v is not None)
        page = self.get("regressions" + (f"?{query}" if query else ""))
        return page["items"] if isinstance(page, dict) else page

    def claim(self, host: str) -> dict | None:
        """The next queued bisect job, or None when nothing is queued (204)."""
        status, job = self.post("bisects/claim", {"host": host})
        return job if status == 200 and job else None

    def post_step(self, job_id: int, step: dict) -> None:
        self.post(f"bisects/{job_id}/steps", step)

    def post_result(self, job_id: int, result: dict) -> None:
        self.post(f"bisects/{job_id}/result", result)
