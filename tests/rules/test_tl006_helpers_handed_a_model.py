"""TL006: a forward takes tensors, so a callable handed a model (``settle_model(model)``) is a helper
over models whatever its name: it is an evaluation call only where its body, read in the project,
may run the model."""

from expect_markers import check

CODE = "TL006"

_VALIDATE = """
    import torch

    from quant.layers import settle_model


    def validate(loader, model, criterion):
        settle_model(model)
        model.eval()
        total = 0.0
        CONTEXT
            for images, target in loader:
                output = model(images)  MARKER
                total += criterion(output, target).item()
        return total / len(loader)
    """


def test_a_helper_handed_the_model_before_a_no_grad_evaluation_is_no_forward(lint):
    check(lint, _VALIDATE.replace("CONTEXT", "with torch.no_grad():").replace("MARKER", ""), CODE)


def test_the_evaluation_forward_after_the_helper_is_still_reported(lint):
    findings = check(lint, _VALIDATE.replace("CONTEXT", "if True:").replace("MARKER", "# expect: TL006"), CODE)
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in `validate()`")
