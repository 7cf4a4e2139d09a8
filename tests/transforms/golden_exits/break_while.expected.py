def f(x, n):
    s = 0.0
    i = 0
    break_ = False
    while _dy2st.convert_logical_and(lambda : _dy2st.convert_logical_not(
        break_), lambda : i < n, truth_only=True):
        if x[i] < 0:
            break_ = True
        else:
            s = s + x[i]
            i += 1
    if _dy2st.convert_logical_not(break_):
        s = -s
    return s
