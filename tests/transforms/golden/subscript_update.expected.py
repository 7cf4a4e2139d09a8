def f(a, t):

    def true_fn():
        nonlocal a
        a[0] = 1.0

    def false_fn():
        nonlocal a
        a += 2

    def get_state():
        return a,

    def set_state(vars_):
        nonlocal a
        a, = vars_
    _dy2st.convert_ifelse(t > 0, true_fn, false_fn, get_state, set_state, (
        'a',), ('a',))
    return a
