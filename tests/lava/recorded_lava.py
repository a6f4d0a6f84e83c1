"""A real HTTP server on localhost that answers as LAVA's REST API did in the
recorded answers of tests/lava/fixtures (README there), so the client is tested
over HTTP, headers and pagination included. A route holds a list of answers:
each request takes the next, the last one repeats (a job polled until it ends)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

FIXTURES = Path(__file__).with_name("fixtures")


class RecordedLava:
    def __init__(self):
        self.routes: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
        self.requests: list[dict] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, method: str, path: str, *fixtures: str, status: int = 200) -> None:
        """Answer `method path` (with its query, if any) with these fixture files in turn."""
        answers = []
        for name in fixtures:
            text = (FIXTURES / name).read_text().replace("{server}", self.url)
            kind = "application/yaml" if name.endswith(".yaml") else "application/json"
            answers.append((status, kind, text))
        self.routes[method, path] = answers

    def submits(self, *job_ids: int) -> None:
        """Each submission answers the next of these job ids (201, as LAVA does)."""
        self.routes["POST", "/api/v0.2/jobs/"] = [
            (201, "application/json", json.dumps({"message": "job(s) successfully submitted", "job_ids": [i]}))
            for i in job_ids]

    def finished_job(self, job_id: int, *job_answers: str, tests: tuple[str, ...] = (),
                     logs: str | None = None) -> None:
        """Job `job_id` polled through job_answers, its suites and test pages
        (page 2 at ?page=2), and its log (a fixture name or the text itself)."""
        api = f"/api/v0.2/jobs/{job_id}/"
        self.answer("GET", api, *job_answers)
        self.answer("GET", api + "suites/", f"suites-{job_id}.json")
        for page, name in enumerate(tests, 1):
            self.answer("GET", api + "tests/" + (f"?page={page}" if page > 1 else ""), name)
        if logs is not None and logs.endswith(".yaml") and "\n" not in logs:
            self.answer("GET", api + "logs/", logs)
        elif logs is not None:
            self.routes["GET", api + "logs/"] = [(200, "application/yaml", logs)]

    def _handler(self):
        lava = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                lava.requests.append({"method": method, "path": self.path, "body": body,
                                      "authorization": self.headers.get("Authorization")})
                parts = urlsplit(self.path)
                answers = (lava.routes.get((method, self.path))
                           or lava.routes.get((method, parts.path)))
                if not answers:
                    status, kind, text = 404, "application/json", json.dumps({"detail": "Not found."})
                else:
                    status, kind, text = answers.pop(0) if len(answers) > 1 else answers[0]
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def log_message(self, *args):
                pass

        return Handler

    def __enter__(self) -> "RecordedLava":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
