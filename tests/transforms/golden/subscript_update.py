def f(a, t):
    if t > 0:
        a[0] = 1.0
    else:
        a += 2
    return a
