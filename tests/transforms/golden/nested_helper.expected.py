def f(x, t):

    def helper(v):
        r = _dy2st.Undefined('r')

        def true_fn():
            nonlocal r
            r = v

        def false_fn():
            nonlocal r
            r = -v

        def get_state():
            return r,

        def set_state(vars_):
            nonlocal r
            r, = vars_
        _dy2st.convert_ifelse(v > 0, true_fn, false_fn, get_state,
            set_state, ('r',), ('r',))
        return r

    def true_fn_1():
        nonlocal x
        x = helper(x)

    def false_fn_1():
        nonlocal x
        pass

    def get_state_1():
        return x,

    def set_state_1(vars_):
        nonlocal x
        x, = vars_
    _dy2st.convert_ifelse(t > 0, true_fn_1, false_fn_1, get_state_1,
        set_state_1, ('x',), ('x',))
    return x
