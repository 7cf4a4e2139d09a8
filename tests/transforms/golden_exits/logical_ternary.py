def f(x, flag):
    return x if flag > 0 else -x
