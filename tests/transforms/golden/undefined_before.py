def f(x, t):
    """A variable first assigned inside the branches is bound to Undefined at the top."""
    if t > 0:
        y = x
        z = 1
    else:
        y = -x
    return y
