def f(x, n):
    for i in range(n):
        x = x + i
    return x
