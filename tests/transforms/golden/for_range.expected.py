def f(x, n):
    i = _dy2st.Undefined('i')

    def loop_body(item):
        nonlocal i, x
        i = item
        x = x + i

    def get_state():
        return i, x

    def set_state(vars_):
        nonlocal i, x
        i, x = vars_
    _dy2st.convert_for(_dy2st.for_range(n), loop_body, get_state, set_state,
        ('i', 'x'), ('x',))
    return x
