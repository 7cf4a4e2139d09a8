def f(x, n):
    i = 0
    acc = x * 0

    def loop_cond():
        return i < n

    def loop_body():
        nonlocal acc, i
        acc = acc + x * i
        i += 1

    def get_state():
        return acc, i

    def set_state(vars_):
        nonlocal acc, i
        acc, i = vars_
    _dy2st.convert_while_loop(loop_cond, loop_body, get_state, set_state, (
        'acc', 'i'), ('acc', 'i'))
    return acc
