"""The health server's WSGI application: /api/v1/health and nothing else.

`iowatch serve` runs it in a gunicorn of its own (one process, a few
threads) on its own port (--health-port, by default the next one), so no
page read can hold it: the web workers may all be busy with reads, the
health answer does not queue behind them (issue 42: health waited 105 s
behind four compares). It is Django's own view, so it answers what the
web port's /api/v1/health answers; every other path is a JSON 404."""
import json

from iowatch_web.site.wsgi import application as django_application

HEALTH_PATH = "/api/v1/health"


def application(environ, start_response):
    if environ.get("PATH_INFO", "") == HEALTH_PATH and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
        return django_application(environ, start_response)
    body = json.dumps({"error": f"the health port answers GET {HEALTH_PATH} only",
                       "where": "url"}).encode()
    start_response("404 Not Found", [("Content-Type", "application/json"),
                                     ("Content-Length", str(len(body)))])
    return [body]
