def f(x, t):
    def helper(v):
        if v > 0:
            r = v
        else:
            r = -v
        return r

    if t > 0:
        x = helper(x)
    return x
