def f(x, t):
    if t > 0:
        try:
            y = x + 1
        except ValueError:
            y = x
    else:
        y = x
    return y
