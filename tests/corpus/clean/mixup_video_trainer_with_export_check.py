"""A video classifier trained with mixed soft labels: after the step, the top two classes of each
clip's scores are merged in place for the accuracy meter (this iteration's scores only). A checking
helper for the export tests compares the model's outputs with the exported runtime's."""
import numpy as np
import torch
import torch.nn.functional as F


def train_one_epoch(model, loader, optimizer, meter, use_boxes, mix_labels):
    model.train()
    for clips, boxes, labels in loader:
        clips, labels = clips.cuda(non_blocking=True), labels.cuda()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            if use_boxes:
                scores, aux_scores = model(clips, boxes.cuda())
            else:
                scores, aux_scores = model(clips)
            loss = F.cross_entropy(scores, labels) + 0.1 * F.cross_entropy(aux_scores, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if mix_labels:
            top = labels.topk(2, dim=1).indices
            rows = torch.arange(labels.shape[0], device=labels.device)
            scores[rows, top[:, 0]] += scores[rows, top[:, 1]]
            scores[rows, top[:, 1]] = 0.0
            labels = top[:, 0]
        meter.update(scores.detach(), labels, loss.item())


def validate_against_runtime(model, clips, runtime_session):
    """Used by the export tests: the runtime must reproduce the model's scores."""
    model.cpu().eval()
    expected = [s.detach().numpy() for s in model(clips)]
    produced = runtime_session.run(None, {"clips": clips.numpy()})
    for got, want in zip(produced, expected):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
