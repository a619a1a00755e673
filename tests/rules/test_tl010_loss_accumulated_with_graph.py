"""TL010 loss-accumulated-with-graph: running totals that keep the autograd graph alive."""

import textwrap

from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL010"


# ----- positives ------------------------------------------------------------------------------


def test_running_loss_plus_equals_loss(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn
        criterion = nn.CrossEntropyLoss()
        def train_epoch(model, loader, optimizer):
            model.train()
            running_loss = 0.0
            for images, labels in loader:
                optimizer.zero_grad()
                loss = criterion(model(images), labels)
                loss.backward()
                optimizer.step()
                running_loss += loss  # expect: TL010
            return running_loss / len(loader)
        """,
        CODE,
    )
    finding = findings[0]
    assert finding.severity == "warning" and finding.name == "loss-accumulated-with-graph"
    assert "`running_loss` accumulates `loss`" in finding.message
    assert "`loss.item()`" in finding.message


def test_help_keeps_item_on_the_whole_added_value(lint):
    # `.item()` written after `loss / len(loader)` would apply to `len(loader)`: the help brackets it.
    findings = check(
        lint,
        """
        import torch.nn as nn
        criterion = nn.CrossEntropyLoss()
        def train_epoch(model, loader, optimizer):
            model.train()
            epoch_loss = 0.0
            for images, labels in loader:
                optimizer.zero_grad()
                loss = criterion(model(images), labels)
                loss.backward()
                optimizer.step()
                epoch_loss += loss / len(loader)  # expect: TL010
            return epoch_loss
        """,
        CODE,
    )
    assert "add `(loss / len(loader)).item()` (or `(loss / len(loader)).detach()`) instead" in findings[0].message


def test_amp_loop_total_equals_total_plus_scaled_loss(lint):
    findings = check(
        lint,
        """
        import torch
        def train(model, loader, optimizer, scaler):
            total = 0
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = model(x, y)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
                total = total + loss * x.size(0)  # expect: TL010
            return total
        """,
        CODE,
    )
    assert "`loss * x.size(0)`" in findings[0].message


def test_meter_over_dict_of_losses(lint):
    check(
        lint,
        """
        from collections import defaultdict
        def run(model, loader, optimizer):
            meters = defaultdict(float)
            for data in loader:
                loss_dict = model(data)
                losses = sum(loss_dict.values())
                optimizer.zero_grad()
                losses.backward()
                optimizer.step()
                for k, v in loss_dict.items():
                    meters[k] += v  # expect: TL010
        """,
        CODE,
    )


def test_losses_appended_and_stacked_later(lint):
    findings = check(
        lint,
        """
        import torch
        def fit(model, batches, opt, epochs):
            for epoch in range(epochs):
                epoch_losses = []
                for x, y in batches:
                    opt.zero_grad()
                    out = model(x)
                    loss = torch.nn.functional.mse_loss(out, y)
                    loss.backward()
                    opt.step()
                    epoch_losses.append(loss)  # expect: TL010
                print(epoch, torch.stack(epoch_losses).mean())
        """,
        CODE,
    )
    assert "`epoch_losses.append(loss)`" in findings[0].message


def test_accumulated_before_backward_in_accelerate_loop(lint):
    check(
        lint,
        """
        def training_function(accelerator, model, train_dataloader, optimizer, lr_scheduler):
            for epoch in range(3):
                total_loss = 0
                for step, batch in enumerate(train_dataloader):
                    outputs = model(**batch)
                    loss = outputs.loss
                    total_loss += loss  # expect: TL010
                    accelerator.backward(loss)
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


def test_loss_returned_by_a_train_step_helper(lint):
    check(
        lint,
        """
        def train_step(model, batch, criterion, optimizer):
            optimizer.zero_grad()
            x, y = batch
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            return loss

        def train(model, loader, criterion, optimizer, epochs):
            for epoch in range(epochs):
                epoch_loss = 0.0
                for batch in loader:
                    epoch_loss += train_step(model, batch, criterion, optimizer)  # expect: TL010
        """,
        CODE,
    )


def test_self_attribute_total_in_trainer_method(lint):
    check(
        lint,
        """
        class Trainer:
            def train_epoch(self):
                for x, y in self.loader:
                    self.optimizer.zero_grad()
                    loss = self.criterion(self.model(x), y)
                    loss.backward()
                    self.optimizer.step()
                    self.epoch_loss += loss  # expect: TL010
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_item_detach_and_float_conversions(lint):
    assert (
        lint(
            """
        def train(model, loader, criterion, optimizer, accelerator):
            a = b = c = d = e = 0.0
            losses = []
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                a += loss.item() * x.size(0)
                b += loss.detach().float()
                c = c + float(loss)
                d += accelerator.gather(loss.detach()).mean()
                step_loss = loss.item()
                e += step_loss
                losses.append(loss.item())
            return a, b, c, d, e, sum(losses)
        """,
            CODE,
        )
        == []
    )


def test_summed_losses_that_are_backpropagated(lint):
    assert (
        lint(
            """
        import torch
        def step(model, heads, x, targets, optimizer):
            for batch in range(10):
                optimizer.zero_grad()
                loss = 0
                parts = []
                for head, y in zip(heads, targets):
                    l = head(model(x), y)
                    loss += l
                    parts.append(l)
                total = loss + torch.stack(parts).sum()
                total.backward()
                optimizer.step()
        """,
            CODE,
        )
        == []
    )


def test_evaluation_under_no_grad(lint):
    assert (
        lint(
            """
        import torch
        def train_and_eval(model, loader, val_loader, criterion, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            val_loss = 0
            with torch.no_grad():
                for x, y in val_loader:
                    val_loss += criterion(model(x), y)
            return val_loss
        """,
            CODE,
        )
        == []
    )


def test_mc_samples_inside_one_closure_step(lint):
    # A few backward passes summed inside one optimizer step: bounded, not a leak.
    assert (
        lint(
            """
        import torch
        def training_step(self, batch):
            def closure():
                losses = []
                for i in range(2):
                    loss = self.compute_loss(batch)
                    losses.append(loss)
                    self.manual_backward(loss, retain_graph=i == 0)
                return torch.stack(losses).mean()
            self.opt.step(closure=closure)
        """,
            CODE,
        )
        == []
    )


def test_list_of_losses_never_aggregated_and_metrics_counters(lint):
    assert (
        lint(
            """
        def train(model, loader, criterion, optimizer):
            correct = 0
            seen = 0
            history = []
            for x, y in loader:
                optimizer.zero_grad()
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
                correct += (out.argmax(1) == y).sum()
                seen += y.size(0)
                history.append(loss)
            return correct / seen
        """,
            CODE,
        )
        == []
    )


def test_nanogpt_micro_step_loop(lint):
    assert (
        lint(
            """
        for iter_num in range(max_iters):
            for micro_step in range(gradient_accumulation_steps):
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                X, Y = get_batch('train')
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            lossf = loss.item() * gradient_accumulation_steps
            running = lossf if iter_num == 0 else running + lossf
        """,
            CODE,
        )
        == []
    )


def test_rebound_to_item_before_accumulating(lint):
    assert (
        lint(
            """
        def train(model, loader, criterion, optimizer):
            total = 0
            for x, y in loader:
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                loss = loss.item()
                total += loss
        """,
            CODE,
        )
        == []
    )


# ----- further cases (both kinds), from the audit and real-world shapes ---------------------


def test_style_transfer_partial_losses_summed_then_backpropagated(lint):
    # Shaped like a style-transfer loop: a per-layer sum that is scaled, added to the
    # content loss and backpropagated; only `.item()` values are kept across batches.
    assert (
        lint(
            """
        def train(epochs, loader, vgg, transformer, optimizer, mse_loss, grams, weight):
            for e in range(epochs):
                agg = 0.0
                for x, _ in loader:
                    optimizer.zero_grad()
                    feats = vgg(transformer(x))
                    style = 0.0
                    for f, g in zip(feats, grams):
                        style += mse_loss(f, g)
                    style *= weight
                    total = style + mse_loss(feats[1], x)
                    total.backward()
                    optimizer.step()
                    agg += style.item()
        """,
            CODE,
        )
        == []
    )


def test_helper_returning_a_number(lint):
    assert (
        lint(
            """
        def train_step(model, batch, criterion, optimizer):
            optimizer.zero_grad()
            loss = criterion(model(batch[0]), batch[1])
            loss.backward()
            optimizer.step()
            return loss.item()

        def train(model, loader, criterion, optimizer):
            total = 0.0
            for batch in loader:
                loss = train_step(model, batch, criterion, optimizer)
                total += loss
            return total
        """,
            CODE,
        )
        == []
    )


# ----- totals kept on the object by a per-batch method --------------------------------------------

_STEP_METHOD = """
    import torch
    import torch.nn.functional as F

    class Trainer:
        def __init__(self, model, optimizer):
            self.model, self.optimizer = model, optimizer
            self.running_loss, self.eval_loss = 0.0, 0.0

        def train_step(self, x, y):
            loss = F.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.running_loss += LOSS
            step_total = 0.0
            step_total += loss

        @torch.no_grad()
        def eval_step(self, x, y):
            self.eval_loss += F.mse_loss(self.model(x), y)

        def train_epoch(self, loader):
            for x, y in loader:
                self.train_step(x, y)
            for x, y in loader:
                self.eval_step(x, y)
    """


def test_total_kept_on_self_by_a_per_batch_method(lint):
    source = _STEP_METHOD.replace("+= LOSS", "+= loss  # expect: TL010")
    check(lint, source, "TL010")


def test_detached_total_on_self_and_totals_that_do_not_outlive_the_step_are_silent(lint):
    assert lint(_STEP_METHOD.replace("+= LOSS", "+= loss.item()"), "TL010") == []


# ----- what carries a graph is told from data flow (torchmodel/graphs.py) ------------------------

_PPO = """
    from dataclasses import dataclass

    import torch
    import torch.nn as nn
    import tyro


    @dataclass
    class Args:
        num_envs: int = 4
        num_steps: int = 128
        ent_coef: float = 0.01
        vf_coef: float = 0.5


    class Agent(nn.Module):
        def __init__(self):
            super().__init__()
            self.actor = nn.Linear(4, 2)
            self.critic = nn.Linear(4, 1)

        def get_action_and_value(self, x):
            logits = self.actor(x)
            probs = torch.distributions.Categorical(logits=logits)
            action = probs.sample()
            return action, probs.log_prob(action), probs.entropy(), self.critic(x)


    args = tyro.cli(Args)
    agent = Agent()
    optimizer = torch.optim.Adam(agent.parameters(), lr=3e-4)
    global_step = 0
    episodes = 0
    running_loss = 0.0
    for iteration in range(1, 100):
        for step in range(args.num_steps):
            global_step += args.num_envs
            global_step += 1 * args.num_envs
            episodes = episodes + len(range(args.num_envs))
        for epoch in range(4):
            obs = torch.randn(args.num_steps, 4)
            _, newlogprob, entropy, newvalue = agent.get_action_and_value(obs)
            pg_loss = -newlogprob.mean()
            v_loss = 0.5 * (newvalue**2).mean()
            loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running_loss += LOSS
"""


def test_counters_of_config_values_are_not_attached_because_the_loss_reads_the_config(lint):
    # The loss is built from `args.ent_coef * ...`: that says nothing about `args.num_envs`, an
    # option of an opaque namespace (unknown, never taken for attached), added to an int counter.
    check(lint, _PPO.replace("+= LOSS", "+= loss.item()"), CODE)


def test_the_loss_of_the_same_program_is_still_attached(lint):
    findings = check(lint, _PPO.replace("+= LOSS", "+= loss  # expect: TL010"), CODE)
    assert "`running_loss` accumulates `loss`" in findings[0].message


def test_graph_carried_through_tensor_ops_and_fields_of_a_model_output(lint):
    check(
        lint,
        """
        import torch
        import torch.nn.functional as F

        def train(model, loader, optimizer, cfg):
            total = aux_total = weighted = 0.0
            for batch in loader:
                outputs = model(**batch)
                optimizer.zero_grad()
                outputs.loss.backward()
                optimizer.step()
                total += outputs.loss  # expect: TL010
                aux_total += torch.max(F.l1_loss(outputs.logits, batch["y"]), outputs.loss)  # expect: TL010
                weighted += cfg.loss_weight * outputs.loss  # expect: TL010
        """,
        CODE,
    )


def test_values_that_carry_no_graph_or_are_unknown_are_silent(lint):
    check(
        lint,
        """
        import torch

        def train(model, loader, optimizer, criterion, opts, scorer):
            seen = tokens = part_total = val_total = 0
            for x, y in loader:
                optimizer.zero_grad()
                out = model(x)
                loss = criterion(out, y)
                part = scorer.penalty(x)
                (loss + part).backward()
                optimizer.step()
                seen += x.shape[0] * opts.world_size
                tokens += torch.numel(y) + len(y)
                part_total += part
                with torch.no_grad():
                    val = criterion(model(x), y)
                val_total += val
        """,
        CODE,
    )


def test_a_field_proved_attached_by_backward_is_so_only_for_the_object_it_was_read_from(lint):
    # `outputs.loss` of the training batch was backpropagated; the evaluation's `outputs` comes from
    # a forward under no_grad, so its `.loss` carries no graph. A field of an opaque result that
    # was itself sent to backward is attached.
    check(
        lint,
        """
        import torch

        def train(model, loader, eval_loader, accelerator, optimizer, compute):
            for epoch in range(3):
                model.train()
                parts = 0.0
                for batch in loader:
                    outputs = model(**batch)
                    loss = outputs.loss
                    accelerator.backward(loss)
                    optimizer.step()
                    optimizer.zero_grad()
                    terms = compute(batch)
                    terms["total"].backward()
                    parts += terms["total"]  # expect: TL010
                model.eval()
                losses = []
                for batch in eval_loader:
                    with torch.no_grad():
                        outputs = model(**batch)
                    loss = outputs.loss
                    losses.append(loss)
                print(torch.cat(losses).mean())
        """,
        CODE,
    )


def test_a_loss_divided_by_a_helper_of_the_file_is_attached(lint):
    # Proving what the backward carries asks what `count_tokens` returns (a plain int): the
    # function's own file is asked while its backward calls are being read.
    check(
        lint,
        """
        import torch.nn.functional as F

        def count_tokens(batches):
            return sum(int((b["labels"] != -100).sum()) for b in batches)

        def train(model, loader, optimizer, epochs):
            for epoch in range(epochs):
                total = 0.0
                for window in loader:
                    optimizer.zero_grad()
                    loss = F.cross_entropy(model(window[0]), window[1], reduction="sum") / count_tokens(window)
                    loss.backward()
                    optimizer.step()
                    total += loss  # expect: TL010
        """,
        CODE,
    )


def test_values_stacked_into_the_loss_of_their_episode_are_silent(lint):
    # REINFORCE keeps each step's value estimate with its graph on purpose: the list is stacked
    # into the episode's loss and backpropagated, then rebuilt.
    check(
        lint,
        """
        import torch
        import torch.nn.functional as F

        def run(env, policy, optimizer, episodes):
            for episode in range(episodes):
                obs, done = env.reset(), False
                values, rewards = [], []
                while not done:
                    logits, value = policy(torch.as_tensor(obs))
                    obs, reward, done = env.step(logits.argmax().item())
                    values.append(value)
                    rewards.append(reward)
                values = torch.stack(values)
                value_loss = F.smooth_l1_loss(values, torch.tensor(rewards))
                optimizer.zero_grad()
                value_loss.backward()
                optimizer.step()
        """,
        CODE,
    )


def test_elements_of_a_returned_tuple_are_judged_one_by_one(lint):
    # The step helper returns the losses (attached) with the batch size (an int) in one tuple,
    # or None while it only caches features; the caller unpacks it through a name.
    check(
        lint,
        """
        import torch

        def train_step(model, batch, cache, optimizer, args):
            if len(cache) < args.accum_freq:
                cache.append(batch)
                return None
            optimizer.zero_grad()
            losses = model(**batch)
            total = sum(losses.values())
            total.backward()
            optimizer.step()
            return losses, len(batch["input_ids"]), cache

        def train_one_epoch(model, loader, optimizer, args, state):
            cache = []
            num_samples = 0
            running = 0.0
            for batch in loader:
                result = train_step(model, batch, cache, optimizer, args)
                if result is None:
                    continue
                losses, step_batch_size, cache = result
                num_samples += step_batch_size * args.world_size
                state.samples_seen += step_batch_size * args.world_size
                running += losses["loss"]  # expect: TL010
        """,
        CODE,
    )


def test_only_a_python_number_in_the_loss_proves_the_other_operand_attached(lint):
    # A buffer filled in place and a list filled by appends are no numbers: the backward of
    # `buffer.sum() * weight` or `sum(parts) / count` says nothing about `weight` or `count`
    # (data of the batch here). `loss / 4` does prove `loss` attached.
    check(
        lint,
        """
        import torch

        def train(model, loader, optimizer, compute, n_tasks):
            seen = counted = 0
            total = 0.0
            for batch in loader:
                per_task = torch.zeros(n_tasks)
                parts = []
                for t in range(n_tasks):
                    per_task[t] = compute(model, batch, t)
                    parts.append(compute(model, batch, t))
                weight, count = batch["weight"], batch["count"]
                optimizer.zero_grad()
                (per_task.sum() * weight).backward()
                (sum(parts) / count).backward()
                step_loss = compute(model, batch, 0)
                (step_loss / 4).backward()
                optimizer.step()
                seen += weight
                counted += count
                total += step_loss  # expect: TL010
        """,
        CODE,
    )


def test_what_a_callable_loss_object_returns_is_read_in_its_call_method(lint):
    # `compute_loss(...)` runs ComputeLoss.__call__: its first element carries the graph, its second
    # is detached.
    check(
        lint,
        """
        import torch.nn.functional as F

        class ComputeLoss:
            def __call__(self, out, y):
                loss = F.cross_entropy(out, y)
                return loss, loss.detach()

        def train(model, loader, opt):
            compute_loss = ComputeLoss()
            total, logged = 0, 0
            for x, y in loader:
                loss, items = compute_loss(model(x), y)
                total += loss  # expect: TL010
                logged += items
                opt.zero_grad()
                loss.backward()
                opt.step()
            return total, logged
        """,
        "TL010",
    )


# ----- a rollout buffer that reaches the loss through arithmetic ---------------------------------
def test_rollout_values_reaching_a_weighted_loss_are_kept_on_purpose(lint):
    check(
        lint,
        """
        import torch

        obs = env.reset()
        while step < total_steps:
            critic_values, rewards = [], []
            bonus = 0
            for _ in range(horizon):
                policy, critic_value = model(torch.as_tensor(obs))
                move = policy.sample()
                obs, reward, done, _ = env.step(move.numpy())
                bonus += policy.entropy().mean()
                critic_values.append(critic_value)
                rewards.append(torch.as_tensor(reward))
                step += 1
            targets = discounted(rewards).detach()
            gap = targets - torch.cat(critic_values)
            value_loss = gap.pow(2).mean()
            total = 0.25 * value_loss - 0.01 * bonus + penalty(gap.detach())
            optimizer.zero_grad()
            total.backward()
            optimizer.step()
        """,
        CODE,
    )


def test_log_of_critic_values_kept_across_updates_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        history = []
        while step < total_steps:
            critic_values = []
            for _ in range(horizon):
                policy, critic_value = model(torch.as_tensor(obs))
                obs, reward, done, _ = env.step(policy.sample().numpy())
                critic_values.append(critic_value)
                history.append(critic_value)  # expect: TL010
                step += 1
            gap = returns(reward) - torch.cat(critic_values)
            total = 0.5 * gap.pow(2).mean()
            optimizer.zero_grad()
            total.backward()
            optimizer.step()
        plot(torch.stack(history))
        """,
        CODE,
    )
    assert "`history.append(critic_value)`" in findings[0].message


# A model whose forward returns the loss beside a logging copy of it (`loss.item()`): each element
# of the model's output is judged by what the project's `forward` computes for it, through the
# handle the training function is given, a mixed-precision `initialize` and a data-parallel wrapper.
_PRETRAIN_MODEL = """
import numpy as np
import torch
import torch.nn as nn
from apex import amp


class Pretrainer(nn.Module):
    def __init__(self, encoder, hidden, vocab):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids, labels):
        scores = self.head(self.encoder(ids))
        mlm_loss = nn.functional.cross_entropy(scores.view(-1, scores.size(-1)), labels.view(-1))
        logged = mlm_loss.item()
        return mlm_loss, logged, scores


def train(model, optimizer, loader):
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    model = torch.nn.DataParallel(model)
    history = []
    for ids, labels in loader:
        loss, logged, _ = model(ids, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        history.append({kept})
    return np.mean(history)


def main(encoder, loader):
    model = Pretrainer(encoder, 768, 30522)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train(model, optimizer, loader)
"""


def test_the_attached_element_of_a_project_models_output_is_reported(lint):
    findings = check(
        lint, _PRETRAIN_MODEL.replace("history.append({kept})", "history.append(loss)  # expect: TL010"), CODE
    )
    assert "`history.append(loss)` keeps a tensor still attached" in findings[0].message


def test_an_element_the_models_forward_makes_a_python_number_is_not_reported(lint):
    check(lint, _PRETRAIN_MODEL.replace("{kept}", "logged"), CODE)


# ----- totals rebound afresh every training iteration ------------------------------------------


def test_list_emptied_before_the_step_loop_still_reported(lint):
    """Emptied once, before the loop that repeats the step: the list outlives every iteration."""
    findings = check(
        lint,
        """
        import torch
        def fit(net, batches, loss_fn, opt):
            step_losses = []
            for inputs, targets in batches:
                opt.zero_grad()
                for part_x, part_y in zip(inputs.chunk(4), targets.chunk(4)):
                    piece = loss_fn(net(part_x), part_y)
                    step_losses.append(piece)  # expect: TL010
                    piece.backward()
                opt.step()
            return torch.stack(step_losses).mean()
        """,
        CODE,
    )
    assert "`step_losses.append(piece)`" in findings[0].message
    assert "grows across iterations" in findings[0].message


def test_lists_emptied_at_the_top_of_each_step_are_not_reported(lint):
    """Each step starts its own lists: the chunks' losses and logits live for one step only."""
    check(
        lint,
        """
        import torch
        def fit(net, batches, loss_fn, opt, log):
            for inputs, targets in batches:
                opt.zero_grad()
                chunk_logits, chunk_losses = [], []
                chunk_logits = []
                chunk_losses = []
                for part_x, part_y in zip(inputs.chunk(4), targets.chunk(4)):
                    logits = net(part_x)
                    chunk_logits.append(logits)
                    piece = loss_fn(logits, part_y)
                    chunk_losses.append(piece)
                    piece.backward()
                opt.step()
                log(torch.cat(chunk_logits).argmax(1), sum(chunk_losses).item())
        """,
        CODE,
    )


def test_total_reassigned_by_an_inner_adaptation_loop_is_not_reported(lint):
    """`score` is bound to a fresh loss by the inner loop of every outer iteration before the
    `+=`: at most one iteration's graph is held."""
    check(
        lint,
        """
        import torch
        import torch.nn.functional as F
        def adapt_and_score(encoder, head, head_opt, tasks, steps):
            score = torch.zeros(1)
            for (sx, sy), (qx, qy) in tasks:
                for _ in range(steps):
                    score = F.cross_entropy(head(encoder(sx).detach()), sy)
                    head_opt.zero_grad()
                    score.backward()
                    head_opt.step()
                score += F.cross_entropy(head(encoder(qx)), qy)
            return score
        """,
        CODE,
    )


def test_total_reset_only_on_some_iterations_still_reported(lint):
    """A reset under a condition leaves the other iterations' graphs chained together."""
    check(
        lint,
        """
        def fit(net, batches, loss_fn, opt, log_every):
            window = 0.0
            for i, (x, y) in enumerate(batches):
                opt.zero_grad()
                loss = loss_fn(net(x), y)
                loss.backward()
                opt.step()
                window += loss  # expect: TL010
                if i % log_every == 0:
                    print(window / log_every)
                    window = 0.0
        """,
        CODE,
    )


def test_reset_after_a_continue_still_reported(lint):
    """A `continue` before the reset skips it on some iterations."""
    check(
        lint,
        """
        def fit(net, batches, loss_fn, opt):
            total = 0.0
            for x, y in batches:
                opt.zero_grad()
                loss = loss_fn(net(x), y)
                loss.backward()
                opt.step()
                total = total + loss  # expect: TL010
                if x is None:
                    continue
                total = 0.0
        """,
        CODE,
    )


# ----- a total reset on every iteration that updates the weights -----------------------------------
# It holds the graphs of one accumulation window at most, graphs alive until that window's step anyway.


def test_total_reset_when_accelerate_syncs_gradients_is_not_reported(lint):
    """Accelerate's prepared optimizer steps only when `sync_gradients` is set inside
    `accelerator.accumulate(...)`; the window's total is reset right then, epoch after epoch."""
    check(
        lint,
        """
        import torch
        def run(accelerator, net, train_dl, criterion, opt, n_accum, epochs, history):
            for epoch in range(epochs):
                window_loss, window_hits = 0, 0
                for inputs, labels in train_dl:
                    with accelerator.accumulate(net):
                        logits = net(inputs)
                        loss = criterion(logits, labels)
                        window_loss += loss / n_accum
                        window_hits += (logits.argmax(1) == labels).float().mean() / n_accum
                        accelerator.backward(loss)
                        if accelerator.sync_gradients:
                            accelerator.clip_grad_norm_(net.parameters(), 1.0)
                        opt.step()
                        opt.zero_grad()
                    if accelerator.sync_gradients:
                        gathered = accelerator.gather_for_metrics(window_loss)
                        history.append(torch.mean(gathered).item())
                        window_loss, window_hits = 0, 0
        """,
        CODE,
    )


def test_total_reset_in_the_branch_that_steps_is_not_reported(lint):
    """`(step + 1) % accum_steps == 0` picks the update iterations: the reset in that branch, or
    in a later `if` with the same test, runs on every one of them."""
    check(
        lint,
        """
        def fit(model, loader, loss_fn, optimizer, accum_steps, log):
            running = 0.0
            chunk = 0.0
            for step, (x, y) in enumerate(loader):
                loss = loss_fn(model(x), y) / accum_steps
                loss.backward()
                running += loss
                chunk = chunk + loss
                if (step + 1) % accum_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
                    log(running.item())
                    running = 0.0
                if not (step + 1) % accum_steps == 0:
                    continue
                chunk = 0.0
        """,
        CODE,
    )


def test_total_reset_only_when_logging_in_an_accelerate_loop_is_reported(lint):
    """The reset waits for a logging step, not for each update: the graphs of every micro-step
    between two logs stay chained."""
    findings = check(
        lint,
        """
        def run(accelerator, net, train_dl, criterion, opt, log_every):
            window_loss = 0
            for it, (inputs, labels) in enumerate(train_dl):
                with accelerator.accumulate(net):
                    loss = criterion(net(inputs), labels)
                    window_loss += loss  # expect: TL010
                    accelerator.backward(loss)
                    opt.step()
                    opt.zero_grad()
                if it % log_every == 0:
                    accelerator.print(window_loss.item() / log_every)
                    window_loss = 0
        """,
        CODE,
    )
    assert "`window_loss` accumulates `loss`, a tensor still attached" in findings[0].message


def test_total_reset_at_the_end_of_the_epoch_or_more_rarely_than_the_step_is_reported(lint):
    """Reset after the batch loop, or under a test other than the step's: many updates' graphs
    pile up in between."""
    findings = check(
        lint,
        """
        def fit(model, loader, loss_fn, optimizer, accum_steps, epochs, log):
            for epoch in range(epochs):
                epoch_total = 0.0
                recent = 0.0
                for step, (x, y) in enumerate(loader):
                    loss = loss_fn(model(x), y) / accum_steps
                    loss.backward()
                    epoch_total += loss  # expect: TL010
                    recent += loss  # expect: TL010
                    if (step + 1) % accum_steps == 0:
                        optimizer.step()
                        optimizer.zero_grad()
                    if (step + 1) % (10 * accum_steps) == 0:
                        log(recent.item())
                        recent = 0.0
                log(epoch_total.item())
                epoch_total = 0.0
        """,
        CODE,
    )
    assert [f.line for f in findings] == [9, 10]
    assert "`recent` accumulates `loss`" in findings[1].message


# ----- in-place edits of an element of this iteration's own tensor ------------------------------


def test_element_of_a_table_kept_across_steps_still_reported(lint):
    """The per-class table is built once before the loop: every step's graph is added into it."""
    findings = check(
        lint,
        """
        import torch
        def fit(net, batches, loss_fn, opt, num_classes):
            per_class = torch.zeros(num_classes)
            for inputs, targets in batches:
                opt.zero_grad()
                loss = loss_fn(net(inputs), targets)
                loss.backward()
                opt.step()
                per_class[targets[0]] += loss  # expect: TL010
            return per_class
        """,
        CODE,
    )
    assert "`per_class[targets[0]]` accumulates `loss`" in findings[0].message


def test_element_of_an_alias_of_kept_state_still_reported(lint):
    """`table = self.history` each step binds no new object: the element update writes into the
    history the trainer keeps across steps."""
    check(
        lint,
        """
        class Trainer:
            def fit(self, batches):
                for inputs, targets in batches:
                    self.opt.zero_grad()
                    loss = self.loss_fn(self.net(inputs), targets)
                    loss.backward()
                    self.opt.step()
                    table = self.history
                    table[self.step] += loss  # expect: TL010
        """,
        CODE,
    )


def test_in_place_edit_of_this_iterations_outputs_is_not_reported(lint):
    """`scores` is the model's output of this iteration, bound afresh on every path (either
    branch of the `if`, tuple-unpacked): folding one column into another edits it in place and
    nothing survives into the next iteration."""
    check(
        lint,
        """
        import torch
        def fit(net, batches, loss_fn, opt, soft_targets, with_boxes):
            for inputs, boxes, targets in batches:
                with torch.autocast("cuda"):
                    if with_boxes:
                        scores, aux = net(inputs, boxes)
                    else:
                        scores, aux = net(inputs)
                    loss = loss_fn(scores, targets) + aux.mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if soft_targets:
                    order = targets.topk(2, dim=1).indices
                    rows = torch.arange(targets.shape[0])
                    scores[rows, order[:, 0]] += scores[rows, order[:, 1]]
                    scores[rows, order[:, 1]] = 0.0
                    targets = order[:, 0]
        """,
        CODE,
    )


def test_output_bound_in_only_one_branch_still_reported(lint):
    """Only one branch binds `scores` afresh: on the other path the element update adds into the
    outputs of an earlier iteration."""
    check(
        lint,
        """
        def fit(net, batches, loss_fn, opt, refresh):
            scores = None
            for inputs, targets in batches:
                if refresh:
                    scores = net(inputs)
                loss = loss_fn(net(inputs), targets)
                opt.zero_grad()
                loss.backward()
                opt.step()
                scores[0] += loss  # expect: TL010
        """,
        CODE,
    )


# ----- a loss built per step and backpropagated by a helper (told by its summary, not its name) -------

_STEP_HELPER = """
    class GanTrainer:
        def backprop(self, opt, objective, clip=None):
            opt.zero_grad()
            objective.backward()
            opt.step()

        def log_value(self, opt, objective):
            print(opt, float(objective))
"""


def test_sum_handed_to_a_helper_that_backpropagates_it_is_not_reported(lint):
    # Summed over four batches and backpropagated by the helper, as `acc.backward()` would be.
    assert (
        check(
            lint,
            _STEP_HELPER
            + """
        def fit(self, disc, crit, loader, opt):
            acc = 0
            for i, (real, fake) in enumerate(loader):
                acc = acc + crit(disc(real), disc(fake))
                if (i + 1) % 4 == 0:
                    self.backprop(opt, acc)
                    acc = 0
    """,
            CODE,
        )
        == []
    )


def test_total_of_losses_a_helper_backpropagates_is_reported(lint):
    findings = check(
        lint,
        _STEP_HELPER
        + """
        def fit(self, disc, crit, loader, opt):
            seen = 0
            for real, fake in loader:
                d_cost = crit(disc(real), disc(fake))
                self.backprop(opt, d_cost)
                seen += d_cost  # expect: TL010
            return seen
    """,
        CODE,
    )
    assert "`seen` accumulates `d_cost`" in findings[0].message


def test_sum_handed_to_a_helper_that_only_logs_it_is_reported(lint):
    findings = check(
        lint,
        _STEP_HELPER
        + """
        def fit(self, disc, crit, loader, opt):
            acc = 0
            for real, fake in loader:
                d_cost = crit(disc(real), disc(fake))
                d_cost.backward()
                opt.step()
                acc = acc + d_cost  # expect: TL010
                self.log_value(opt, acc)
    """,
        CODE,
    )
    assert "`acc` accumulates `d_cost`" in findings[0].message


_HELPERS_FILE = """
    class Base:
        @staticmethod
        def optimize(opt, objective, model=None):
            opt.zero_grad()
            objective.backward()
            opt.step()
"""


def _gan_project(step_body: str) -> dict[str, str]:
    return {
        "gan/base.py": _HELPERS_FILE,
        "gan/trainer.py": """
            import torch
            from gan.base import Base


            class Trainer(Base):
                def __init__(self, disc, crit):
                    self.disc = disc
                    self.crit = crit
                    self.opt = torch.optim.Adam(disc.parameters())

                def train_disc(self, batches, steps):
                    global d_cost
                    for step in range(steps):
            """
        + textwrap.indent(textwrap.dedent(step_body), " " * 24)
        + """
                def run(self, loader, epochs):
                    for epoch in range(epochs):
                        for real, fake in loader:
                            self.train_disc([(real, fake)], 3)
                            self.opt.zero_grad()
                            self.crit(self.disc(fake), self.disc(real)).backward()
                            self.opt.step()
            """,
    }


def test_global_loss_reset_each_step_and_backpropagated_in_another_file_is_not_reported(tmp_path):
    body = """
        d_cost = 0
        for real, fake in batches:
            d_cost += self.crit(self.disc(real), self.disc(fake))
        self.optimize(self.opt, d_cost, self.disc)
        print(d_cost.item())
    """
    assert lint_in_project(tmp_path, _gan_project(body), "gan/trainer.py", CODE) == []


def test_global_total_never_reset_in_its_function_is_reported(tmp_path):
    body = """
        for real, fake in batches:
            loss = self.crit(self.disc(real), self.disc(fake))
            self.optimize(self.opt, loss, self.disc)
            d_cost += loss
    """
    findings = lint_in_project(tmp_path, _gan_project(body), "gan/trainer.py", CODE)
    assert [(f.line, f.code) for f in findings] == [(19, CODE)]
    assert "`d_cost` accumulates `loss`" in findings[0].message


# ----- a total rebound to a plain number before the next iteration carries no graph ---------------


def test_total_rebound_to_a_float_of_itself_is_not_reported(lint):
    check(
        lint,
        """
        import torch
        def train(critic, loader, opt):
            balance = 0.0
            for real in loader:
                opt.zero_grad()
                recon = critic(real).mean()
                (recon * (1.0 + balance)).backward()
                opt.step()
                balance = balance + 0.001 * recon
                balance = float(balance.cpu().data.numpy())
                balance = min(1.0, max(0.0, balance))
        """,
        CODE,
    )


def test_total_rebound_to_a_tensor_of_itself_is_reported(lint):
    findings = check(
        lint,
        """
        import torch
        def train(critic, loader, opt):
            balance = 0.0
            for real in loader:
                opt.zero_grad()
                recon = critic(real).mean()
                recon.backward()
                opt.step()
                balance = balance + 0.001 * recon  # expect: TL010
                balance = torch.clamp(balance, 0.0, 1.0)
        """,
        CODE,
    )
    assert (
        findings[0].headline == "`balance` accumulates `0.001 * recon`, a tensor still attached to the autograd graph"
    )


def test_total_made_a_number_only_on_one_branch_is_reported(lint):
    check(
        lint,
        """
        import torch
        def train(model, loader, opt, log_every):
            running = 0.0
            for step, (x, y) in enumerate(loader):
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                running += loss  # expect: TL010
                if step % log_every == 0:
                    running = running.item()
        """,
        CODE,
    )


# ----- a loop over a dict's own items that rewrites every entry makes each entry plain ---------


def test_entries_rewritten_to_numbers_by_a_loop_over_the_dict_are_plain(lint):
    check(
        lint,
        """
        def fit(model, criterion, optimizer, loader, log):
            running = 0.0
            for images, targets in loader:
                terms = criterion(model(images), targets)
                optimizer.zero_grad()
                terms["total"].backward()
                optimizer.step()
                parts = []
                for n, (name, term) in enumerate(terms.items()):
                    terms[name] = term.item()
                    if name == "total":
                        continue
                    parts.append(f"{name}={terms[name]:.3f}")
                running += terms["total"]
                log(" ".join(parts), running)
        """,
        "TL010",
    )


def test_entries_rewritten_only_under_a_guard_stay_attached(lint):
    findings = check(
        lint,
        """
        def fit(model, criterion, optimizer, loader, log):
            running = 0.0
            for images, targets in loader:
                terms = criterion(model(images), targets)
                optimizer.zero_grad()
                terms["total"].backward()
                optimizer.step()
                for name, term in terms.items():
                    if name == "total":
                        continue
                    terms[name] = term.item()
                running += terms["total"]  # expect: TL010
                log(running)
        """,
        "TL010",
    )
    assert findings[0].line == 13
    assert 'terms["total"]' in findings[0].message
