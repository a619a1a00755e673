"""A detection evaluation script that freezes the detector only when asked to on the command line:
otherwise the evaluation function runs it per image with autograd on."""

import json
import sys

import numpy as np
import torch
from detlib import Detector, decode_boxes, read_image

SCORE_THRESHOLD = 0.05


def evaluate_images(image_paths, model, device):
    detections = []
    for image_id, path in enumerate(image_paths):
        image = read_image(path).astype(np.float32) / 255.0
        batch = torch.from_numpy(image).permute(2, 0, 1).unsqueeze(0).to(device)
        regression, classification = model(batch)  # expect: TL006
        boxes, scores, labels = decode_boxes(regression, classification)
        keep = scores > SCORE_THRESHOLD
        for box, score, label in zip(boxes[keep], scores[keep], labels[keep]):
            detections.append(
                {"image_id": image_id, "bbox": box.tolist(), "score": float(score), "category_id": int(label)}
            )
    return detections


if __name__ == "__main__":
    weights, listing = sys.argv[1], sys.argv[2]
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    detector = Detector(compound_coef=2, num_classes=90)
    detector.load_state_dict(torch.load(weights, map_location="cpu"))
    if "--freeze" in sys.argv:
        detector.requires_grad_(False)
    detector.eval()
    detector = detector.to(device)
    with open(listing) as handle:
        paths = [line.strip() for line in handle if line.strip()]
    results = evaluate_images(paths, detector, device)
    with open("detections.json", "w") as handle:
        json.dump(results, handle)
