def f(xs, ws):
    k = _dy2st.Undefined('k')
    x = _dy2st.Undefined('x')
    w = _dy2st.Undefined('w')
    total = 0

    def loop_body(item):
        nonlocal k, x, w, total
        k, (x, w) = item
        total = total + k * x * w

    def get_state():
        return k, x, w, total

    def set_state(vars_):
        nonlocal k, x, w, total
        k, x, w, total = vars_
    _dy2st.convert_for(_dy2st.for_enumerate(_dy2st.for_zip(xs, ws)),
        loop_body, get_state, set_state, ('k', 'x', 'w', 'total'), ('total',))
    return total
