"""The tree definition of nested arguments and results: one class, decoded in one place."""

from __future__ import annotations

import collections

import numpy as np

from dy2st.runtime.pytree import LEAF, TreeDef, flatten, unflatten

Point = collections.namedtuple("Point", "x y")


def test_flatten_then_unflatten_gives_the_value_back():
    value = {"w": (np.zeros(3), [np.ones((2, 2)), 4]), "p": Point(np.arange(2), None), "s": "relu"}
    leaves: list = []
    treedef = flatten(value, leaves)
    assert len(leaves) == 3
    rebuilt = unflatten(treedef, leaves)
    assert rebuilt.keys() == value.keys() and rebuilt["s"] == "relu" and rebuilt["p"].y is None
    assert isinstance(rebuilt["p"], Point) and rebuilt["w"][1][1] == 4
    assert rebuilt["w"][0] is leaves[0]


def test_treedefs_are_cache_keys_by_shape_dtype_and_constant_value():
    def key(value):
        return flatten(value, [])

    assert key((np.zeros(3), 2)) == key((np.ones(3), 2))
    assert hash(key((np.zeros(3), 2))) == hash(key((np.ones(3), 2)))
    assert key((np.zeros(3), 2)) != key((np.zeros(4), 2))
    assert key((np.zeros(3), 2)) != key((np.zeros(3, np.float32), 2))
    assert key((np.zeros(3), 2)) != key((np.zeros(3), 3))


def test_structure_drops_shapes_and_leaf_paths_name_the_leaves():
    a = flatten({"w": [np.zeros(3), np.zeros(2)]}, [])
    b = flatten({"w": [np.zeros(5), np.zeros(1, np.int8)]}, [])
    assert a != b and a.structure() == b.structure()
    assert a.leaf_paths("params") == ["params_w_0", "params_w_1"]
    assert flatten(np.zeros(2), []).kind == LEAF
    assert a.map_leaves(lambda leaf: TreeDef(LEAF)) == a.structure()
