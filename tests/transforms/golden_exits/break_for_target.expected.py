def f(x):
    break_ = False
    for i in _dy2st.iterate_until(range(4), lambda : break_, hold_at_break=True
        ):
        if _dy2st.convert_logical_not(break_):
            if x[i] > 2:
                break_ = True
    return i
