"""TL008 view-after-permute: `.view()` merging dimensions of a permuted tensor."""

CODE = "TL008"


def lines(findings):
    return [f.line for f in findings]


# ----- positives ------------------------------------------------------------------------------


def test_topk_accuracy_through_variables_slicing_and_eq(lint):
    findings = lint(
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
                    correct_k = correct[:k].view(-1).float().sum(0, keepdim=True)
                    res.append(correct_k.mul_(100.0 / batch_size))
                return res
        """,
        CODE,
    )
    assert lines(findings) == [13]
    finding = findings[0]
    assert finding.message.startswith("`correct[:k].view(-1)` merges dimensions")
    assert finding.severity == "error" and finding.name == "view-after-permute"
    assert "`pred.t()` (line 9)" in finding.message
    assert "`.reshape(...)`" in finding.message and "`.contiguous()`" in finding.message


def test_chained_permute_then_flatten_with_minus_one(lint):
    findings = lint(
        """
        def head_to_tokens(x):
            return x.permute(0, 2, 3, 1).view(x.size(0), -1, x.size(1))
        """,
        CODE,
    )
    assert lines(findings) == [3]
    assert findings[0].headline == (
        "`.view(x.size(0), -1, x.size(1))` merges dimensions of the non-contiguous result of `x.permute(0, 2, 3, 1)`"
    )
    assert findings[0].details[0].startswith("why: this raises")


def test_channels_last_merge_with_product(lint):
    findings = lint(
        """
        def to_seq(feat):
            n, c, h, w = feat.shape
            seq = feat.permute(0, 2, 3, 1)
            return seq.view(n, h * w, c)
        """,
        CODE,
    )
    assert lines(findings) == [5]
    assert "(line 4)" in findings[0].message


def test_torch_transpose_function_then_flatten(lint):
    findings = lint(
        """
        import torch
        def flat(x):
            y = torch.transpose(x, 0, 1)
            return y.view(-1)
        """,
        CODE,
    )
    assert lines(findings) == [5]


def test_transpose_of_known_rank_merged_into_fewer_dims(lint):
    findings = lint(
        """
        class Attention:
            def forward(self, x):
                B, T, C = x.size()
                q = self.q(x).view(B, T, self.n_head, C // self.n_head)
                y = q.transpose(1, 2)
                return y.view(B, T, C)
        """,
        CODE,
    )
    assert lines(findings) == [7]


def test_matrix_transpose_attribute_and_scaling(lint):
    findings = lint(
        """
        def flat_weights(w):
            wt = w.T * 0.5
            return wt.view(-1)
        """,
        CODE,
    )
    assert lines(findings) == [4]


def test_clone_keeps_the_permuted_strides(lint):
    # torch.clone defaults to memory_format=torch.preserve_format: a permuted tensor's
    # clone has the same strides, so the view still fails.
    findings = lint(
        """
        def f(x):
            y = x.permute(1, 0).clone()
            return y.view(-1)
        """,
        CODE,
    )
    assert lines(findings) == [4]


def test_one_branch_permutes(lint):
    findings = lint(
        """
        def f(x, batch_first):
            if not batch_first:
                x = x.transpose(0, 1)
            return x.view(x.size(0), -1)
        """,
        CODE,
    )
    assert lines(findings) == [5]


# ----- hard negatives -------------------------------------------------------------------------


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
    findings = lint(
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
                y = y.transpose(1, 2).view(B, T, C)
                z = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).view(B, T, C)
                return self.c_proj(y), z
        """,
        CODE,
    )
    assert lines(findings) == [14, 15]
    assert "`y.transpose(1, 2)`" in findings[0].message


def test_vit_attention_heads_from_indexed_qkv(lint):
    findings = lint(
        """
        import torch.nn.functional as F
        def forward(self, x):
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = (q @ k.transpose(-2, -1)) * self.scale
            attn = F.dropout(attn.softmax(dim=-1), p=0.1, training=self.training)
            out = (attn @ v).transpose(1, 2).view(b, n, -1)
            ok = (attn @ v).transpose(1, 2).reshape(b, n, -1)
            return out, ok
        """,
        CODE,
    )
    assert lines(findings) == [9]
