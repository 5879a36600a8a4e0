"""Parse YAML frontmatter while keeping where each value sits, so problems get line numbers.

``yaml`` is imported here, inside the functions: importing rentcheck must not pull it in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

__all__ = ["ParsedYaml", "parse_yaml"]


@dataclass
class ParsedYaml:
    data: Any = None
    error: str | None = None  # the YAML syntax error, when the text does not parse
    error_line: int | None = None  # 0-based, relative to the YAML text
    duplicates: list[tuple[tuple[str | int, ...], int]] = field(default_factory=list)
    node: yaml.Node | None = None

    def line_of(self, path: tuple[str | int, ...]) -> int | None:
        """0-based line of the value at ``path`` (or of its nearest existing parent)."""
        import yaml

        node = self.node
        if node is None:
            return None
        line = node.start_mark.line
        for part in path:
            child = None
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.value == part:
                        child, line = value, key.start_mark.line
                        break
            elif (
                isinstance(node, yaml.SequenceNode)
                and isinstance(part, int)
                and 0 <= part < len(node.value)
            ):
                child = node.value[part]
                line = child.start_mark.line
            if child is None:
                return line
            node = child
        return line


def parse_yaml(text: str) -> ParsedYaml:
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        message = " ".join(str(exc).split())
        return ParsedYaml(error=message, error_line=mark.line if mark is not None else None)
    except (ValueError, TypeError, RecursionError) as exc:  # hostile input the loader chokes on
        return ParsedYaml(error=f"{type(exc).__name__}: {exc}")
    finally:
        loader.dispose()
    parsed = ParsedYaml(data=data, node=node)
    if node is not None and not _walk(node, (), parsed.duplicates, set()):
        # Aliases make a small file a huge tree (and comparing it explodes); a profile is
        # plain data and never needs them.
        return ParsedYaml(error="uses YAML aliases (*name), which a profile must not")
    return parsed


def _walk(
    node: yaml.Node,
    path: tuple[str | int, ...],
    duplicates: list[tuple[tuple[str | int, ...], int]],
    seen_nodes: set[int],
) -> bool:
    """Collect duplicate keys; False when a node is reached twice (an alias)."""
    import yaml

    if id(node) in seen_nodes:
        return False
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        # PyYAML keeps the last of two equal keys without a word; in a survival matrix that
        # silently flips a fact, so it is reported.
        keys: set[str] = set()
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else str(key)
            if name in keys:
                duplicates.append(((*path, name), key.start_mark.line))
            keys.add(name)
            if not _walk(value, (*path, name), duplicates, seen_nodes):
                return False
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            if not _walk(item, (*path, index), duplicates, seen_nodes):
                return False
    return True
