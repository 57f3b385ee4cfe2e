"""The ninfer DFlash2 block drafter in torch (written from the description in docs/dflash2.md, no code copied).

    c_t   = hidden_norm(fc(cat_i h_t^(layer i)))               # fused target features, one per committed token t
    x_0   = embed(anchor) ; x_j = mask_embedding (j = 1..B-1)  # block input at positions a .. a+B-1
    per layer l:  n = input_layernorm(x)
        q     = rope(q_norm(q_proj(n)))                         # queries: block rows only
        K     = [rope(k_norm(k_proj(c_{<a}))) ; rope(k_norm(k_proj(n)))]
        V     = [v_proj(c_{<a}) ; v_proj(n)]
        x     = x + o_proj(softmax(q K^T / sqrt(d)) V)          # no mask inside the block (bidirectional)
        x     = x + down(silu(gate(m)) * up(m)),  m = post_attention_layernorm(x)
    logits_j = lm_head(norm(x_j))   (target's lm_head)          # row j predicts the token AT position a+j

All norms here are plain RMSNorm (y = w * x / rms(x), Qwen3 style), RoPE is full-head neox rotate-half with the
drafter's own theta. h^(i) is the residual stream after target decoder layer i (before the final norm).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)) * self.weight


def rope(x, pos, theta):
    """x [..., T, heads, d] neox rotate-half over the whole head; pos [T] int64."""
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1).float()[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1).float()[:, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    rot = torch.cat([-x2, x1], -1)
    return x * cos + rot * sin


class DraftLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, nh, nkv, hd, ff = cfg["hidden_size"], cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"], cfg[
            "intermediate_size"]
        eps = cfg["rms_norm_eps"]
        self.cfg = cfg
        self.input_layernorm = RMSNorm(h, eps)
        self.post_attention_layernorm = RMSNorm(h, eps)
        self.q_proj = nn.Linear(h, nh * hd, bias=False)
        self.k_proj = nn.Linear(h, nkv * hd, bias=False)
        self.v_proj = nn.Linear(h, nkv * hd, bias=False)
        self.o_proj = nn.Linear(nh * hd, h, bias=False)
        self.q_norm = RMSNorm(hd, eps)
        self.k_norm = RMSNorm(hd, eps)
        self.gate_proj = nn.Linear(h, ff, bias=False)
        self.up_proj = nn.Linear(h, ff, bias=False)
        self.down_proj = nn.Linear(ff, h, bias=False)

    def kv(self, x, pos):
        """x [T, H] (already normed) -> k [T, nkv, hd] (normed, roped), v [T, nkv, hd]."""
        c = self.cfg
        k = self.k_norm(self.k_proj(x).view(x.shape[0], c["num_kv_heads"], c["head_dim"]))
        v = self.v_proj(x).view(x.shape[0], c["num_kv_heads"], c["head_dim"])
        return rope(k, pos, c["rope_theta"]), v

    def forward(self, x, pos, ctx_k, ctx_v, ctx_mask, block):
        """x [Q, H] block rows, Q = n·block (rows of one block contiguous, anchor first), pos [Q];
        ctx_k/v [C, nkv, hd]; ctx_mask [n, C] bool (True = block may attend to that context position).
        Each row attends to the allowed context and to all rows of its own block. Returns x [Q, H]."""
        c = self.cfg
        q_len, n = x.shape[0], x.shape[0] // block
        nh, nkv, hd = c["num_heads"], c["num_kv_heads"], c["head_dim"]
        h = self.input_layernorm(x)
        q = rope(self.q_norm(self.q_proj(h).view(q_len, nh, hd)), pos, c["rope_theta"])
        bk, bv = self.kv(h, pos)
        rep = nh // nkv
        q = q.view(n, block, nh, hd)
        kc, vc = ctx_k.repeat_interleave(rep, dim=1), ctx_v.repeat_interleave(rep, dim=1)
        kb = bk.repeat_interleave(rep, dim=1).view(n, block, nh, hd)
        vb = bv.repeat_interleave(rep, dim=1).view(n, block, nh, hd)
        scale = 1.0 / math.sqrt(hd)
        s_ctx = torch.einsum("nqhd,khd->nhqk", q, kc) * scale
        s_ctx = s_ctx.masked_fill(~ctx_mask[:, None, None, :], float("-inf"))
        s_blk = torch.einsum("nqhd,nkhd->nhqk", q, kb) * scale  # bidirectional inside the block
        p = torch.cat([s_ctx, s_blk], -1).softmax(-1)
        p_ctx, p_blk = p[..., :kc.shape[0]], p[..., kc.shape[0]:]
        att = torch.einsum("nhqk,khd->nqhd", p_ctx, vc) + torch.einsum("nhqk,nkhd->nqhd", p_blk, vb)
        x = x + self.o_proj(att.reshape(q_len, nh * hd))
        m = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))


class DFlash2Drafter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden_size"]
        self.cfg = cfg
        self.fc = nn.Linear(len(cfg["target_layer_ids"]) * h, h, bias=False)
        self.hidden_norm = RMSNorm(h, cfg["rms_norm_eps"])
        self.mask_embedding = nn.Parameter(torch.zeros(h))
        self.layers = nn.ModuleList([DraftLayer(cfg) for _ in range(cfg["num_layers"])])
        self.norm = RMSNorm(h, cfg["rms_norm_eps"])

    def context(self, feats):
        """feats [T, n_feat * H] (target layer outputs concatenated in target_layer_ids order) -> c [T, H]."""
        return self.hidden_norm(self.fc(feats))

    def forward(self, ctx, block_embeds, block_pos, block_anchor):
        """ctx [C, H] fused context (positions 0..C-1); block_embeds [n·B, H] (the B rows of a block contiguous);
        block_pos [n·B] absolute positions; block_anchor [n·B] the anchor position of each row's block. Context t is
        visible to a block iff t < its anchor; rows of the same block see each other. Returns the final hidden
        [n·B, H] (after the drafter's norm)."""
        b = self.cfg["block_size"]
        ctx_pos = torch.arange(ctx.shape[0])
        ctx_mask = ctx_pos[None, :] < block_anchor.view(-1, b)[:, :1]
        x = block_embeds
        for layer in self.layers:
            ck, cv = layer.kv(ctx, ctx_pos)
            x = layer(x, block_pos, ck, cv, ctx_mask, b)
        return self.norm(x)

    def block_embeds(self, embed_table, anchors_tok, n_blocks):
        """[anchor, mask x (B-1)] per block -> [n_blocks * B, H]."""
        b = self.cfg["block_size"]
        e = self.mask_embedding[None, None, :].expand(n_blocks, b, -1).clone()
        e[:, 0] = embed_table[anchors_tok]
        return e.reshape(n_blocks * b, -1)

    def state_dict_for_export(self):
        """Tensor names as stored in the artifact's dflash2 section (docs/dflash2.md)."""
        out = {}
        for name, p in self.named_parameters():
            n = name
            for part in ("gate_proj", "up_proj", "down_proj"):
                n = n.replace(f".{part}.", f".mlp.{part}.")
            for part in ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm"):
                n = n.replace(f".{part}.", f".self_attn.{part}.")
            out["dflash2." + n] = p.detach().float().contiguous()
        return out


def target_features(target, ids, layer_ids):
    """Runs the target (transformers Qwen3_5ForCausalLM) on ids [B, T]; returns (logits [B, T, V],
    feats [B, T, n*H]) where feats concatenates the outputs of decoder layers layer_ids (pre final norm)."""
    got = {}
    hooks = []
    for i in layer_ids:
        def hook(_m, _a, out, i=i):
            got[i] = out[0] if isinstance(out, tuple) else out
        hooks.append(target.model.layers[i].register_forward_hook(hook))
    try:
        logits = target(input_ids=ids, use_cache=False).logits
    finally:
        for h in hooks:
            h.remove()
    return logits, torch.cat([got[i] for i in layer_ids], -1)
