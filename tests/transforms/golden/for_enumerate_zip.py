def f(xs, ws):
    total = 0
    for k, (x, w) in enumerate(zip(xs, ws)):
        total = total + k * x * w
    return total
