"""Static analysis: reads/writes of blocks, liveness after ifs and at loop heads."""

from __future__ import annotations

import textwrap

import gast

from dy2st.frontend.analysis import anno, annotate, block_usage


def usage(source: str):
    return block_usage(gast.parse(textwrap.dedent(source)).body)


def annotated(source: str) -> list[gast.AST]:
    """The if/while/for nodes of the function in ``source``, in source order, annotated."""
    tree = gast.parse(textwrap.dedent(source))
    annotate(tree)
    nodes = [n for n in gast.walk(tree) if isinstance(n, (gast.If, gast.While, gast.For))]
    return sorted(nodes, key=lambda n: n.lineno)


def test_subscript_and_augmented_assignment_read_and_write_the_base():
    u = usage("a[i] = v\nb += 1\nc.f = 2\n")
    assert set(u.writes) == {"a", "b", "c"}
    assert {"a", "i", "v", "b", "c"} <= set(u.reads)
    assert set(u.kills) == {"b"}  # only a plain name rebinds; a[i] = v updates the old object


def test_tuple_targets_loop_targets_and_nested_definitions_are_writes():
    u = usage("(p, [q, r]) = t\nfor k in ks:\n    pass\ndef g():\n    return w\nimport numpy as np\n")
    assert set(u.writes) == {"p", "q", "r", "k", "g", "np"}
    assert {"t", "ks", "w"} <= set(u.reads)


def test_comprehension_variables_are_local_and_lambdas_read_free_names():
    u = usage("ys = [z * s for z in zs]\nf = lambda a: a + b\n")
    assert set(u.writes) == {"ys", "f"}
    assert set(u.reads) == {"s", "zs", "b"}


def test_nonlocal_in_a_nested_function_writes_the_enclosing_variable():
    u = usage("def g():\n    nonlocal acc\n    acc = acc + 1\n")
    assert "acc" in u.writes and "acc" in u.reads


def test_if_outputs_are_written_names_live_after():
    (node,) = annotated(
        """
        def f(x, t):
            if t > 0:
                y = x
                tmp = 1
            else:
                y = -x
            return y
        """
    )
    assert anno.get(node, anno.MODIFIED) == ("y", "tmp")
    assert anno.get(node, anno.LIVE_OUT) == {"y"}


def test_names_read_by_the_next_iteration_are_live_after_an_if_in_a_loop():
    loop, branch = annotated(
        """
        def f(x, n):
            i = 0
            acc = x
            while i < n:
                if i > 0:
                    acc = acc * 2
                    cur = acc + 1
                else:
                    cur = x
                i += cur.sum()
            return i
        """
    )
    # acc is not used after the loop, but the next iteration reads it: an output of the if.
    assert set(anno.get(branch, anno.MODIFIED)) & anno.get(branch, anno.LIVE_OUT) == {"acc", "cur"}
    carried = set(anno.get(loop, anno.MODIFIED)) & anno.get(loop, anno.LIVE_HEAD)
    assert carried == {"acc", "i"}  # cur is written before it is read in every iteration


def test_for_target_is_carried_only_when_used_after_the_loop():
    unused, used = annotated(
        """
        def f(x, n):
            for i in range(n):
                x = x + i
            for j in range(n):
                x = x - j
            return x, j
        """
    )
    assert set(anno.get(unused, anno.MODIFIED)) & anno.get(unused, anno.LIVE_HEAD) == {"x"}
    assert set(anno.get(used, anno.MODIFIED)) & anno.get(used, anno.LIVE_HEAD) == {"x", "j"}


def test_break_continues_with_what_is_live_after_the_loop():
    (loop, _) = annotated(
        """
        def f(x, n):
            found = -1
            while n > 0:
                if x[n] > 0:
                    found = n
                    break
                n -= 1
            return found
        """
    )
    assert "found" in anno.get(loop, anno.LIVE_HEAD)


def live_out_of_if_in_outer_loop(inner_range: str) -> frozenset[str]:
    """What is live after the tensor-style ``if`` whose else branch holds ``for i in <inner_range>``."""
    nodes = annotated(
        f"""
        def f(x, s, n):
            for k in range(2):
                if x[0] > 0:
                    s = s + 1.0
                else:
                    for i in {inner_range}:
                        s = s + 1.0
                    s = s + i
            return s
        """
    )
    if_node = next(n for n in nodes if isinstance(n, gast.If))
    return anno.get(if_node, anno.LIVE_OUT)


def test_a_non_empty_literal_range_surely_assigns_its_target():
    assert "i" not in live_out_of_if_in_outer_loop("range(3)")
    assert "i" not in live_out_of_if_in_outer_loop("range(1, -2, -1)")


def test_a_range_that_may_be_empty_does_not():
    for inner in ("range(n)", "range(0)", "range(3, 3)", "range(0, 3, -1)", "xs"):
        assert "i" in live_out_of_if_in_outer_loop(inner), inner


def test_the_first_iteration_of_a_non_empty_range_rebinds_what_its_body_assigns():
    (loop,) = annotated(
        """
        def f(x):
            for k in range(2):
                y = x * k
            return y
        """
    )
    assert "y" in anno.get(loop, anno.LIVE_OUT)  # still carried out of the loop
