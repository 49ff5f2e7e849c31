"""A read-only mapping made from another by a few changes, sharing the other's table.

Why: a cluster's allocation :class:`~placer.topology.allocations.State` is an immutable snapshot, and
each placement or release makes a new one. With plain dicts, every new snapshot copied the table of all
running jobs (8,000 of them on the openb cluster at full load: 50-300 us per commit, more than the rest of
the commit), so a one-job commit cost time in proportion to the cluster, not to what changed. A
:class:`Layered` keeps the old table (never changed again) and, on top, the keys set and deleted since;
once those grow past an eighth of the table, a new snapshot folds them into a fresh table. A change then
costs a copy of the changes kept on top, and folding costs a constant per change on average. A walk over
all of it (``running_jobs()``, the checker) makes the whole dict once per snapshot, at C speed.

It behaves as a ``dict`` built by the same changes would: the same keys, values and iteration order
(a replaced key keeps its place; a new or re-added key goes last), and it compares equal to that dict.

>>> a = Layered({"x": 1, "y": 2})
>>> e = a.edit()
>>> e["z"] = 3
>>> del e["x"]
>>> b = e.done()
>>> b, a, b == {"y": 2, "z": 3}
({'y': 2, 'z': 3}, {'x': 1, 'y': 2}, True)
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Generic, TypeVar

__all__ = ["Layered", "LayeredEdit"]

K = TypeVar("K")
V = TypeVar("V")

#: Changes kept on top before a new snapshot folds them into its own table: at least this many, and up
#: to an eighth of the table (so folding costs about eight key copies per change, on average).
MIN_FOLD = 64


class _Lookup(Generic[K, V]):
    """Reading one key through the layers: set since, else deleted since, else the shared table."""

    __slots__ = ()
    _base: dict[K, V]
    _top: dict[K, V]
    _gone: frozenset[K] | set[K]

    def __getitem__(self, key: K) -> V:
        top = self._top
        if key in top:
            return top[key]
        if key in self._gone:
            raise KeyError(key)
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._top or (key not in self._gone and key in self._base)

    def get(self, key: K, default: Any = None) -> Any:
        top = self._top
        if key in top:
            return top[key]
        if key in self._gone:
            return default
        return self._base.get(key, default)


class Layered(_Lookup[K, V], Mapping[K, V]):
    """An immutable mapping: a shared table, the keys set since (``top``) and the keys deleted since
    (``gone``); see the module docstring."""

    __slots__ = ("_base", "_flat", "_gone", "_len", "_top")

    def __init__(self, items: Mapping[K, V] | None = None) -> None:
        self._base: dict[K, V] = dict(items) if items else {}
        self._top: dict[K, V] = {}
        self._gone: frozenset[K] = frozenset()
        self._len = len(self._base)
        self._flat: dict[K, V] | None = self._base

    @classmethod
    def _of(cls, base: dict[K, V], top: dict[K, V], gone: frozenset[K], size: int) -> Layered[K, V]:
        out = cls.__new__(cls)
        out._base, out._top, out._gone, out._len = base, top, gone, size
        out._flat = None if top or gone else base
        return out

    def _dict(self) -> dict[K, V]:
        """The contents as one dict, made on the first walk over them and kept (the snapshot never
        changes): the table, less the deleted keys, updated with the keys set since — so replaced keys
        keep their place and new or re-added ones come last, in the order they were set. Never changed
        by anyone: callers only read it."""
        flat = self._flat
        if flat is None:
            flat = dict(self._base)
            for k in self._gone:
                del flat[k]
            flat.update(self._top)
            self._flat = flat
        return flat

    def edit(self) -> LayeredEdit[K, V]:
        """A mutable draft of the next snapshot (this one never changes)."""
        return LayeredEdit(self)

    def __iter__(self) -> Iterator[K]:
        return iter(self._dict())

    def keys(self) -> KeysView[K]:
        return self._dict().keys()

    def values(self) -> ValuesView[V]:
        return self._dict().values()

    def items(self) -> ItemsView[K, V]:
        return self._dict().items()

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __reduce__(self) -> tuple[type[Layered[K, V]], tuple[dict[K, V]]]:
        return (type(self), (dict(self.items()),))


class LayeredEdit(_Lookup[K, V]):
    """The draft of a :class:`Layered`'s next snapshot: reads and writes like a dict; :meth:`done`
    freezes it. Costs a copy of the changes on top, never of the shared table."""

    __slots__ = ("_base", "_gone", "_len", "_top")

    def __init__(self, of: Layered[K, V]) -> None:
        self._base = of._base
        self._top = dict(of._top)
        self._gone: set[K] = set(of._gone)
        self._len = of._len

    def __setitem__(self, key: K, value: V) -> None:
        if key not in self:
            self._len += 1
        self._top[key] = value  # in the table and not deleted: replaced in place; else it goes last

    def __delitem__(self, key: K) -> None:
        if key in self._top:
            del self._top[key]
            if key in self._base:
                self._gone.add(key)
        elif key in self._base and key not in self._gone:
            self._gone.add(key)
        else:
            raise KeyError(key)
        self._len -= 1

    def pop(self, key: K, default: Any = None) -> Any:
        if key not in self:
            return default
        value = self[key]
        del self[key]
        return value

    def done(self) -> Layered[K, V]:
        """The snapshot: the changes on top of the shared table, or folded into a new table when they
        are many (see :data:`MIN_FOLD`)."""
        base, top, gone = self._base, self._top, self._gone
        if len(top) + len(gone) > max(MIN_FOLD, len(base) >> 3):
            folded = Layered._of(base, top, frozenset(gone), self._len)._dict()
            return Layered._of(folded, {}, frozenset(), self._len)
        return Layered._of(base, top, frozenset(gone), self._len)
