def f(x, n):
    assert x.min() > 0, f"x must be positive (n={n})"
    assert n
    return x
