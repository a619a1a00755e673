"""A module's manual check at its bottom and a unit test's shared helper: a pretrained encoder run
once on two sentences written in the code, and detectors built and run in eval mode by a helper
that only the test case calls. Neither evaluates a model on data (no TL005, no TL006)."""
import unittest

import torch
from transformers import BertModel, BertTokenizer


class ChunkEmbeddings:
    def __init__(self, device):
        self.device = device
        self.tokenizer = BertTokenizer.from_pretrained("bert-base-uncased")
        self.model = BertModel.from_pretrained("bert-base-uncased").to(device)

    def __call__(self, chunks):
        with torch.no_grad():
            tokens = self.tokenizer(chunks, return_tensors="pt", padding=True)
            mask = tokens["attention_mask"].to(self.device)
            state = self.model(input_ids=tokens["input_ids"].to(self.device), attention_mask=mask)["last_hidden_state"]
            return (state * mask[:, :, None]).sum(1) / mask[:, :, None].sum(1)


def _test():
    device = torch.device("cpu")
    bert = ChunkEmbeddings(device)
    text = ["Replace me by any text you'd like.", "Second sentence"]
    encoded = bert.tokenizer(text, return_tensors="pt", add_special_tokens=False, padding=True)
    output = bert.model(
        input_ids=encoded["input_ids"].to(device),
        attention_mask=encoded["attention_mask"].to(device),
    )
    print(output["last_hidden_state"].shape, output["pooler_output"].shape)
    print(bert.tokenizer.convert_ids_to_tokens(encoded["input_ids"][0]))


def create_model(cfg, device):
    from detection.modeling import build_detection_model

    return build_detection_model(cfg).to(device)


def _test_run_selected_detectors(case, cfg_files, device):
    for cfg_file in cfg_files:
        with case.subTest(cfg_file=cfg_file):
            cfg = load_config(cfg_file)
            model = create_model(cfg, device)
            images = to_image_list([torch.rand(3, s, int(s * 1.2)) for s in cfg.INPUT.MIN_SIZE_TRAIN])
            model.eval()
            output = model(images)
            case.assertEqual(len(output), len(images.image_sizes))


class TestDetectors(unittest.TestCase):
    def test_test_run_selected_detectors(self):
        _test_run_selected_detectors(self, ["e2e_faster_rcnn_R_50_FPN_1x.yaml"], "cpu")

    @unittest.skipIf(not torch.cuda.is_available(), "no CUDA")
    def test_run_selected_detectors_cuda(self):
        _test_run_selected_detectors(self, ["e2e_mask_rcnn_R_50_FPN_1x.yaml"], "cuda")


if __name__ == "__main__":
    _test()
