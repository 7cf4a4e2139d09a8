def f(xs):
    s = 0
    for v in xs:
        if v > 0:
            s = s + v
            if v > 5:
                continue
            s = s + 1
        s = s * 2
    return s
