def f(xs):
    s = 0
    for v in xs:
        if v < 0:
            pass
        else:
            s = s + v
    return s
