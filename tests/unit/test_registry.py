"""The one registry: lazy targets, the base-class check, suggestions, and entry points
from an installed distribution (a dist-info directory on sys.path, as pip leaves it)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from apmbench.adapters.sdk.registry import Registry, RegistryError


class Base:
    pass


class Good(Base):
    pass


class Other:
    pass


def _registry(**kw: object) -> Registry[type[Base]]:
    builtins = {"good": f"{__name__}:Good", "other": f"{__name__}:Other", "gone": "no_such_mod:X"}
    return Registry("widget", builtins, Base, group="apmbench_grpc.test_widgets", **kw)  # type: ignore[arg-type]


def test_a_builtin_loads_and_is_checked_against_the_base() -> None:
    reg = _registry()
    assert reg.load("good") is Good
    with pytest.raises(RegistryError, match=r"'other'.*is not a subclass of Base"):
        reg.load("other")
    with pytest.raises(RegistryError, match="cannot import 'no_such_mod' for widget 'gone'"):
        reg.load("gone")


def test_an_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(RegistryError, match=r"unknown widget 'godo' \(did you mean 'good'\?\)"):
        _registry().load("godo")
    with pytest.raises(RegistryError) as e:
        _registry().load("zzz")
    assert "did you mean" not in str(e.value)
    assert "use one of good, other, gone" in str(e.value)


def test_a_function_registry_checks_callables() -> None:
    reg: Registry[Callable[..., object]] = Registry(
        "renderer", {"len": "builtins:len", "pi": "math:pi"}, "collections.abc:Callable",
        classes=False,
    )  # fmt: skip
    assert reg.load("len") is len
    with pytest.raises(RegistryError, match="math:pi is not a Callable"):
        reg.load("pi")


def _install(site: Path, dist: str, lines: str) -> None:
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[apmbench_grpc.test_widgets]\n{lines}\n")


def test_entry_points_add_names_and_a_clash_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path, "widgets_a", f"extra = {__name__}:Good\ngood = {__name__}:Other")
    _install(tmp_path, "widgets_b", f"extra = {__name__}:Good")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    reg = _registry()
    assert reg.names() == ["good", "other", "gone", "extra"]
    # A plugin that takes a built-in's name would silently run something else: refused.
    with pytest.raises(RegistryError, match=r"'good' is registered twice \(by widgets_a"):
        reg.load("good")
    assert reg.entry("other").source == "built-in"  # the other names still resolve
    with pytest.raises(RegistryError, match="'extra' is registered twice"):
        reg.load("extra")


def test_a_plugin_name_loads_lazily(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lazy_widget.py").write_text(f"from {__name__} import Base\nclass W(Base): ...\n")
    _install(tmp_path, "widgets_c", "lazy = lazy_widget:W")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    reg = _registry()
    assert "lazy" in reg
    assert "lazy_widget" not in sys.modules
    assert reg.load("lazy").__name__ == "W"
    assert reg.entry("lazy").source == "widgets_c"
    monkeypatch.delitem(sys.modules, "lazy_widget")
