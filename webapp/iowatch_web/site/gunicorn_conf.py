"""gunicorn's settings for the web app: `iowatch serve` and docker-compose.yml
run it with `--config python:iowatch_web.site.gunicorn_conf`.

The request limits are set here, not left to gunicorn's defaults (a 4,094-byte
request line). A request past them never reaches Django: gunicorn answers it
itself, with an HTML page, which an uploader cannot read. So each worker
writes gunicorn's own error answers (414 URI Too Long, 431 Request Header
Fields Too Large, 400 for a request line that does not parse) in the API's
one shape, {"error", "where"}, as JSON. gunicorn cannot say which path such
a request was for (the request line is what failed to be read), so every
answer gunicorn writes itself is JSON, the dashboard's too; Django's own
answers are untouched."""
from __future__ import annotations

import json

from gunicorn import util

# The longest request line (method, URL, version) and header line taken, in
# bytes: gunicorn's most (8190), as nginx's default buffers; and at most 100 headers.
limit_request_line = 8190
limit_request_field_size = 8190
limit_request_fields = 100

WHERE = {414: "url", 431: "headers", 400: "request", 403: "request", 500: "server", 501: "headers"}


def json_error_answer(status: int, reason: str, message: str) -> bytes:
    """The whole HTTP answer gunicorn writes for a request it refused itself."""
    said = {414: f"the request line is too long: {message} (the server takes URLs of up to about "
                 f"{limit_request_line} bytes)",
            431: f"a request header is too large, or there are too many: {message} (at most "
                 f"{limit_request_fields} headers of {limit_request_field_size} bytes each)"}
    body = json.dumps({"error": said.get(status, f"{reason}: {message}" if message else reason),
                       "where": WHERE.get(status, "request")}).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode("latin-1") + body


def _write_json_error(sock, status_int, reason, mesg):
    util.write_nonblock(sock, json_error_answer(int(status_int), reason, mesg))


def post_worker_init(worker):
    # gunicorn's workers call util.write_error for every answer they write
    # themselves (gunicorn.workers.base.Worker.handle_error): JSON instead of HTML.
    util.write_error = _write_json_error
