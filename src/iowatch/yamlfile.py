"""Read a YAML data file and check it against a JSON schema, with line numbers.

Studies, matrices and the inventory are data. A typo in one
must never silently drop a job (LKP's weak spot), so every file is validated
and a refusal names the file, the line, the key and what is allowed.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml


class DataFileError(ValueError):
    def __init__(self, path: str, line: int | None, message: str):
        self.path, self.line = path, line
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


@lru_cache(maxsize=None)
def schema(name: str) -> dict:
    return json.loads(resources.files("iowatch").joinpath(f"schemas/{name}").read_text())


def _line_of(node: yaml.Node | None, path: list) -> int | None:
    """The line of the deepest node along a jsonschema error path."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == key:
                    node = v
                    line = k.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _describe(error) -> str:
    """jsonschema's message, made to say which key and what is allowed."""
    import jsonschema

    where = ".".join(str(p) for p in error.absolute_path) or "the top level"
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        return (f"unknown key {', '.join(map(repr, extra))} in {where}; "
                f"allowed: {', '.join(allowed)}")
    if error.validator == "required":
        return f"{where}: {error.message}"
    if error.validator == "enum":
        return f"{where}: {error.instance!r} is not allowed; allowed: " + \
            ", ".join(map(repr, error.validator_value))
    best = jsonschema.exceptions.best_match([error])
    return f"{where}: {best.message}"


def load(path: str | Path, schema_name: str) -> Any:
    """Parse and validate; raises DataFileError naming file, line, key and what is allowed."""
    import jsonschema

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise DataFileError(str(path), None, f"cannot read: {e.strerror}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise DataFileError(str(path), mark.line + 1 if mark else None,
                            f"not valid YAML: {getattr(e, 'problem', e)}") from None
    validator = jsonschema.Draft7Validator(schema(schema_name))
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        # The deepest error is the most specific; oneOf/anyOf wrap theirs in context.
        e = max(errors, key=lambda e: len(e.absolute_path))
        while e.context:
            e = max(e.context, key=lambda c: len(c.absolute_path))
        where = list(e.absolute_path)
        if e.validator == "additionalProperties":
            # Point at the unknown key itself, not at the mapping that holds it.
            extra = sorted(set(e.instance) - set(e.schema.get("properties", {})))
            where += extra[:1]
        raise DataFileError(str(path), _line_of(node, where), _describe(e))
    return data
