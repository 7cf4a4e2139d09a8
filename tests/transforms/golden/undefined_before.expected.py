def f(x, t):
    """A variable first assigned inside the branches is bound to Undefined at the top."""
    y = _dy2st.Undefined('y')
    z = _dy2st.Undefined('z')

    def true_fn():
        nonlocal y, z
        y = x
        z = 1

    def false_fn():
        nonlocal y, z
        y = -x

    def get_state():
        return y, z

    def set_state(vars_):
        nonlocal y, z
        y, z = vars_
    _dy2st.convert_ifelse(t > 0, true_fn, false_fn, get_state, set_state, (
        'y', 'z'), ('y',))
    return y
