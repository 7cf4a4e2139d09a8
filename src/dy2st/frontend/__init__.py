"""The frontend: parse a function's source, transform its control flow, regenerate and compile it."""
