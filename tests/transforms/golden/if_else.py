def model(x, flag):
    if flag > 0:
        y = x * 2
    else:
        y = -x
    return y
