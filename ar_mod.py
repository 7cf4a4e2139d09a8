def f(x):
    return x * 30
