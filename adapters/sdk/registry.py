"""One registry of named, lazily imported objects: suites, systems, runtimes, renderers.

Every name maps to a "module:attribute" target, from two sources: the
built-ins this repository lists, and Python entry points of an installed
distribution (`[project.entry-points."apmbench_grpc.systems"]` in a method's
pyproject.toml), so `pip install my-method` adds a system and `pip install
my-benchmark` a suite with no edit here. A target is imported only when its
name is asked for, so a model-based system's torch import or a suite's numpy
renderer never slows a command that does not use it.

It lives in the SDK, not the harness, because both sides need it: the
adapters (which must never import the harness) register the reference
systems, and the harness registers suites, runtimes and renderers; the
harness already depends on the SDK. Standard library only, so importing the
SDK stays cheap.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from apmbench.adapters.sdk.errors import ApmbenchError

T = TypeVar("T")

ENTRY_POINT_PREFIX = "apmbench_grpc."
"""Entry-point groups are this prefix plus the registry's kind in the plural
(`apmbench_grpc.suites`, `apmbench_grpc.systems`, `apmbench_grpc.runtimes`,
`apmbench_grpc.renderers`)."""


class RegistryError(ApmbenchError):
    """A name no registry entry has, a target that does not import, or one of the wrong type."""


@dataclass(frozen=True)
class Entry:
    """One registered name: where its object is, and who registered it."""

    name: str
    target: str
    """"module:attribute"."""
    source: str
    """"built-in", or the distribution whose entry point registered it."""


class Registry(Generic[T]):
    """Names to lazily imported objects of one kind, checked against a base class on load.

    `base` is what a loaded target must be: a class deriving from it when
    `classes` (suites, systems, runtimes), else an instance of it (a renderer:
    `collections.abc.Callable`). A "module:attribute" base is imported only at the
    first load, so naming the registry imports nothing heavy."""

    def __init__(
        self,
        kind: str,
        builtins: Mapping[str, str],
        base: type[object] | str,
        *,
        classes: bool = True,
        error: type[ApmbenchError] = RegistryError,
        group: str | None = None,
        also: str = "",
    ) -> None:
        self.kind = kind
        self.group = group if group is not None else f"{ENTRY_POINT_PREFIX}{kind}s"
        self._builtins = dict(builtins)
        self._base = base
        self._classes = classes
        self._error = error
        self._plugins: dict[str, Entry] | None = None
        self._clashes: dict[str, list[str]] = {}
        self._also = also
        """Appended to the list of known names, e.g. ", or 'package.module:ClassName'"."""

    def _plugin_entries(self) -> dict[str, Entry]:
        """The installed distributions' entry points of this registry's group, read once.
        A plugin may not take a built-in's name or another plugin's: such a name is kept
        aside and refused when asked for, so one bad plugin cannot break the others."""
        if self._plugins is None:
            from importlib.metadata import entry_points

            found: dict[str, Entry] = {}
            for ep in entry_points(group=self.group):
                dist = ep.dist.name if ep.dist is not None else "an unnamed distribution"
                if ep.name in self._builtins or ep.name in found:
                    self._clashes.setdefault(ep.name, []).append(dist)
                    continue
                found[ep.name] = Entry(ep.name, ep.value, dist)
            self._plugins = found
        return self._plugins

    def names(self) -> list[str]:
        """Every registered name: the built-ins in their order, then the plugins sorted."""
        return [*self._builtins, *sorted(self._plugin_entries())]

    def entries(self) -> list[Entry]:
        built = [Entry(n, t, "built-in") for n, t in self._builtins.items()]
        plugins = self._plugin_entries()
        return built + [plugins[n] for n in sorted(plugins)]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._builtins or name in self._plugin_entries())

    def entry(self, name: str) -> Entry:
        """The entry of `name`; an unknown name is refused with the closest known ones."""
        plugins = self._plugin_entries()
        if name in self._clashes:
            raise self._error(
                f"{self.kind} {name!r} is registered twice (by "
                f"{', '.join(self._clashes[name])} as well): uninstall one of them"
            )
        if name in self._builtins:
            return Entry(name, self._builtins[name], "built-in")
        if name in plugins:
            return plugins[name]
        known = self.names()
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        raise self._error(
            f"unknown {self.kind} {name!r}{hint}: use one of {', '.join(known)}{self._also}"
        )

    def load(self, name: str) -> T:
        """The object registered as `name`, imported now and checked against the base."""
        return self.load_target(self.entry(name).target, name)

    def load_target(self, target: str, name: str | None = None) -> T:
        """The object at a "module:attribute" target (a registered one, or one given
        directly), checked against the base."""
        what = f"{self.kind} {name!r}" if name is not None else f"{self.kind} {target!r}"
        module_name, sep, attr = target.partition(":")
        if not sep or not module_name or not attr:
            raise self._error(f"{what}: target {target!r} is not 'package.module:Attribute'")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise self._error(f"cannot import {module_name!r} for {what}: {e}") from e
        obj = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise self._error(f"{what}: {module_name!r} has no attribute {attr!r}")
            obj = getattr(obj, part)
        self._check(obj, what, target)
        return cast(T, obj)

    def _base_class(self) -> type[object]:
        if isinstance(self._base, str):
            module_name, _, attr = self._base.partition(":")
            self._base = cast(type[object], getattr(importlib.import_module(module_name), attr))
        return self._base

    def _check(self, obj: object, what: str, target: str) -> None:
        base = self._base_class()
        if self._classes:
            if not (isinstance(obj, type) and issubclass(obj, base)):
                raise self._error(f"{what}: {target} is not a subclass of {base.__name__}")
        elif not isinstance(obj, base):
            raise self._error(f"{what}: {target} is not a {base.__name__}")
