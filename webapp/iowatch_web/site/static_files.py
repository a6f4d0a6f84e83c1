"""Static files with hashed names, kept compressed: after `collectstatic`
(`iowatch serve` and the web image run it), `{% static %}` names each file by
its content's hash, and whitenoise serves those names with a year's
Cache-Control (immutable) and their gzip copies. Without a collectstatic (the
test client, a live server in a test, runserver), or when a static file was
edited after the last one, the plain names are served through the finders, as
before: a stale manifest never serves yesterday's stylesheet."""
from __future__ import annotations

import os

from whitenoise.storage import CompressedManifestStaticFilesStorage


def _newest_source() -> float:
    """The newest modification time of the files the finders would collect."""
    from django.contrib.staticfiles import finders

    return max((os.stat(storage.path(path)).st_mtime
                for finder in finders.get_finders() for path, storage in finder.list([])),
               default=0.0)


class HashedStaticFiles(CompressedManifestStaticFilesStorage):
    # JavaScript's sourceMappingURL comments are left as they are: Chart.js's
    # names a .map that npm's copy (scripts/setup.sh) does not bring.
    patterns = tuple((glob, rules) for glob, rules in
                     CompressedManifestStaticFilesStorage.patterns if glob != "*.js")

    def load_manifest(self) -> tuple[dict, str]:
        hashed, manifest_hash = super().load_manifest()
        if hashed and os.stat(self.path(self.manifest_name)).st_mtime < _newest_source():
            return {}, ""  # a source changed since collectstatic: the plain names
        return hashed, manifest_hash

    def stored_name(self, name: str) -> str:
        if not self.hashed_files:  # no manifest (or a stale one): collectstatic has not run since
            return name
        try:
            return super().stored_name(name)
        except ValueError:  # a file added after the last collectstatic: its plain name
            return name
