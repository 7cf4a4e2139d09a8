def f(x, n):
    """t is written before it is read in every iteration: not carried."""
    i = 0
    acc = x
    while i < n:
        if i % 2 == 0:
            t = x * 2
        else:
            t = x * 3
        acc = acc + t
        i += 1
    return acc
