"""A small inference service next to a fine-tuning job for another head: the served models come
from loaders that hand them back ready for inference (`from_pretrained` returns eval mode; the hub
entry point returns an AutoShape wrapper that handles modes and no-grad itself)."""
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

SENTIMENT = "distilbert-base-uncased-finetuned-sst-2-english"
tokenizer = AutoTokenizer.from_pretrained(SENTIMENT)
sentiment_model = AutoModelForSequenceClassification.from_pretrained(SENTIMENT)
detector = torch.hub.load("ultralytics/yolov5", "yolov5s", pretrained=True)


@torch.inference_mode()
def predict_sentiment(texts):
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    probs = sentiment_model(**batch).logits.softmax(-1)
    return [sentiment_model.config.id2label[i] for i in probs.argmax(-1).tolist()]


def predict_boxes(images, conf=0.25):
    detector.conf = conf
    results = detector(images, size=640)
    return results.pandas().xyxy


def finetune_head(head, features_loader, epochs=3):
    optimizer = torch.optim.AdamW(head.parameters(), lr=1e-3)
    for epoch in range(epochs):
        head.train()
        for feats, labels in features_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(head(feats), labels).backward()
            optimizer.step()
    return head
