def f(x, n):
    do_return = False
    i = 0
    break_ = False
    while _dy2st.convert_logical_and(lambda : _dy2st.convert_logical_not(
        break_), lambda : i < n, truth_only=True):
        if x[i] > 2:
            do_return = True
            retval = _dy2st.returned(x[i])
            break_ = True
        else:
            i += 1
    if _dy2st.convert_logical_not(do_return):
        do_return = True
        retval = _dy2st.returned(x[0])
    return retval
