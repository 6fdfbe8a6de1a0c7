"""The one error for any part of torch this layer does not implement: never a silently wrong answer."""


class Unsupported(NotImplementedError, AttributeError):
    """A NotImplementedError naming the missing function; also an AttributeError, so hasattr() says False."""


def missing(name: str) -> Unsupported:
    return Unsupported(f"{name} is not implemented in the browser's torch (a numpy layer with the subset of "
                       "torch that minisgl and the exercises use)")
