def f(lo, x, hi):
    if _dy2st.convert_compare_chain(lambda : lo, ('LtE', lambda : x), ('Lt',
        lambda : hi)):
        x = x * 2
    return x
