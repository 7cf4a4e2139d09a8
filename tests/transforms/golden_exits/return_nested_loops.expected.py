def f(rows, target):
    do_return = False
    break__1 = False
    for i, row in _dy2st.iterate_until(enumerate(rows), lambda : break__1):
        if _dy2st.convert_logical_not(break__1):
            break_ = False
            for v in _dy2st.iterate_until(row, lambda : break_):
                if _dy2st.convert_logical_not(break_):
                    if v == target:
                        do_return = True
                        retval = _dy2st.returned(i)
                        break_ = True
            if do_return:
                break__1 = True
    if _dy2st.convert_logical_not(do_return):
        do_return = True
        retval = _dy2st.returned(-1)
    return retval
