def f(a, b, c):
    return a and b or not c
