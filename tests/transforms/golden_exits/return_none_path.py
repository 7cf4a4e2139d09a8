def f(x, verbose):
    if verbose:
        print(x)
        return
    x = x + 1
