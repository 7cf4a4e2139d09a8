def f(x, t):
    y = _dy2st.Undefined('y')

    def true_fn_1():
        nonlocal y
        y = x + 1

    def false_fn_1():
        nonlocal y

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
        _dy2st.convert_ifelse(t > 0, true_fn, false_fn, get_state,
            set_state, ('y',), ('y',))

    def get_state_1():
        return y,

    def set_state_1(vars_):
        nonlocal y
        y, = vars_
    _dy2st.convert_ifelse(t > 1, true_fn_1, false_fn_1, get_state_1,
        set_state_1, ('y',), ('y',))
    return y
