"""JSON values made read-only once read: a model's config.json is read by the facts step and then shared by the
planner, the pre-flight and the early vLLM check, so none of them may change what the others see.

The frozen types subclass dict and list, so every `isinstance(value, dict)` guard that checks a hostile file's
shape keeps working, and json.dumps writes them as it writes their plain forms. A deep copy is the way to edit
one: it comes back plain and mutable."""

from __future__ import annotations

from typing import Any, NoReturn


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError("a JSON value read from a model's files is read-only here; edit a copy (copy.deepcopy)")


class _Frozen:
    """What both frozen types share: they pickle frozen, and a copy comes back as the plain type."""

    __slots__ = ()
    _plain: type = object  # dict or list

    def __reduce__(self) -> tuple:
        return type(self), (self._plain(self),)

    def __copy__(self) -> Any:
        return self._plain(self)

    def __deepcopy__(self, memo: dict) -> Any:
        return thaw(self)


class FrozenObject(_Frozen, dict):
    """A JSON object that refuses every change."""

    __slots__ = ()
    _plain = dict
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse


class FrozenArray(_Frozen, list):
    """A JSON array that refuses every change."""

    __slots__ = ()
    _plain = list
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse


def freeze(value: Any) -> Any:
    """`value` with every object and array in it read-only (strings, numbers, booleans and null as they are).
    Its depth is the parser's, which strict_json bounds."""
    if isinstance(value, dict):
        return value if isinstance(value, FrozenObject) else FrozenObject({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return value if isinstance(value, FrozenArray) else FrozenArray(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a JSON value."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value
