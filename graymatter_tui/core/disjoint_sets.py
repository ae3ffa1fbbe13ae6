"""Groups that grow by joining pairs (union-find with path halving): near-duplicates in a
batch, duplicates among an agent's facts."""

from __future__ import annotations


class DisjointSets:
    def __init__(self, size: int) -> None:
        self._parent = list(range(size))

    def find(self, i: int) -> int:
        """The group of `i`, named by one of its members."""
        parent = self._parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(self, keep: int, other: int) -> None:
        """`other`'s group joins `keep`'s, which keeps its name."""
        self._parent[self.find(other)] = self.find(keep)

    def groups(self) -> dict[int, list[int]]:
        """Each group's members in order, the groups in the order of their first member."""
        found: dict[int, list[int]] = {}
        for i in range(len(self._parent)):
            found.setdefault(self.find(i), []).append(i)
        return found
