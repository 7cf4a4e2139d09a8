def f(x):
    break_ = False
    for i_item in _dy2st.iterate_until(range(4), lambda : break_):
        if _dy2st.convert_logical_not(break_):
            i = i_item
            if x[i] > 2:
                break_ = True
    return i
