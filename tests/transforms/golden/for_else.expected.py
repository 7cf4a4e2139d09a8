def f(x, rows):
    row = _dy2st.Undefined('row')

    def loop_body(item):
        nonlocal row, x
        row = item
        x = x + row

    def get_state():
        return row, x

    def set_state(vars_):
        nonlocal row, x
        row, x = vars_
    _dy2st.convert_for(rows, loop_body, get_state, set_state, ('row', 'x'),
        ('x',))
    x = x * 2
    return x
