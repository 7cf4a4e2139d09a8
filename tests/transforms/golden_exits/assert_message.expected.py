def f(x, n):
    _dy2st.convert_assert(x.min() > 0, lambda : f'x must be positive (n={n})')
    _dy2st.convert_assert(n)
    return x
