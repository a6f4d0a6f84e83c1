"""import-reproductions: the kept reproductions of the seeds (tests/fixtures/reproductions)
become the lab's runs in the store, once, found by their directory names; a broken or
partial directory is refused with the file at fault, before anything is stored."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from iowatch import bundle, resources
from iowatch.commands.import_reproductions import kept_reproductions, stored_bundles
from iowatch.claims.seeds import SeedError, checked_variants, find_seed
from iowatch.studies import load_studies
from iowatch_web.results.models import Run, Sample

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "tests" / "fixtures" / "reproductions"
IOWATCH = str(Path(sys.executable).parent / "iowatch")


@pytest.fixture(scope="module")
def studies():
    return load_studies(resources.studies_dir())


def _recorded_bundles(check: Path, studies) -> list[Path]:
    """The bundles check.json names, each run of each measured variant."""
    seed = find_seed(check.name.split("-")[1], studies)
    variants, _ = checked_variants(check, seed)
    return [p for v in variants if v.measured for p in v.bundles]


def _pairs(doc: dict) -> int:
    """Repetitions of a ratio study's ext4 cell with a raw repetition of the same index in the run."""
    by = {}
    for c in doc["cells"]:
        by[c["study"], c["device"], c["filesystem"]] = {
            r["index"] for r in c["repetitions"]
            if any(s["metric"] == "read.iops" and s.get("job") is None for s in r["samples"])}
    return sum(len(idx & by.get((st, dev, "raw"), set()))
               for (st, dev, fs), idx in by.items() if st == "ext4-dio-randread" and fs == "ext4")


@pytest.mark.django_db
def test_every_kept_reproduction_is_stored_once_with_its_labels(studies, tmp_path):
    kept = kept_reproductions(KEPT, studies)
    assert [k.check_dir.name for k in kept] == sorted(
        d.name for d in KEPT.iterdir() if d.is_dir() and d.name.startswith("seed-"))
    recorded = [p for k in kept for p in _recorded_bundles(k.check_dir, studies)]
    assert [p for k in kept for _, p in k.bundles] == recorded
    before = {p: (p / "bundle.json").read_bytes() for p in recorded}

    dirs = [str(d) for d in stored_bundles(kept, studies, tmp_path / "out")]
    call_command("ingest_bundle", *dirs, stdout=StringIO())
    docs = [bundle.load(p) for p in recorded]
    assert {str(r) for r in Run.objects.values_list("run_id", flat=True)} == {d["run_id"] for d in docs}
    samples = Sample.objects.count()
    # Imported again, from copies made again: nothing new.
    again = StringIO()
    call_command("ingest_bundle", *map(str, stored_bundles(kept, studies, tmp_path / "again")),
                 stdout=again)
    assert again.getvalue().count("already stored") == len(dirs)
    assert Run.objects.count() == len(dirs) and Sample.objects.count() == samples
    # The kept files are read, never written; the store has one ratio per repetition pair.
    assert {p: (p / "bundle.json").read_bytes() for p in recorded} == before
    assert Sample.objects.filter(metric_id="ratio.fs_to_raw", job__isnull=True).count() == \
        sum(_pairs(d) for d in docs)
    # Each variant's runs carry the post's label of the side it stands for.
    for k in kept:
        for index, label in k.seed.run_labels().items():
            ids = {bundle.load(p)["run_id"] for i, p in k.bundles if i == index}
            assert ids and set(Run.objects.filter(run_id__in=ids)
                               .values_list("label", flat=True)) == {label}


def _copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "kept"
    shutil.copytree(KEPT / "seed-001", root / name)
    return root


def test_a_new_seed_directory_is_found_by_its_name(tmp_path, studies):
    root = _copy(tmp_path, "seed-001")
    shutil.copytree(root / "seed-001", root / "seed-001-rerun")
    (root / "notes").mkdir()  # not a seed-* directory: not a reproduction
    kept = kept_reproductions(root, studies)
    assert [k.check_dir.name for k in kept] == ["seed-001", "seed-001-rerun"]
    assert len(kept[0].bundles) == len(kept[1].bundles) == len(_recorded_bundles(KEPT / "seed-001", studies))


def _refused(root: Path) -> str:
    out = subprocess.run([IOWATCH, "import-reproductions", str(root)], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "stored" not in out.stdout  # refused before the store is reached
    return out.stderr


def test_a_broken_or_partial_directory_is_refused_naming_the_file(tmp_path, studies):
    root = _copy(tmp_path, "seed-001")
    check = root / "seed-001"
    # A bundle.json cut short.
    manifest = check / "guest-02" / "bundle" / "bundle.json"
    text = manifest.read_text()
    manifest.write_text(text[: len(text) // 2])
    assert str(manifest) in _refused(root)
    with pytest.raises(SeedError, match=str(manifest)):
        kept_reproductions(root, studies)
    manifest.write_text(text)
    # A round's bundle missing: check.json names it.
    shutil.rmtree(check / "variant-01-round2")
    err = _refused(root)
    assert str(check / "check.json") in err and "guest-01-round2/bundle" in err
    # ... and not read from where it was recorded, when that path holds a bundle
    # on this machine (a later run written there): the kept directory is the data.
    doc = json.loads((check / "check.json").read_text())
    doc["variants"][1]["extra_bundles"][1] = str(KEPT / "seed-001" / "variant-01-round2" /
                                                 "guest-01-round2" / "bundle")
    (check / "check.json").write_text(json.dumps(doc))
    err = _refused(root)
    assert str(check / "check.json") in err and "is not under" in err
    (check / "check.json").write_text((KEPT / "seed-001" / "check.json").read_text())
    shutil.copytree(KEPT / "seed-001" / "variant-01-round2", check / "variant-01-round2")
    # A variant's run without the post's label (not made by iowatch reproduce).
    doc = json.loads(manifest.read_text())
    doc["label"] = "patch 2"
    manifest.write_text(json.dumps(doc))
    err = _refused(root)
    assert str(manifest) in err and "'DIO_LOCKING'" in err
    manifest.write_text(text)
    # No check.json at all, and a directory not named after a seed.
    (check / "check.json").rename(check / "check.json.kept")
    assert f"{check}: no check.json" in _refused(root)
    (check / "check.json.kept").rename(check / "check.json")
    check.rename(root / "seed-one")
    assert f"{root / 'seed-one'}: a kept reproduction's directory is named seed-NNN" in _refused(root)
