"""Fixtures of the dashboard's browser tests: a store filled through the real
ingest path, Debian's chromium driven by Playwright (from PyPI; no browser
download), and a page that records console errors.

pytest-django's live_server serves the app from a thread of this process on
the test database (PostgreSQL with DATABASE_URL, else the SQLite file the
settings name for tests), so the store is filled with transactional_db and
flushed after each test."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

import pytest

from dashboard_browser import NOISE, SCRIPT, at, claim_kernel, kernel, level, uploader  # noqa: F401 (tests read them here too)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "webapp"))  # bundle_maker

# Playwright's sync API keeps an event loop in this thread; the ORM calls the
# tests make between page actions are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("IOWATCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
VENDOR = ROOT / "webapp" / "iowatch_web" / "dashboard" / "static" / "dashboard" / "vendor" / "chart.umd.js"

def pytest_collection_modifyitems(items):
    here = str(Path(__file__).parent)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.webapp)


@dataclass
class Store:
    """What the filled store holds, for the tests to name in URLs."""
    series_id: int = 0
    kernels: list = field(default_factory=list)  # the series' kernel ids, patch 0, 1, 2
    ab_regression: int = 0  # patch 2 against patch 1 (planted halving)
    change_point_regression: int = 0
    nightly_runs: list = field(default_factory=list)
    study: str = "f2fs-dio-write"


@pytest.fixture
def store(transactional_db, tmp_path) -> Store:
    """Published numbers of every study, a three-kernel series whose last patch
    halves the write bandwidth (patch 1's subject holds a script tag), and a
    nightly history of ten kernels with a step down at the eighth. Everything
    goes through the ingest API with an agent token; each upload's verdict work
    is then done by the queue's own task runner, as a worker beside the server
    would. Each host is calibrated first (bundle_maker.calibration_bundles):
    its runs are one boot each, and a host in service has a record of its
    noise between boots that such comparisons read (issue 41 item 1)."""
    from django.core.management import call_command

    from bundle_maker import calibration_bundles, planted_bundle
    from iowatch.commands.import_published import published_bundles
    from iowatch.studies import load_studies
    from iowatch_web.regressions.models import Regression
    from iowatch_web.results.models import Kernel, PatchSeries

    studies = load_studies(ROOT / "jobs" / "studies")
    call_command("ingest_bundle", *[str(d) for s in studies.values()
                                    for d in published_bundles(s, tmp_path)], stdout=StringIO())
    post = uploader("lab-agent")

    subjects = {1: f"f2fs: {SCRIPT} take the lock later", 2: "f2fs: drop the write lock"}
    for k, bw in enumerate([1000, 1010, 500]):
        doc = planted_bundle({"write.bw_kib_s": level(bw), "write.iops": level(200)},
                             kernel=kernel(100 + k, "f2fs: dio write lock", k, subjects.get(k, "")),
                             started_at=at(k), cells=2, matrix="series")
        doc["label"] = SCRIPT if k == 1 else f"patch {k}"
        for cell in doc["cells"]:  # the study's job group, so the published page pairs them
            for rep in cell["repetitions"]:
                for sample in rep["samples"]:
                    sample["group"] = "seqw"
        if k == 0:
            for boot in calibration_bundles(doc):
                post(boot)
        post(doc)
    filled = Store()
    nightly = []
    for night, bw in enumerate([1000] * 7 + [700] * 3):
        doc = planted_bundle({"write.bw_kib_s": level(bw + night % 3)}, kernel=kernel(night + 1),
                             started_at=at(10 + night), matrix="nightly", host="lab-2")
        # As `iowatch nightly` marks them (a bundle of schema 2 carries the trigger).
        doc.update(schema_version=2, trigger={"kind": "nightly", "branch": "master"})
        if night == 0:
            for boot in calibration_bundles(doc):
                post(boot)
        post(doc)
        nightly.append(doc["run_id"])
    series = PatchSeries.objects.get(name="f2fs: dio write lock")
    filled.series_id = series.pk
    filled.kernels = list(Kernel.objects.filter(series=series).order_by("patch_index")
                          .values_list("pk", flat=True))
    filled.ab_regression = Regression.objects.get(comparison__reason="parent").pk
    # The nightly step: its change point joined the night-over-night regression that names it.
    filled.change_point_regression = Regression.objects.get(comparison__change_points__isnull=False).pk
    filled.nightly_runs = nightly
    return filled


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup.sh as root (apt-get install chromium)")
    if not VENDOR.exists():
        pytest.fail(f"{VENDOR} is missing: run scripts/setup.sh (npm ci and the copy of Chart.js)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class Watched:
    page: object
    errors: list = field(default_factory=list)
    dialogs: list = field(default_factory=list)
    outside: list = field(default_factory=list)


@pytest.fixture
def watched(browser, live_server):
    """A fresh browser context and page; console errors, uncaught exceptions,
    dialogs, and any request that leaves the server are recorded."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    w = Watched(page)
    page.on("console", lambda m: w.errors.append(f"console {m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: w.errors.append(f"page error: {e}"))

    def dialog(d):
        w.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.on("request", lambda r: w.outside.append(r.url)
            if not r.url.startswith((live_server.url, "data:")) else None)
    page.set_default_timeout(15_000)
    yield w
    context.close()


# --- the published posts' claims beside lab runs (test_claim_check, test_layout) ---


E2E = [ROOT / "tests" / "fixtures" / "e2e-check" / f"guest-{i:02d}" / "bundle" for i in range(3)]
LOOP = {"name": "loop0", "class": "hdd", "path": "/dev/loop0", "rotational": True,
        "model": "loop device backed by a file on the local disk"}


@pytest.fixture
def claims(store):
    """On top of the dashboard's store: lab-3 ran f2fs-dio-write labelled as the
    post's sides (before: 5,000 KiB/s, patched: 10,000, on an SD card); local-1
    ran odirect-vs-readers on a loop device labelled as the post's 2.6.32-rc7
    and for-2.6.33 and measured no change (17,480 KiB/s both); the virtual lab
    sent the e2e-check series' three real bundles (QEMU's hdd)."""
    from bundle_maker import calibration_bundles, planted_bundle

    post = uploader("claims-agent")
    for i, (label, bw) in enumerate([("before", 5000), ("patched", 10000)]):
        doc = planted_bundle({"write.bw_kib_s": [bw + e for e in NOISE]}, kernel=claim_kernel(300 + i),
                             started_at=f"2024-06-01T0{i}:00:00Z", host="lab-3", matrix="claims")
        doc["label"] = label
        if i == 0:  # lab-3's record of its noise between boots (one run a side)
            for boot in calibration_bundles(doc):
                post(boot)
        post(doc)
    for i, label in enumerate(["2.6.32-rc7", "for-2.6.33"]):
        doc = planted_bundle({"write.bw_kib_s": [17480 + e for e in NOISE],
                              "read.bw_kib_s": [90000 + 10 * e for e in NOISE]},
                             kernel=claim_kernel(400 + i), started_at=f"2024-06-02T0{i}:00:00Z",
                             host="local-1", study="odirect-vs-readers", matrix="odirect")
        doc.update(label=label, host={"name": "local-1", "kind": "local"}, devices=[LOOP])
        cell = doc["cells"][0]
        cell.update(id="odirect-vs-readers/loop0/ext4", device="loop0", filesystem="ext4")
        for rep in cell["repetitions"]:
            for sample in rep["samples"]:
                sample["group"] = "writer" if sample["metric"].startswith("write") else "readers"
        if i == 0:
            for boot in calibration_bundles(doc):
                post(boot)
        post(doc)
    from bundle_maker import recorded_boots
    from iowatch import bundle

    for doc in recorded_boots():  # the virtual lab's record of its noise between boots
        post(doc)
    for path in E2E:
        post(json.loads(bundle.to_wire(path)))
    return store
