"""TL008 view-after-permute: `.view()` merging dimensions of a permuted tensor."""

from expect_markers import check

CODE = "TL008"


# ----- positives ------------------------------------------------------------------------------


def test_topk_accuracy_through_variables_slicing_and_eq(lint):
    findings = check(
        lint,
        """
        import torch

        def accuracy(output, target, topk=(1, 5)):
            with torch.no_grad():
                maxk = max(topk)
                batch_size = target.size(0)
                _, pred = output.topk(maxk, 1, True, True)
                pred = pred.t()
                correct = pred.eq(target.view(1, -1).expand_as(pred))
                res = []
                for k in topk:
                    correct_k = correct[:k].view(-1).float().sum(0, keepdim=True)  # expect: TL008
                    res.append(correct_k.mul_(100.0 / batch_size))
                return res
        """,
        CODE,
    )
    finding = findings[0]
    assert finding.message.startswith("`correct[:k].view(-1)` merges dimensions 0 and 1 of `pred.t()`")
    assert "this raises" in finding.message and "whenever both have more than one element" in finding.message
    assert finding.severity == "error" and finding.name == "view-after-permute"
    assert "`pred.t()` (line 9)" in finding.message
    assert "`.reshape(...)`" in finding.message and "`.contiguous()`" in finding.message


def test_torch_transpose_function_then_flatten(lint):
    check(
        lint,
        """
        import torch
        def flat(layer, x):
            y = torch.transpose(layer(x), 0, 1)
            return y.view(-1)  # expect: TL008
        """,
        CODE,
    )


def test_transpose_of_known_rank_merged_into_fewer_dims(lint):
    check(
        lint,
        """
        class Attention:
            def forward(self, x):
                B, T, C = x.size()
                q = self.q(x).view(B, T, self.n_head, C // self.n_head)
                y = q.transpose(1, 2)
                return y.view(B, T, C)  # expect: TL008
        """,
        CODE,
    )


def test_matrix_transpose_attribute_and_scaling(lint):
    check(
        lint,
        """
        def flat_weights(layer):
            wt = layer.weight.detach().T * 0.5
            return wt.view(-1)  # expect: TL008
        """,
        CODE,
    )


def test_clone_keeps_the_permuted_strides(lint):
    # torch.clone defaults to memory_format=torch.preserve_format: a permuted tensor's
    # clone has the same strides, so the view still fails.
    check(
        lint,
        """
        def f(x, w):
            y = (x @ w).permute(1, 0).clone()
            return y.view(-1)  # expect: TL008
        """,
        CODE,
    )


def test_timm_style_split_of_token_dimension(lint):
    assert (
        lint(
            """
        def forward(self, x, size):
            B, N, C = x.shape
            H, W = size
            feat = x.transpose(1, 2).view(B, C, H, W)
            feat = self.proj(feat)
            return feat.flatten(2).transpose(1, 2)
        """,
            CODE,
        )
        == []
    )


def test_detectron2_style_split_with_minus_one_batch(lint):
    assert (
        lint(
            """
        def forward(self, x, Wh, Ww):
            x = self.norm(x)
            return x.transpose(1, 2).view(-1, self.embed_dim, Wh, Ww)
        """,
            CODE,
        )
        == []
    )


def test_contiguous_reshape_and_flatten_between(lint):
    assert (
        lint(
            """
        def merge_heads(y, B, T, C):
            a = y.transpose(1, 2).contiguous().view(B, T, C)
            b = y.permute(0, 2, 1, 3).reshape(B, T, C)
            c = y.transpose(1, 2)
            c = c.contiguous()
            d = c.view(B, T, C)
            e = y.permute(0, 2, 1, 3).clone(memory_format=torch.contiguous_format).view(B, T, -1)
            return a, b, d, e
        """,
            CODE,
        )
        == []
    )


def test_layout_changing_ops_in_between(lint):
    assert (
        lint(
            """
        def f(x, w):
            y = x.transpose(0, 1)
            z = y @ w
            s = y.sum(0)
            return z.view(-1), s.view(-1), (y * w.t()).view(-1)
        """,
            CODE,
        )
        == []
    )


def test_permute_to_more_dimensions_is_a_split(lint):
    assert (
        lint(
            """
        def windows(x, B, nH, nW, r, C):
            x = x.permute(0, 2, 3, 1).view(B, nH, nW, r, r, C)
            table = self.table.permute(1, 0).view(1, self.heads, 7, 7)
            return x, table
        """,
            CODE,
        )
        == []
    )


def test_reassigned_before_view_and_dtype_views(lint):
    assert (
        lint(
            """
        import torch
        def f(x, shape):
            y = x.t()
            y = self.linear(y)
            a = y.view(-1)
            b = x.t().view(torch.float16)
            c = x.t().view(shape)
            return a, b, c
        """,
            CODE,
        )
        == []
    )


def test_other_branch_binding_does_not_reach(lint):
    assert (
        lint(
            """
        def f(x, flag):
            if flag:
                y = x.t()
                out = y.reshape(-1)
            else:
                y = x
                out = y.view(-1)
            return out
        """,
            CODE,
        )
        == []
    )


def test_numpy_transpose_is_not_a_tensor_permute(lint):
    assert (
        lint(
            """
        import numpy as np
        def f(a):
            return np.transpose(a).view(-1)
        """,
            CODE,
        )
        == []
    )


# ----- further cases (both kinds), from the audit and real-world shapes ---------------------


def test_layer_named_t_is_not_a_transpose(lint):
    # timm's non-local block: `self.t` is a 1x1 conv, and `t.view(B, C, -1)` is fine.
    assert (
        lint(
            """
        def forward(self, x):
            t = self.t(x)
            B, C, H, W = t.size()
            t = t.view(B, C, -1).permute(0, 2, 1)
            return t
        """,
            CODE,
        )
        == []
    )


def test_attention_output_merged_without_contiguous(lint):
    # The classic slip in hand-written attention: `.contiguous()` forgotten before merging heads.
    findings = check(
        lint,
        """
        import math
        import torch.nn.functional as F
        class SelfAttention:
            def forward(self, x):
                B, T, C = x.size()
                q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = F.softmax(att, dim=-1)
                y = att @ v
                y = y.transpose(1, 2).view(B, T, C)  # expect: TL008
                z = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).view(B, T, C)  # expect: TL008
                return self.c_proj(y), z
        """,
        CODE,
    )
    assert "`y.transpose(1, 2)`" in findings[0].message


def test_vit_attention_heads_from_indexed_qkv(lint):
    check(
        lint,
        """
        import torch.nn.functional as F
        def forward(self, x):
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = (q @ k.transpose(-2, -1)) * self.scale
            attn = F.dropout(attn.softmax(dim=-1), p=0.1, training=self.training)
            out = (attn @ v).transpose(1, 2).view(b, n, -1)  # expect: TL008
            ok = (attn @ v).transpose(1, 2).reshape(b, n, -1)
            return out, ok
        """,
        CODE,
    )


# ----- which dimensions a view merges, from the permutation and the view's sizes -----------------
# Every verdict below was checked with torch 2.13 on CPU tensors of the sizes the comments give.


def test_merging_dimensions_that_stay_adjacent_is_legal(lint):
    # (B, C, H, W) -> (B, H, W, C): H and W stay next to each other in memory, so merging them
    # (or flattening the grid of a position embedding) never raises.
    assert (
        lint(
            """
        def tokens(feat, grid, dim):
            n, c, h, w = feat.shape
            seq = feat.permute(0, 2, 3, 1).view(n, h * w, c)
            pos = grid.permute(0, 2, 3, 1).view(1, -1, dim)
            same = feat.permute(0, 2, 3, 1).view(feat.size(0), -1, feat.size(1))
            return seq, pos, same
        """,
            CODE,
        )
        == []
    )


def test_merging_dimensions_the_permutation_separated_is_reported(lint):
    source = """
        def rows(backbone, images):
            feat = backbone(images)
            n, c, h, w = feat.shape
            seq = feat.permute(0, 2, 3, 1)
            return seq.view(n, h, w * c)  # expect: TL008
        """
    findings = check(lint, source, CODE)
    assert "merges dimensions 2 and 3 of `feat.permute(0, 2, 3, 1)` (line 5)" in findings[0].message


def test_sizes_unpacked_from_the_permuted_tensor_name_the_merge(lint):
    # SlowFast-style clip transform: (T, H, W, C) -> (C, T, H, W); merging T and H is legal,
    # merging C and T is not.
    source = """
        import torch

        def color_jitter(images, jitter):
            frames = torch.stack(images).permute(3, 0, 1, 2)
            c, t, h, w = frames.shape
            flat = frames.view(c, t * h, w)
            bad = frames.view(c * t, h, w)  # expect: TL008
            return jitter(flat), bad
        """
    check(lint, source, CODE)


def test_dimensions_a_condition_declares_size_one_do_not_break_a_merge(lint):
    # (N, C, T, H, W) -> (N, T, H, W, C): flattening raises unless T, H and W are 1, which the
    # condition around the first view states.
    source = """
        import torch
        def project(self, x):
            x = self.head(x).permute((0, 2, 3, 4, 1))
            if x.shape[1:4] == torch.Size([1, 1, 1]) and self.contrastive:
                x = x.view(x.shape[0], -1)
            if x.size(2) == 1:
                return x.view(x.shape[0], -1)  # expect: TL008
            return self.projection(x)
        """
    check(lint, source, CODE)


def test_view_under_an_xla_branch_is_silent(lint):
    # XLA tensors report contiguous strides whatever the layout: the view cannot raise there.
    source = """
        def gather_tokens(encoder, x, device):
            y = encoder(x).transpose(0, 1)
            if device.type == "xla":
                return y.view(-1)
            if device.type != "xla":
                return y.view(-1)  # expect: TL008
        """
    check(lint, source, CODE)


def test_view_after_split_and_merge_of_heads_is_reported(lint):
    # (B, T, nh, hd) -> (B, nh, T, hd), then `.view(B, T, C)`: T and C do not line up with the
    # permuted dimensions (a merge and a split at once), and any view into three sizes has to
    # cross one of the two boundaries the transpose put out of order.
    source = """
        def merge(self, x):
            B, T, C = x.size()
            q = self.q(x).view(B, T, self.n_head, C // self.n_head)
            y = q.transpose(1, 2)
            return y.view(B, T, C)  # expect: TL008
        """
    check(lint, source, CODE)


def test_rank_unknown_and_some_rank_legal_is_silent(lint):
    # `x.transpose(0, 1)` of an argument: a (T, B, H) tensor viewed as `(B, -1)` raises, but a
    # (T, B) one does not; the rule cannot tell which, and keeps quiet.
    assert (
        lint(
            """
        def time_major_to_batch(x, batch_first):
            if not batch_first:
                x = x.transpose(0, 1)
            return x.view(x.size(0), -1)
        """,
            CODE,
        )
        == []
    )


def test_rank_unknown_but_every_rank_raises_is_reported(lint):
    # Whatever the rank of `x` (at least 3), merging dimension 0 with the swapped 1 and 2 raises.
    source = """
        def flatten_channels(conv, x, n):
            return conv(x).transpose(1, 2).view(n, -1)  # expect: TL008
        """
    check(lint, source, CODE)


def test_rank_of_pieces_unbound_from_a_permuted_tensor(lint):
    source = """
        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            out = ((q @ k.transpose(-2, -1)).softmax(-1) @ v).transpose(1, 2)
            return out.view(B, N, C)  # expect: TL008
        """
    check(lint, source, CODE)


# ----- permutations undone through elementwise ops ------------------------------------------------


def test_permute_undone_after_an_elementwise_op_with_a_broadcast_tensor_is_contiguous(lint):
    # kospeech's beam search: the sum keeps the layout of its strided first operand
    # (TensorIterator), so permuting back restores a contiguous tensor and the view is legal.
    assert not lint(
        """
        import torch
        def beam_step(step_outputs, cumulative_ps, batch_size, beam_size):
            current_ps, current_vs = step_outputs.topk(beam_size)
            current_ps = (current_ps.permute(0, 2, 1) + cumulative_ps.unsqueeze(1)).permute(0, 2, 1)
            current_ps = current_ps.view(batch_size, beam_size ** 2)
            scaled = (current_vs.transpose(1, 2) * 0.5 - 1.0).transpose(1, 2)
            return current_ps, scaled.view(batch_size, -1)
        """,
        CODE,
    )


def test_second_permute_that_does_not_undo_the_first_is_judged_composed(lint):
    check(
        lint,
        """
        import torch
        def mix(stem, images, bias):
            x = stem(images)
            b, c, h, w = x.shape
            y = (x.permute(0, 2, 3, 1) + bias).permute(0, 3, 1, 2)
            z = (x.permute(0, 2, 3, 1) * 2.0).transpose(1, 2)
            return y.view(b, c, h * w), z.view(b, w * h, c)  # expect: TL008
        """,
        CODE,
    )


def test_attention_head_merge_after_a_scaled_transpose_is_still_reported(lint):
    check(
        lint,
        """
        import torch
        def merge_heads(attn, v, B, N, C):
            out = (attn @ v).permute(0, 2, 1, 3) * 1.0
            return out.view(B, N, C)  # expect: TL008
        """,
        CODE,
    )


# ----- memory formats the code declares ------------------------------------------------------------


def test_nhwc_permute_of_a_tensor_tested_channels_last_is_contiguous(lint):
    check(
        lint,
        """
        import torch

        def flatten_params(params, grads):
            flat = []
            for p in params:
                if p.is_contiguous(memory_format=torch.channels_last):
                    p = p.permute(0, 2, 3, 1)
                flat.append(p.detach().view(-1))
            for g in grads:
                g_in = g.permute(0, 2, 3, 1) if g.is_contiguous(memory_format=torch.channels_last) else g
                flat.append(g_in.view(-1))
            return flat

        def pack(x):
            y = x.contiguous(memory_format=torch.channels_last_3d)
            return y.permute(0, 2, 3, 4, 1).view(-1)
        """,
        CODE,
    )


def test_layout_test_of_another_tensor_or_value_declares_nothing(lint):
    findings = check(
        lint,
        """
        import torch

        def flatten(weight, loss):
            (grad,) = torch.autograd.grad(loss, weight)
            if weight.is_contiguous(memory_format=torch.channels_last):
                g = grad.permute(0, 2, 3, 1)
                return g.view(-1)  # expect: TL008
            if not grad.is_contiguous(memory_format=torch.channels_last):
                return grad.permute(0, 2, 3, 1).view(-1)  # expect: TL008
            if grad.is_contiguous(memory_format=torch.channels_last):
                grad = grad * 2
                return grad.permute(0, 2, 3, 1).view(-1)  # expect: TL008
            return grad.view(-1)
        """,
        CODE,
    )
    assert findings[0].message.startswith(
        "`g.view(-1)` merges dimensions 0 and 1 of `grad.permute(0, 2, 3, 1)` (line 7)"
    )


def test_channels_last_input_permuted_out_of_memory_order_is_reported(lint):
    check(
        lint,
        """
        import torch

        def rows(x):
            if x.is_contiguous(memory_format=torch.channels_last):
                n, c, h, w = x.shape
                return x.transpose(2, 3).view(n, c, -1)  # expect: TL008
            return x
        """,
        CODE,
    )


# ----- sizes followed through data flow -------------------------------------------------------------


def test_trailing_size_kept_after_resampling_a_single_map(lint):
    check(
        lint,
        """
        import torch.nn.functional as F

        def resize_table(table, grid, new_h, new_w):
            width = table.shape[-1]
            maps = F.interpolate(
                table.reshape(1, grid, grid, width).permute(0, 3, 1, 2),
                size=(new_h, new_w),
                mode="bilinear",
            )
            return maps.permute(0, 2, 3, 1).view(-1, width)
        """,
        CODE,
    )


def test_trailing_size_kept_but_batch_merged_across_channels_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        def tokens(batch, c, h, w):
            feat = torch.randn(batch, c, h, w)
            return feat.permute(0, 2, 3, 1).view(-1, c)  # expect: TL008
        """,
        CODE,
    )
    assert "merges dimensions 0 and 1 of `feat.permute(0, 2, 3, 1)`" in findings[0].message


# ----- where the permuted tensor's layout comes from ---------------------------------------------------


def test_permute_of_a_block_input_whose_caller_permuted_it_is_silent(lint):
    # A residual block's input arrives sequence-first from the caller (`x.permute(1, 0, 2)`), so
    # permuting it back gives a contiguous batch-first tensor: the view cannot be judged here.
    check(
        lint,
        """
        import torch
        from torch import nn

        class ExpertBlock(nn.Module):
            def forward(self, x):
                x = x + self.attn(self.norm(x))
                tokens = x.permute(1, 0, 2).view(x.shape[1], -1)
                return self.route(tokens)

        def encode(blocks, h):
            h = h.permute(1, 0, 2)
            return merge(blocks, h)

        def merge(blocks, h):
            return h.transpose(0, 1).view(h.shape[1], -1)
        """,
        CODE,
    )


def test_permute_of_a_parameter_every_caller_passes_fresh_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        def flatten_scores(scores):
            return scores.t().view(-1)  # expect: TL008

        def evaluate(model, batch):
            return flatten_scores(model(batch))
        """,
        CODE,
    )
    assert findings[0].message.startswith("`.view(-1)` merges dimensions 0 and 1 of `scores.t()`")


def test_thresholded_transpose_of_a_caller_tensor_is_silent_but_of_a_fresh_one_reported(lint):
    # `(probs >= 0.5)` keeps the layout of `probs`: a parameter's layout (and its sizes: callers
    # may pass one column) is unknown; a classifier's output made here is contiguous.
    check(
        lint,
        """
        import torch

        def binary_hits(probs, target):
            pred = (probs >= 0.5).float().t().view(-1)
            return pred.eq(target.view(-1)).sum()

        def multilabel_hits(head, feats, target):
            pred = (torch.sigmoid(head(feats)) >= 0.5).float().t().view(-1)  # expect: TL008
            return pred.eq(target.t().reshape(-1)).sum()
        """,
        CODE,
    )
