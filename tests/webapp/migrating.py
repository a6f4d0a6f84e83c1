"""Migrating the test database to a named migration and back, for the tests of
a data migration."""
from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(target):
    """The database at `target` ([(app, migration)]); the apps of that state."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.fixture
def back_to_the_newest():
    """Whatever the test migrated to, the tests after it get the newest schema."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
