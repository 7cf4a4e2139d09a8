"""The NumPy lowering pass records how loops, scalar arithmetic and small fused groups run."""

import textwrap

import numpy as np

import dy2st
from dy2st.backend.numpy.lowering import NumpyLowering, numpy_passes
from dy2st.ir.core import WHILE_LOOP
from dy2st.ir.printer import print_graph


def counted(x, n):
    i = 0
    while i < n:
        x = x * 2.0
        i = i + 1
    return x


def scalar(a, b):
    return (a - b) * a < b


def small_group(x, y):
    return np.tanh(x * y + 1.0)


def assert_prints(graph, expected):
    assert print_graph(graph) == textwrap.dedent(expected).strip()


def test_a_counted_loop_is_marked_with_its_counter_and_the_step_is_not_converted():
    graph = dy2st.to_static(counted, backend="numpy").graph(np.ones(3), np.array(4))
    assert_prints(
        graph,
        """
        func @counted(%x: f64[3], %n: i64[]) -> f64[3] {
          %x_1, %i = while_loop (%x, 0) {counted_loop=1} : (f64[3], i64[])
              cond (%x_2: f64[3], %i_1: i64[]) {
            %0 = less %i_1, %n {python_operator='<'} : bool[]
            yield %0
          } body (%x_3: f64[3], %i_2: i64[]) {
            %x_4 = multiply %x_3, 2.0 : f64[3]
            %1 = add %i_2, 1 {python_operator='+'} : i64[]
            %i_3 = as_python_number %1 {already_python=True} : i64[]
            yield %x_4, %i_3
          }
          return %x_1
        }
    """,
    )
    loops = [op for op in graph.walk() if op.name == WHILE_LOOP]
    assert [loop.attrs.get("counted_loop") for loop in loops] == [1]


def test_scalar_arithmetic_in_a_small_group_becomes_python_operators():
    assert_prints(
        dy2st.to_static(scalar).graph(np.float64(1.0), np.float64(2.0)),
        """
        func @scalar(%a: f64[], %b: f64[]) -> bool[] {
          %0 = fused %a, %b {name='fused_0', unfused=True} : bool[]
          {
            ^args(%a_1: f64[], %b_1: f64[])
            %1 = subtract %a_1, %b_1 {python_operator='-'} : f64[]
            %2 = multiply %1, %a_1 {python_operator='*'} : f64[]
            %3 = less %2, %b_1 {python_operator='<'} : bool[]
            yield %3
          }
          return %0 {result_kinds=('scalar',)}
        }
    """,
    )


def test_a_small_fused_group_runs_unfused():
    assert_prints(
        dy2st.to_static(small_group).graph(np.ones(4), np.ones(4)),
        """
        func @small_group(%x: f64[4], %y: f64[4]) -> f64[4] {
          %0 = fused %x, %y {name='fused_0', unfused=True} : f64[4]
          {
            ^args(%x_1: f64[4], %y_1: f64[4])
            %1 = multiply %x_1, %y_1 : f64[4]
            %2 = add %1, 1.0 {overwrites=0, releases=(0,)} : f64[4]
            %3 = tanh %2 {overwrites=0, releases=(0,)} : f64[4]
            yield %3
          }
          return %0
        }
    """,
    )


def test_a_large_fused_group_stays_one_kernel():
    graph = dy2st.to_static(small_group).graph(np.ones(4096), np.ones(4096))
    fused = [op for op in graph.walk() if op.regions]
    assert fused and not any("unfused" in op.attrs for op in fused)


def test_lowering_is_the_last_pass_and_running_it_again_changes_nothing():
    passes = numpy_passes()
    assert isinstance(passes[-1], NumpyLowering)
    graph = dy2st.to_static(counted, backend="numpy").graph(np.ones(3), np.array(4))
    assert NumpyLowering().run(graph) is False


def python_and_numpy_operators(n):
    k = 1
    i = 0
    while i < n:
        k = k << 3
        i = i + 1
    return k, np.left_shift(k, 3)


def test_operators_of_python_numbers_are_pythons_and_numpy_functions_keep_their_kernels():
    graph = dy2st.to_static(python_and_numpy_operators).graph(np.array(4))
    shifts = [op for op in graph.walk() if op.name == "left_shift"]
    assert [op.attrs.get("python_operator") for op in shifts] == ["<<", None]
    converted = [op for op in graph.walk() if op.name == "as_python_number"]
    assert converted and all(op.attrs.get("already_python") for op in converted)


WEIGHTS = [1.0, 0.5, 0.25, 0.125]


def unrolled_scalars(x):
    s = x[0]
    for i in range(40):  # unrolled: the body indexes a Python list with the counter
        s = s * 0.5 + x[i % 4] * WEIGHTS[i % 4]
    return s


def releases_of_scalars(graph) -> int:
    return sum(1 for op in graph.walk() for i in op.attrs.get("releases", ()) if op.operands[i].type.ndim == 0)


def test_only_long_straight_line_blocks_drop_their_dead_scalars():
    # An unrolled loop keeps no NumPy scalar of every step until it returns; a short block, where
    # the del statements would cost more than they save, keeps its few.
    assert releases_of_scalars(dy2st.to_static(unrolled_scalars).graph(np.ones(4))) > 40
    assert releases_of_scalars(dy2st.to_static(scalar).graph(np.float64(1.0), np.float64(2.0))) == 0
