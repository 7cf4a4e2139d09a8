def f(x, t):
    if _dy2st.python_bool(t > 0, "a 'try' statement (line 3)"):
        try:
            y = x + 1
        except ValueError:
            y = x
    else:
        y = x
    return y
