def f(x, n):
    i = 0
    while i < n:
        if x[i] > 2:
            return x[i]
        i += 1
    return x[0]
