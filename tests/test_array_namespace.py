"""``x.__array_namespace__()`` in converted code: the ``numpy`` module, as NumPy 2 returns it, so
array-API style code (``xp = x.__array_namespace__(); xp.sum(x)``) stages NumPy's functions."""

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager


def normalize(x):
    xp = x.__array_namespace__()
    centered = x - xp.mean(x, axis=0)
    return centered / xp.sqrt(xp.sum(centered * centered, axis=0)), xp.zeros(x.shape[1])


def namespace_for_a_version(x):
    xp = x.__array_namespace__(api_version="2023.12")
    return xp.max(x)


def namespace_of_a_reduction(x):
    return x.sum().__array_namespace__().abs(x).sum()


@pytest.mark.parametrize("fn", [normalize, namespace_for_a_version, namespace_of_a_reduction])
def test_the_namespace_is_numpy(fn):
    assert_like_eager(fn, np.array([[1.0, -2.0], [3.0, 4.5], [0.5, 2.0]]))


def unknown_version(x):
    return x.__array_namespace__(api_version="1999.01").sum(x)


def test_an_unsupported_version_raises_value_error_at_the_line():
    assert_like_eager(unknown_version, np.ones(3))
    with pytest.raises(dy2st.GraphBuildError, match="1999.01"):
        dy2st.to_static(unknown_version)(np.ones(3))


def test_the_namespace_is_not_staged_as_an_op():
    graph = dy2st.to_static(namespace_for_a_version).graph(np.ones(3))
    assert [op.name for op in graph.walk()] == ["max", "return"]
