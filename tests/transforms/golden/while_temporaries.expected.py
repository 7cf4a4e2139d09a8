def f(x, n):
    """t is written before it is read in every iteration: not carried."""
    t = _dy2st.Undefined('t')
    i = 0
    acc = x

    def loop_cond():
        return i < n

    def loop_body():
        nonlocal t, acc, i

        def true_fn():
            nonlocal t
            t = x * 2

        def false_fn():
            nonlocal t
            t = x * 3

        def get_state():
            return t,

        def set_state(vars_):
            nonlocal t
            t, = vars_
        _dy2st.convert_ifelse(i % 2 == 0, true_fn, false_fn, get_state,
            set_state, ('t',), ('t',))
        acc = acc + t
        i += 1

    def get_state_1():
        return t, acc, i

    def set_state_1(vars_):
        nonlocal t, acc, i
        t, acc, i = vars_
    _dy2st.convert_while_loop(loop_cond, loop_body, get_state_1,
        set_state_1, ('t', 'acc', 'i'), ('acc', 'i'))
    return acc
