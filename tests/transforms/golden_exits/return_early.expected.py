def f(x):
    """Scale positive inputs."""
    if x.sum() > 0:
        retval = x * 2
    else:
        y = x - 1
        retval = y
    return retval
