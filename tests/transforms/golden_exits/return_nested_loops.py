def f(rows, target):
    for i, row in enumerate(rows):
        for v in row:
            if v == target:
                return i
    return -1
