def f(x, n):
    i = 0
    acc = x * 0
    while i < n:
        acc = acc + x * i
        i += 1
    return acc
