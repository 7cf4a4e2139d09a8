"""The generic layer: NumPy functions, ndarray methods and ufunc methods with no precise rule run
as ``numpy_call`` ops that call NumPy when the graph runs, with eager NumPy's results, types,
structures, views and in-place writes."""

from __future__ import annotations

import numpy as np
import pytest
from op_harness import assert_equivalent, assert_error_at, sample

import dy2st
from dy2st.ops.generic import NUMPY_CALL, callable_name, resolve

RNG = np.random.default_rng(12)


def generic_ops(fn, *args) -> list[str]:
    graph = dy2st.to_static(fn).graph(*args)
    return [op.attrs["function"] for op in graph.walk() if op.name == NUMPY_CALL]


def families(A, b, x):
    solved = np.linalg.solve(A, b)
    u, s, vt = np.linalg.svd(A)
    sign, logdet = np.linalg.slogdet(A)
    return (
        solved,
        np.linalg.det(A),  # a NumPy scalar, as eagerly
        s,
        sign * logdet,
        np.linalg.inv(A) @ b,
        np.linalg.eigvalsh(A @ A.T),
        np.fft.rfft(x),
        np.fft.fftshift(np.fft.fftfreq(7)),
        np.roll(x, 2),
        np.flip(x),
        np.diff(x, n=2, prepend=0.0),
        np.interp(x, np.linspace(0, 1, 5), np.arange(5.0)),
        np.polyval([1.0, -2.0, 0.5], x),
        np.convolve(x, [0.25, 0.5, 0.25], mode="same"),
        np.percentile(x, [10, 50], method="nearest"),
        np.median(A, axis=0),
        np.cov(A),
        np.histogram(x, bins=4, range=(0.0, 1.0))[0],
        np.searchsorted(np.sort(x), 0.5),
        np.kron(A[:2, :2], np.eye(2)),
        np.rot90(A),
        np.tril_indices(3)[1],
        np.nan_to_num(np.log(x - 0.5)),
    )


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_linalg_fft_statistics_shape_and_the_rest_match_eager():
    A = RNG.random((4, 4)) + 4 * np.eye(4)
    assert_equivalent(families, A, RNG.random(4), RNG.random(7))
    names = generic_ops(families, A, RNG.random(4), RNG.random(7))
    assert {"np.linalg.solve", "np.linalg.svd", "np.fft.rfft", "np.percentile"} <= set(names)


def named_results(A):
    decomposition = np.linalg.svd(A)
    q, r = np.linalg.qr(A)
    return decomposition.S, type(decomposition).__name__, q @ r


def test_named_tuple_results_keep_their_type():
    A = RNG.random((3, 3))
    s, kind, qr = dy2st.to_static(named_results)(A)
    assert kind == "SVDResult"
    np.testing.assert_allclose(s, np.linalg.svd(A).S)
    np.testing.assert_allclose(qr, A)


def writes_into_arguments(x, i):
    counts = np.zeros(5, np.int64)
    np.add.at(counts, i, 1)
    y = x.copy()
    y.sort()
    z = np.zeros(3)
    np.copyto(z, x[:3])
    np.put(z, [0], -1.0)
    w = np.empty_like(x)
    result = np.exp(x, out=w)
    return counts, y, z, w, result is w


def test_functions_that_write_into_an_argument_update_it():
    assert_equivalent(writes_into_arguments, sample((6,), np.float64), np.array([1, 1, 4, 0]))


def view_then_update(x):
    v = x.view()  # a view of x in eager NumPy, made by the generic layer
    x[0] = 100.0
    return v


def test_a_view_the_generic_layer_made_is_refused_after_its_base_is_updated():
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(view_then_update)(np.arange(3.0))
    assert_error_at(info.value, view_then_update, "return v", "may share memory")


def value_sized(x, y):
    return np.setdiff1d(x, y), np.trim_zeros(x)


def test_results_whose_size_depends_on_the_values_get_data_dependent_sizes():
    static = dy2st.to_static(value_sized)
    for x, y in (([0.0, 1, 2, 3, 0], [1.0, 5]), ([0.0, 4, 4, 0, 0], [4.0, 0])):
        x, y = np.array(x), np.array(y)
        for got, want in zip(static(x, y), value_sized(x, y)):
            np.testing.assert_array_equal(got, want)
    assert static.num_graphs == 1
    (op,) = [op for op in static.graph(x, y).walk() if op.attrs.get("function") == "np.setdiff1d"]
    assert "u" in str(op.results[0].type)


def eigenvalues(A):
    return np.linalg.eigvals(A)


def test_a_result_type_that_depends_on_the_values_is_a_clear_error_when_it_changes():
    static = dy2st.to_static(eigenvalues)
    symmetric = np.array([[2.0, 1.0], [1.0, 2.0]])
    np.testing.assert_allclose(static(symmetric), np.linalg.eigvals(symmetric))
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])  # complex eigenvalues: a complex result
    with pytest.raises(dy2st.Dy2stRuntimeError, match=r"np.linalg.eigvals returned complex128.*depends on the values"):
        static(rotation)


def rolled_in_a_loop(x, n):
    for _ in range(n):
        x = np.roll(x, 1) * 0.5 + x
    return x


def test_in_rolled_loops_and_with_symbolic_sizes():
    static = dy2st.to_static(rolled_in_a_loop, dynamic=True)
    for size in (5, 9):
        x = RNG.random(size)
        np.testing.assert_allclose(static(x, 8), rolled_in_a_loop(x, 8))
    assert static.num_graphs == 1


def test_names_round_trip():
    for func in (np.linalg.inv, np.roll, np.fft.rfft, np.add.accumulate, np.exp):
        assert resolve(callable_name(func)) == func
    # an ndarray method is called on its first argument, a NumPy scalar too
    assert callable_name(np.ndarray.sort) == "ndarray.sort"
    assert resolve("ndarray.item")(np.float32(2.5)) == 2.5
    assert callable_name(len) is None


def python_values(x):
    total = 0.0
    for value in x.tolist():  # a list of Python floats, as long as x
        total += value
    first = x.item(0)
    if x.max().item() > 2:  # a NumPy scalar's .item()
        first = first + 1
    return total, first, x[:2].reshape(1, 2).tolist()


def test_item_and_tolist_give_python_values_read_when_the_graph_runs():
    for x in (np.array([3.0, 5.0, 1.0]), np.array([1.0, 0.5, 2.0])):
        total, first, nested = assert_equivalent(python_values, x)
        assert type(total) is float and type(first) is float and type(nested[0][1]) is float


def tolist_of_unknown_length(x):
    return x[x > 0].tolist()


def test_tolist_needs_its_lengths_while_the_graph_is_built():
    converted = dy2st.to_static(tolist_of_unknown_length, dynamic=True)
    with pytest.raises(dy2st.GraphBuildError) as info:
        converted(np.ones(3))
    assert_error_at(info.value, tolist_of_unknown_length, "x[x > 0].tolist()", "depends on the values")
    sized = dy2st.to_static(python_values, dynamic=True)  # a symbolic length: made static, as len(x) is
    for x in (np.array([3.0, 5.0, 1.0]), np.array([1.0, 0.5, 2.0, 4.0])):
        assert sized(x) == python_values(x)


def clipped(a):
    return a if a > 0 else 0.0


VECTORIZED = np.vectorize(clipped)


def callables_made_by_numpy(x):
    made_inside = np.vectorize(lambda a, b: a * b if a > b else b, otypes=[float])(x, 0.5)
    adder = np.frompyfunc(lambda a, b: a + b, 2, 1)
    return VECTORIZED(x), made_inside, adder(x, x).astype(float)


def test_vectorize_and_frompyfunc_run_python_per_element_when_the_graph_runs():
    for x in (np.array([-1.0, 2.0, 0.25]), np.array([3.0, -4.0])):
        assert_equivalent(callables_made_by_numpy, x)
    assert generic_ops(callables_made_by_numpy, np.ones(3)).count("call") == 3


def lists_of_tensors(x, y):
    return (
        np.mean([x.sum(), y.sum()]),
        np.max([x[0], x[1], 2.0]),
        np.sum([x, y * 2], axis=0),
        np.exp([x[0], 1.0]),
        np.logical_and.reduce([x > 0, y < 3]),
        np.hypot([x[0], y[0]], [1.0, 2.0]),
    )


def test_lists_of_tensors_reach_the_precise_rules():
    x, y = RNG.normal(size=4), RNG.normal(size=4)
    assert_equivalent(lists_of_tensors, x, y)
    assert generic_ops(lists_of_tensors, x, y) == []


def ragged_list(x):
    return np.percentile([x, x[:2]], 50)  # NumPy refuses the ragged list, as eagerly


def test_a_ragged_list_raises_numpys_error():
    with pytest.raises(ValueError) as info:
        dy2st.to_static(ragged_list)(np.ones(3))
    assert "inhomogeneous" in str(info.value)


def enumerated(x):
    total = 0.0
    for index, value in np.ndenumerate(x):
        total += value * (index[0] + 1) - index[-1]
    return total


def test_ndenumerate_loops_unroll_over_the_static_shape():
    for shape in ((2, 3), (4,), (1, 2, 2)):
        assert_equivalent(enumerated, RNG.normal(size=shape))


def rolled_by_a_tensor(x, k):
    return np.roll(x, k) + 1.0  # the shape stays static: the addition needs no size decision


def padded_by_a_tensor(x, n):
    return np.pad(x, n)


def test_integer_operands_that_set_sizes_give_data_dependent_sizes_others_static():
    x = np.arange(5.0)
    graph = dy2st.to_static(rolled_by_a_tensor).graph(x, np.array(2))
    assert [str(v.type) for v in graph.outputs] == ["f64[5]"]
    for k in (0, 2, -7):
        assert_equivalent(rolled_by_a_tensor, x, np.array(k))
    graph = dy2st.to_static(padded_by_a_tensor).graph(x, np.array(1))
    assert "u" in str(graph.outputs[0].type)  # a data-dependent length
    converted = dy2st.to_static(padded_by_a_tensor)
    for n in (0, 1, 3):
        np.testing.assert_array_equal(converted(x, np.array(n)), np.pad(x, n))
    assert converted.num_graphs == 1
