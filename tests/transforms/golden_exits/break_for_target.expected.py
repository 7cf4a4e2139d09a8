def f(x):
    break_ = False
    for i_item in _dy2st.iterate_until(range(4), lambda : break_):
        i = _dy2st.loop_target(i_item, lambda : break_, lambda : i)
        if _dy2st.convert_logical_not(break_):
            if x[i] > 2:
                break_ = True
    return i
