def f(xs):
    s = 0
    for v in xs:
        continue_ = False
        if v > 0:
            s = s + v
            if v > 5:
                continue_ = True
            else:
                s = s + 1
        if _dy2st.convert_logical_not(continue_):
            s = s * 2
    return s
