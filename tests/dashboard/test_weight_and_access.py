"""What a page weighs and who can read it (issue 44 items 19 and 20), read
through the test client on the dashboard's store: Chart.js only where a chart
is drawn, answers gzipped, static files under hashed names cached for a year
after collectstatic, the API docs page small; every table with a header row,
a skip link on every page, lang on every page, and every chip's text at 4.5:1
or more against its background (WCAG AA)."""
from __future__ import annotations

import gzip
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from test_pages import pages

CSS = (Path(__file__).resolve().parents[2] / "webapp" / "iowatch_web" / "dashboard" / "static"
       / "dashboard" / "dashboard.css")


class Outline(HTMLParser):
    """The parts of a page these checks read: tables and their headers, the
    links, the scripts, the canvases and the html element's lang."""

    def __init__(self):
        super().__init__()
        self.tables: list[int] = []  # header cells per table, in order
        self.open: list[int] = []
        self.links: list[dict] = []
        self.scripts: list[str] = []
        self.canvases = 0
        self.lang = None
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "html":
            self.lang = a.get("lang")
        elif tag == "table":
            self.open.append(len(self.tables))
            self.tables.append(0)
        elif tag == "th" and self.open:
            self.tables[self.open[-1]] += 1
        elif tag == "a":
            self.links.append(a)
        elif tag == "script" and a.get("src"):
            self.scripts.append(a["src"])
        elif tag == "canvas":
            self.canvases += 1

    def handle_endtag(self, tag):
        if tag == "table" and self.open:
            self.open.pop()


def outline(html: str) -> Outline:
    o = Outline()
    o.feed(html)
    return o


def _every_page(store) -> dict[str, str]:
    return pages(store)


@pytest.fixture
def read(store, client):
    def read(path: str) -> Outline:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        return outline(response.content.decode())
    return read


def test_chart_js_loads_only_on_a_page_that_draws_a_chart(store, read):
    charted = 0
    for name, path in _every_page(store).items():
        page = read(path)
        loads = any("chart.umd" in s for s in page.scripts)
        assert loads == bool(page.canvases), (name, page.canvases, page.scripts)
        charted += bool(page.canvases)
    assert charted >= 4


def test_every_table_has_a_header_and_every_page_a_skip_link_and_a_language(store, read):
    for name, path in _every_page(store).items():
        page = read(path)
        assert page.lang == "en", name
        assert all(page.tables), f"{name}: a table without <th> ({page.tables})"
        skip = page.links[0] if page.links else {}
        assert skip.get("href", "").startswith("#") and skip["href"][1:] in page.ids, (name, skip)


def test_the_api_docs_page_is_small_and_has_a_language(client, db):
    response = client.get("/api/v1/docs")
    html = response.content.decode()
    assert response.status_code == 200 and outline(html).lang == "en"
    scripts = outline(html).scripts
    assert not any("swagger" in s for s in scripts), scripts
    assert len(response.content) < 300_000
    assert "/api/v1/runs/{run_id}" in html and "/api/v1/openapi.json" in html


def test_pages_and_json_go_out_gzipped(store, client):
    for path in ("/", "/api/v1/runs", "/dashboard/api/overview"):
        response = client.get(path, HTTP_ACCEPT_ENCODING="gzip")
        assert response.get("Content-Encoding") == "gzip", path
        assert gzip.decompress(response.content)


@pytest.mark.django_db
def test_after_collectstatic_static_files_have_hashed_names_cached_for_a_year(tmp_path):
    with override_settings(STATIC_ROOT=tmp_path / "static"):
        call_command("collectstatic", "--noinput", "-v", "0")
        client = Client()
        page = outline(client.get("/api/v1/docs").content.decode())
        css = [a for a in re.findall(r'/static/[^"]+', _head(client)) if a.endswith(".css")]
        assert css and re.search(r"dashboard\.[0-9a-f]{12}\.css$", css[0]), css
        response = client.get(css[0], HTTP_ACCEPT_ENCODING="gzip")
        assert response.status_code == 200
        assert "immutable" in response["Cache-Control"] and "max-age=315360000" in response["Cache-Control"]
        assert response.get("Content-Encoding") == "gzip"
        assert page.lang == "en"


def _head(client) -> str:
    return client.get("/accounts/login/").content.decode()


def _luminance(hex_colour: str) -> float:
    h = hex_colour.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    channels = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_every_chip_is_readable_at_4_5_to_1():
    """Each rule of the stylesheet that colours a chip (a zero count, an outcome,
    a state, a phase); its background is the rule's own, or the white of a table."""
    css = re.sub(r"/\*.*?\*/", "", CSS.read_text(), flags=re.S)
    faint = {}
    for selector, body in re.findall(r"([^{}]+)\{([^}]*)\}", css):
        if not re.search(r"\.(chip|status|state|phase|tag)\b", selector):
            continue
        fg = re.search(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{3,6})\b", body)
        bg = re.search(r"background:\s*(#[0-9a-fA-F]{3,6})\b", body)
        if fg and (ratio := contrast(fg.group(1), bg.group(1) if bg else "#ffffff")) < 4.5:
            faint[selector.strip()] = round(ratio, 2)
    assert not faint, faint
