"""The OpenAPI description names each schema once (issue 42 item 6): two
classes of one name (a run's HostOut and a heartbeat's) became one component,
the later one winning, so every run's `host` was described with the fields
of a host's state."""
from __future__ import annotations

import typing

from pydantic import BaseModel

from iowatch_web.site.api import api

# ninja's wrappers of an operation's parameters and answers: inlined, never components.
NINJA_WRAPPERS = {"NinjaResponseSchema", "BodyParams", "QueryParams", "PathParams", "FileParams",
                  "FormParams", "HeaderParams", "CookieParams"}


def _models(annotation, seen: set) -> None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        seen.add(annotation)
        for field in annotation.model_fields.values():
            _models(field.annotation, seen)
        return
    for arg in typing.get_args(annotation):
        _models(arg, seen)


def described_models() -> set[type]:
    seen: set[type] = set()
    for _, router in api._routers:
        for view in router.path_operations.values():
            for operation in view.operations:
                for model in [*operation.models, *operation.response_models.values()]:
                    _models(model, seen)
    return {m for m in seen if m.__name__ not in NINJA_WRAPPERS}


def test_each_schema_name_is_one_class():
    by_name: dict[str, set[str]] = {}
    for model in described_models():
        by_name.setdefault(model.__name__, set()).add(f"{model.__module__}.{model.__qualname__}")
    assert {name: classes for name, classes in by_name.items() if len(classes) > 1} == {}


def test_a_runs_host_and_a_hosts_state_are_two_schemas():
    components = api.get_openapi_schema()["components"]["schemas"]
    run_host = components["RunDetail"]["properties"]["host"]["$ref"].rsplit("/", 1)[-1]
    assert run_host == "HostOut" and "phase" not in components["HostOut"]["properties"]
    assert {"phase", "reachable", "last_seen"} <= set(components["HostStateOut"]["properties"])
