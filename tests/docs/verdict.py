"""The docs tests' verdict (figures_test.py, options_test.py): each failure on a line of its own and exit 1,
else one line saying what passed and exit 0."""


def verdict(failures, passed):
    for line in failures:
        print("FAILED:", line)
    if failures:
        return 1
    print("passed:", passed)
    return 0
