"""The range of a preset key as a control needs it, read from the schema (`schema.PRESET`).

The app's sliders and number boxes take their bounds from here, so a preset and the widget
that shows it allow the same values (one source of truth: the schema, read when asked, not
copied). Imports no Qt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import schema


@dataclass(frozen=True)
class KeyRange:
    """Bounds of a numeric preset key: `minimum`/`maximum` (None: unbounded), each strict when
    `*_open`; `unit` as the schema writes it."""

    minimum: float | None
    maximum: float | None
    minimum_open: bool = False
    maximum_open: bool = False
    unit: str = ""

    def legal(self, step: float) -> tuple[float, float]:
        """The smallest and largest values a control showing multiples of `step` may hold: a
        strict bound moved in by one step, an unbounded side at ±inf."""
        low = -math.inf if self.minimum is None else self.minimum + (step if self.minimum_open
                                                                     else 0.0)
        high = math.inf if self.maximum is None else self.maximum - (step if self.maximum_open
                                                                     else 0.0)
        return low, high


def key_field(path: str) -> schema.Field:
    """The schema's `Field` of a dotted key path such as ``"wind.speed"``."""
    table = schema.PRESET
    parts = path.split(".")
    for part in parts[:-1]:
        table = table[part]
    field = table[parts[-1]]
    if not isinstance(field, schema.Field):
        raise KeyError(f"{path} is a section, not a key")
    return field


def key_range(path: str) -> KeyRange:
    """The bounds of the numeric key `path` (``"tuning.damping_scale"``) in the schema now."""
    field = key_field(path)
    return KeyRange(field.min, field.max, field.min_open, field.max_open, field.unit)
