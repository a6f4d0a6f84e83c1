"""What iowatch reads at run time that is not code, found where it is installed.

The studies, the matrices, the kernel config fragments and the bundle
schemas ship inside the package (src/iowatch/data, src/iowatch/schemas), so
an installed wheel runs the same as a checkout. In a checkout, `jobs/studies`,
`jobs/*.yml` and `kernels/config` are links to the same files, so the paths a
maintainer types (`--matrix jobs/studies/xfs-smallfile-writeback.yml`) keep
working.

Names are looked up here and nowhere else (docs/architecture.md, "Where
things are"):
- `studies_dir(override)`: `--studies DIR`, else $IOWATCH_STUDIES, else the
  packaged studies;
- `matrix_path(name)`: a file that exists, else a packaged matrix or study of
  that name (`smoke`, `check-quick`, `xfs-smallfile-writeback`);
- `kernel_config_dir()`: the packaged config fragments.
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def _packaged(*parts: str) -> Path:
    # A wheel installs as files on disk (pip never installs iowatch zipped), so
    # the Traversable that importlib.resources gives is a real directory; Path()
    # of it is what the loaders, the kernel build and the web app need.
    return Path(str(resources.files("iowatch").joinpath("data", *parts)))


def jobs_dir() -> Path:
    """The packaged matrices, with their studies in studies/ beside them."""
    return _packaged("jobs")


def studies_dir(override: str | os.PathLike | None = None) -> Path:
    """Where the study files are: the caller's directory, $IOWATCH_STUDIES, or
    the packaged studies."""
    chosen = override or os.environ.get("IOWATCH_STUDIES")
    return Path(chosen) if chosen else _packaged("jobs", "studies")


def kernel_config_dir() -> Path:
    """The kernel config fragments (iowatch.config, no-debug.config)."""
    return _packaged("kernel", "config")


def packaged_inventory() -> Path:
    """The inventory iowatch ships: the local target, the virtual lab, an example lab."""
    return _packaged("hardware-inventory.yml")


def matrix_names() -> list[str]:
    """The packaged matrices and studies, by name."""
    return sorted([p.stem for p in jobs_dir().glob("*.yml")]
                  + [p.stem for p in (jobs_dir() / "studies").glob("*.yml")])


def matrix_path(name_or_path: str | os.PathLike) -> Path:
    """A matrix or study file: the path given when it exists, else the
    packaged matrix or study of that name (with or without .yml). Unknown names
    come back as the path given, so the loader's error names it."""
    given = Path(name_or_path)
    if given.exists():
        return given
    stem = given.name[:-4] if given.name.endswith(".yml") else given.name
    if given.parent in (Path("."), Path("jobs"), Path("jobs/studies")):
        for candidate in (jobs_dir() / f"{stem}.yml", jobs_dir() / "studies" / f"{stem}.yml"):
            if candidate.is_file():
                return candidate
    return given


def device_models() -> Path:
    """The virtual lab's device models' profiles (iowatch.mechanics.profiles)."""
    return _packaged("device-models.yml")
