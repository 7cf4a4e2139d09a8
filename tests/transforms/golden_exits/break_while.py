def f(x, n):
    s = 0.0
    i = 0
    while i < n:
        if x[i] < 0:
            break
        s = s + x[i]
        i += 1
    else:
        s = -s
    return s
