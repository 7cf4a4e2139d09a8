def f(x):
    for i in range(4):
        if x[i] > 2:
            break
    return i
