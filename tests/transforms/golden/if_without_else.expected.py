def f(x, t):
    tmp = _dy2st.Undefined('tmp')
    y = x + 1

    def true_fn():
        nonlocal y, tmp
        y = y * 2
        tmp = y.sum()
        y = y / tmp

    def false_fn():
        nonlocal y, tmp
        pass

    def get_state():
        return y, tmp

    def set_state(vars_):
        nonlocal y, tmp
        y, tmp = vars_
    _dy2st.convert_ifelse(t > 0, true_fn, false_fn, get_state, set_state, (
        'y', 'tmp'), ('y',))
    return y
