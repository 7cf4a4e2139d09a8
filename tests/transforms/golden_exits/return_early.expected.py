def f(x):
    """Scale positive inputs."""
    if x.sum() > 0:
        retval = _dy2st.returned(x * 2)
    else:
        y = x - 1
        retval = _dy2st.returned(y)
    return retval
