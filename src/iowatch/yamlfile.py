"""Read a YAML data file and check it against a JSON schema, with line numbers.

Studies, matrices and the inventory are data. A typo in one
must never silently drop a job (LKP's weak spot), so every file is validated
and a refusal names the file, the line, the key and what is allowed.

This is the one YAML reader for them: it refuses a key given twice in one
mapping (plain YAML keeps the last, so `min_effect_pct` given twice would load
silently with the second value), and keeps the node tree so a refusal can
point at the line (child, line_of, line_at).
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
        self.path, self.line, self.message = path, line, message
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


@lru_cache(maxsize=None)
def schema(name: str) -> dict:
    return json.loads(resources.files("iowatch").joinpath(f"schemas/{name}").read_text())


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (YAML would keep the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice (first on line {seen[key] + 1})",
                    key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def parse(text: str, file: str) -> tuple[Any, yaml.Node | None]:
    """(data, node tree) of a YAML text, read once. Text that is not YAML, or a
    key given twice, raises DataFileError naming the file and the line."""
    loader = UniqueKeyLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        what = "" if isinstance(e, yaml.constructor.ConstructorError) else "not valid YAML: "
        raise DataFileError(file, mark.line + 1 if mark else None,
                            what + str(getattr(e, "problem", None) or e)) from None
    finally:
        loader.dispose()
    return data, root


def child(node: yaml.Node | None, key: Any) -> tuple[yaml.Node | None, yaml.Node | None]:
    """(key node, value node) of `key` in a mapping node, or (None, item) of a
    sequence node; (None, None) when it is not there."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == str(key):
                return k, v
    elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return None, node.value[key]
    return None, None


def line_of(node: yaml.Node | None) -> int | None:
    """A node's line, counted from 1."""
    return node.start_mark.line + 1 if node is not None else None


def line_at(root: yaml.Node | None, path: list) -> int | None:
    """The line of the deepest node along a path (such as a jsonschema error's):
    a mapping entry's key, a sequence's item."""
    node, line = root, line_of(root)
    for key in path:
        key_node, value = child(node, key)
        if value is None:
            break
        node, line = value, line_of(key_node or value)
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
    return load_with_nodes(path, schema_name)[0]


def load_with_nodes(path: str | Path, schema_name: str) -> tuple[Any, yaml.Node | None]:
    """load(), with the node tree, for checks beyond the schema to name their line (line_at)."""
    import jsonschema

    path = Path(path)
    data, node = parse(read(path), str(path))
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
        raise DataFileError(str(path), line_at(node, where), _describe(e))
    return data, node


def read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise DataFileError(str(path), None, f"cannot read: {e.strerror}") from None
