"""The same beam scoring, but the second permutation does not undo the first: the sum keeps the
first permutation's layout and the view merges dimensions that are out of order in memory."""
import torch


def expand_beams(step_log_probs, cumulative, batch_size, beam_size, steps):
    # step_log_probs: (batch * beam, steps, vocab)
    step = step_log_probs.view(batch_size, beam_size, steps, -1)
    current_ps, current_vs = step.topk(beam_size)
    cumulative = cumulative.view(batch_size, beam_size, 1, 1)
    current_ps = (current_ps.permute(0, 2, 3, 1) + cumulative.permute(0, 2, 3, 1)).transpose(1, 2)
    current_ps = current_ps.view(batch_size, beam_size * steps, beam_size)  # expect: TL008
    scores, ids = current_ps.topk(beam_size)
    return scores, ids
