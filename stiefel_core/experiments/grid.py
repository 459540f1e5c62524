"""Arms over a grid of one setting: ``"<arm>@<key>=<value>"`` (``"stiefel@wd=0.3"``), so that one
results file holds every cell of a map and a cell's runs stay paired by seed."""

from __future__ import annotations

__all__ = ["grid_arm", "parse_grid_arm", "grid_arms"]


def grid_arm(arm: str, key: str, value: float) -> str:
    """``(arm, key, value)`` -> ``"<arm>@<key>=<value>"``. Chapter: regimes."""
    return f"{arm}@{key}={value:g}"


def parse_grid_arm(name: str, key: str, arms: tuple[str, ...]) -> tuple[str, float]:
    """``parse_grid_arm("stiefel@wd=0.3", "wd", arms)`` -> ``("stiefel", 0.3)``. Chapter: regimes."""
    arm, sep, value = name.partition(f"@{key}=")
    if not sep or arm not in arms:
        raise ValueError(f"grid arm {name!r}: expected '<arm>@{key}=<value>' with arm one of {arms}")
    try:
        return arm, float(value)
    except ValueError:
        raise ValueError(f"grid arm {name!r}: {value!r} is not a number") from None


def grid_arms(arms: tuple[str, ...], key: str, values: tuple[float, ...]) -> tuple[str, ...]:
    """Every arm at every value, value-major. Chapter: regimes."""
    return tuple(grid_arm(arm, key, value) for value in values for arm in arms)
