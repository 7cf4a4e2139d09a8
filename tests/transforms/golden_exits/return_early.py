def f(x):
    """Scale positive inputs."""
    if x.sum() > 0:
        return x * 2
    y = x - 1
    return y
