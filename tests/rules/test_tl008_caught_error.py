"""TL008 and an error caught where it is raised: a `.view()` of a transposed tensor in the `try` body of a
handler for `RuntimeError` (or a base of it: `Exception`, a bare `except`) that goes on is a demonstration
of the error or a fallback, not a crash. A handler for another exception, or one that raises again, keeps
the finding, and so does a `try` in the caller of the function that raises."""

from expect_markers import check

CODE = "TL008"


def test_demonstration_caught_by_runtime_error_handler_is_silent(lint):
    check(
        lint,
        """
        import torch

        x = torch.arange(12).reshape(3, 4)
        xt = x.t()
        print(f"strides={xt.stride()}, contiguous={xt.is_contiguous()}")

        # view() requires contiguous memory
        try:
            xt.view(-1)
        except RuntimeError as e:
            print(f"xt.view(-1) fails: {e}")

        print(xt.contiguous().view(-1))
        print(xt.reshape(-1))
        """,
        CODE,
    )


def test_fallback_under_exception_or_bare_except_is_silent(lint):
    check(
        lint,
        """
        import torch

        def rows_of(conv, x):
            feat = conv(x)
            n, c, h, w = feat.shape
            try:
                rows = feat.permute(0, 2, 3, 1).view(n, h, w * c)
            except (ValueError, Exception):
                rows = feat.permute(0, 2, 3, 1).reshape(n, h, w * c)
            return rows

        def flatten_grid(layer, x):
            y = torch.transpose(layer(x), 0, 1)
            try:
                return y.view(-1)
            except:
                return y.reshape(-1)
        """,
        CODE,
    )


def test_other_handler_reraise_or_try_in_caller_keeps_finding(lint):
    check(
        lint,
        """
        import logging
        import torch

        def flatten(layer, x):
            y = torch.transpose(layer(x), 0, 1)
            try:
                return y.view(-1)  # expect: TL008
            except ValueError:
                return None

        def flatten_logged(layer, x):
            y = torch.transpose(layer(x), 0, 1)
            try:
                return y.view(-1)  # expect: TL008
            except RuntimeError:
                logging.exception("view failed")
                raise

        def flatten_late(layer, x):
            y = torch.transpose(layer(x), 0, 1)
            try:
                pass
            except RuntimeError:
                pass
            else:
                return y.view(-1)  # expect: TL008

        def outer(layer, x):
            try:
                return inner(layer, x)
            except RuntimeError:
                return None

        def inner(layer, x):
            y = torch.transpose(layer(x), 0, 1)
            return y.view(-1)  # expect: TL008
        """,
        CODE,
    )
