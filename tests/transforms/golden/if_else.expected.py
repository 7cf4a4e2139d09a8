def model(x, flag):
    y = _dy2st.Undefined('y')

    def true_fn():
        nonlocal y
        y = x * 2

    def false_fn():
        nonlocal y
        y = -x

    def get_state():
        return y,

    def set_state(vars_):
        nonlocal y
        y, = vars_
    _dy2st.convert_ifelse(flag > 0, true_fn, false_fn, get_state, set_state,
        ('y',), ('y',))
    return y
