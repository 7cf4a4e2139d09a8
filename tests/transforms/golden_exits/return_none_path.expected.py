def f(x, verbose):
    retval = None
    if verbose:
        print(x)
        retval = _dy2st.returned(None)
    else:
        x = x + 1
    return retval
