def f(x, rows):
    for row in rows:
        x = x + row
    else:
        x = x * 2
    return x
