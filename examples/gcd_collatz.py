"""Integer loops on 0-d arrays: Euclid's gcd and the length of a Collatz sequence.

Both loop conditions depend on 0-d int64 arrays, so each loop is a ``while_loop`` op; the Collatz
step's ``if`` on a tensor becomes a ``cond`` op inside the loop body.

Run it as a script; it exits non-zero if the converted functions disagree with eager NumPy.
"""

import numpy as np

import dy2st


@dy2st.to_static
def gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return a


@dy2st.to_static
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def main() -> None:
    print("=== transformed source of gcd")
    print(gcd.code)
    print("=== graph of collatz_steps (after the passes)")
    print(collatz_steps.graph(np.array(27)))
    for a, b in ((48, 18), (17, 5), (0, 9), (1071, 462)):
        got, want = gcd(np.array(a), np.array(b)), gcd.fn(np.array(a), np.array(b))
        assert np.asarray(got).dtype == np.asarray(want).dtype and int(got) == int(want)
    for n in (27, 1, 6, 97):
        got, want = collatz_steps(np.array(n)), collatz_steps.fn(np.array(n))
        assert int(got) == int(want), (n, got, want)
        print(f"collatz({n}) reaches 1 in {int(got)} steps, same as eager")
    assert gcd.num_graphs == 1 and collatz_steps.num_graphs == 1
    names = [op.name for op in collatz_steps.graph(np.array(27)).walk()]
    assert names.count("while_loop") == 1 and names.count("cond") == 1
    print("gcd_collatz: converted == eager NumPy; graphs built:", gcd.num_graphs, collatz_steps.num_graphs)


if __name__ == "__main__":
    main()
