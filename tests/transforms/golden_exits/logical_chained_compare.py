def f(lo, x, hi):
    if lo <= x < hi:
        x = x * 2
    return x
