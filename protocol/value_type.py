"""``value_type``: ``dataclasses.dataclass`` for the immutable values made per request.

A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``: 1.9 us
for a 13-field BatchHeader against 0.24 us for a plain slotted one, and a Produce request
makes about nine such values (issue 19: 8% of the handling of a 1-record Produce). So the
values on the hot path are declared ``@value_type(frozen=True, slots=True)``: mypy (strict on
broker/, protocol/, storage/) checks them as frozen, which is where an assignment would be
caught; at run time they are plain slotted dataclasses with the same equality and the same
field hash (``unsafe_hash``), so they still work as dict keys and set members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dataclasses import dataclass as value_type
else:
    from dataclasses import dataclass

    def value_type(*, frozen: bool = False, slots: bool = False):
        return dataclass(slots=slots, unsafe_hash=frozen)


__all__ = ["value_type"]
