def f(xs):
    s = 0
    for v in xs:
        if v < 0:
            continue
        s = s + v
    return s
