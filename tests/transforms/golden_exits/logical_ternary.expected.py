def f(x, flag):
    return _dy2st.convert_ifexp(flag > 0, lambda : x, lambda : -x)
