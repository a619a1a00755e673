"""Beam search scoring: each candidate's log-probability is added to its beam's running score by
permuting the candidates to the front, broadcasting the scores, and permuting back. The sum is laid
out like its strided first operand, so permuting back gives a contiguous tensor: the views are legal."""
import torch


def expand_beams(step_log_probs, cumulative, batch_size, beam_size):
    # step_log_probs: (batch * beam, vocab); cumulative: (batch * beam,)
    step = step_log_probs.view(batch_size, beam_size, -1)
    current_ps, current_vs = step.topk(beam_size)
    cumulative = cumulative.view(batch_size, beam_size)
    current_ps = (current_ps.permute(0, 2, 1) + cumulative.unsqueeze(1)).permute(0, 2, 1)
    current_ps = current_ps.view(batch_size, beam_size**2)
    current_vs = current_vs.view(batch_size, beam_size**2)
    scores, ids = current_ps.topk(beam_size)
    return scores, current_vs.gather(1, ids), torch.div(ids, beam_size, rounding_mode="floor")


def length_penalised(scores, lengths, alpha=0.6):
    # scores: (batch, beam, steps); lengths: (batch, beam)
    penalty = ((5.0 + lengths.float()) / 6.0) ** alpha
    normalised = (scores.transpose(1, 2) / penalty.unsqueeze(1)).transpose(1, 2)
    return normalised.view(scores.size(0), -1)
