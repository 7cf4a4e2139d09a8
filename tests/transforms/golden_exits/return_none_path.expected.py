def f(x, verbose):
    retval = None
    if verbose:
        print(x)
        retval = None
    else:
        x = x + 1
    return retval
