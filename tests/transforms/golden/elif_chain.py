def f(x, t):
    if t > 1:
        y = x + 1
    elif t > 0:
        y = x * 2
    else:
        y = -x
    return y
