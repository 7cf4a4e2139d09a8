"""Which array objects a converted function hands out: the same ones eager NumPy would."""

import numpy as np

import dy2st


def asarray_then_update(x):
    y = np.asarray(x)  # the same array object as x
    y[0] = 7.0
    return x


def array_then_update(x):
    y = np.array(x)  # a copy: updating it leaves x alone
    y[0] = 7.0
    return x, y


def asarray_with_dtype(x):
    return np.asarray(x, dtype=np.float32)


def two_equal_expressions():
    return np.zeros(3), np.zeros(3)


def test_asarray_of_a_tensor_is_the_tensor_itself():
    static = dy2st.to_static(asarray_then_update)
    x_eager, x_static = np.arange(3.0), np.arange(3.0)
    np.testing.assert_array_equal(static(x_static), asarray_then_update(x_eager))
    np.testing.assert_array_equal(x_static, x_eager)  # the caller's array was updated in both
    assert x_static[0] == 7.0


def test_array_of_a_tensor_is_a_copy():
    static = dy2st.to_static(array_then_update)
    x = np.arange(3.0)
    got_x, got_y = static(x)
    np.testing.assert_array_equal(got_x, np.arange(3.0))
    np.testing.assert_array_equal(got_y, [7.0, 1.0, 2.0])
    np.testing.assert_array_equal(x, np.arange(3.0))


def test_asarray_with_another_dtype_converts():
    got = dy2st.to_static(asarray_with_dtype)(np.arange(3))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [0, 1, 2])


def test_equal_results_merged_by_cse_are_still_two_arrays():
    first, second = dy2st.to_static(two_equal_expressions)()
    assert first is not second
    first[0] = 5.0
    np.testing.assert_array_equal(second, np.zeros(3))


GLOBAL_TABLE = np.arange(4.0)


def returns_its_arrays(C, d):
    C[1:] += 1.0
    return C, d["a"], GLOBAL_TABLE, C


def test_returned_arguments_and_globals_are_the_same_objects_as_eagerly():
    static = dy2st.to_static(returns_its_arrays)
    for _ in range(2):  # the second call takes the fast path
        C, d = np.zeros(3), {"a": np.ones(2)}
        got = static(C, d)
        assert got[0] is C and got[1] is d["a"] and got[2] is GLOBAL_TABLE and got[3] is C
        assert C.tolist() == [0.0, 1.0, 1.0]


def returns_a_new_array_equal_to_its_argument(x):
    return x * 1  # simplified to x in the graph, but a new array in eager code


def test_a_result_equal_to_an_argument_but_new_in_eager_code_is_not_the_argument():
    x = np.arange(3)
    got = dy2st.to_static(returns_a_new_array_equal_to_its_argument)(x)
    assert got is not x and not np.shares_memory(got, x)
