"""Checks of an adapter library's merge logic on a tiny pretrained model: forwards whose output is
dropped only show the code runs, and the checking helper asserts on what the forwards compute."""

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

MODEL_ID = "tiny-random-gpt2"


def dummy_inputs():
    return {"input_ids": torch.tensor([[1, 2, 3, 4]]), "attention_mask": torch.tensor([[1, 1, 1, 1]])}


class MergeChecks:
    def _test_merge_keeps_logits(self, model_id, config):
        model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_id), config)
        model.eval()
        inputs = dummy_inputs()
        before = model(**inputs).logits
        model.merge_adapter()
        after = model(**inputs).logits
        assert torch.allclose(before, after, atol=1e-4)

    def _test_delete_adapter(self, model_id, config):
        model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_id), config)
        model.delete_adapter("default")
        assert model.active_adapters == []
        model.base_model(**dummy_inputs())  # must not raise without an adapter

    def test_forward_after_unload(self):
        config = LoraConfig(r=8, init_lora_weights=False)
        model = get_peft_model(AutoModelForCausalLM.from_pretrained(MODEL_ID), config).unload()
        model(**dummy_inputs())[0]
