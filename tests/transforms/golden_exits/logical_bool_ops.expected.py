def f(a, b, c):
    return _dy2st.convert_logical_or(lambda : _dy2st.convert_logical_and(lambda
        : a, lambda : b), lambda : _dy2st.convert_logical_not(c))
