"""ninfer-tiny: transformers' Qwen3_5ForCausalLM plus the Qwen3.5 MTP (multi-token prediction) head, in torch.

transformers has no MTP module (it drops `mtp.*` on load), so it is defined here with the real checkpoints' tensor
names (shared/docs/qwen35.md §4.1). Forward order, checked against vLLM
(github.com/vllm-project/vllm, vllm/model_executor/models/qwen3_5_mtp.py at commit 01d99805d1ef,
`Qwen3_5MultiTokenPredictor.forward`):

    e  = pre_fc_norm_embedding(embed_tokens(x_{p+1}))        # shared embedding
    hn = pre_fc_norm_hidden(h_p)                             # h_p = main model's POST-final-norm hidden at p
    u  = fc(cat([e, hn], -1))                                # embedding FIRST, then hidden; [H, 2H] weight
    r  = layers[0](u, position p)                            # one full-attention Qwen3.5 decoder layer
    h' = norm(r);  logits = lm_head(h')                      # shared lm_head; predicts x_{p+2}

All norms are Qwen3.5's zero-centred (1 + w) RMSNorm (vLLM: GemmaRMSNorm). The decoder layer is transformers' own
`Qwen3_5DecoderLayer` built as "full_attention" (gated q_proj [query | gate] per head, q/k norm, partial RoPE, SwiGLU),
with the main model's rotary embedding, so its tensors are named `mtp.layers.0.self_attn.q_proj.weight`, ...
"""
import copy

import torch
import torch.nn.functional as F
from torch import nn
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
from transformers.masking_utils import create_causal_mask
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer, Qwen3_5RMSNorm


def mtp_layer_config(config: Qwen3_5TextConfig) -> Qwen3_5TextConfig:
    c = copy.deepcopy(config)
    c.layer_types = ["full_attention"]
    c.num_hidden_layers = 1
    return c


class Qwen3_5MTP(nn.Module):
    """The `mtp.*` module of a Qwen3.5 checkpoint (mtp_num_hidden_layers = 1)."""

    def __init__(self, config: Qwen3_5TextConfig):
        super().__init__()
        h = config.hidden_size
        self.layer_config = mtp_layer_config(config)
        self.pre_fc_norm_embedding = Qwen3_5RMSNorm(h, eps=config.rms_norm_eps)
        self.pre_fc_norm_hidden = Qwen3_5RMSNorm(h, eps=config.rms_norm_eps)
        self.fc = nn.Linear(2 * h, h, bias=False)
        self.layers = nn.ModuleList([Qwen3_5DecoderLayer(self.layer_config, 0)])
        self.norm = Qwen3_5RMSNorm(h, eps=config.rms_norm_eps)

    def init_weights(self, std: float, generator: torch.Generator | None = None):
        for m in self.modules():
            if isinstance(m, nn.Linear):
                with torch.no_grad():
                    m.weight.normal_(0.0, std, generator=generator)
            elif isinstance(m, Qwen3_5RMSNorm):
                with torch.no_grad():
                    m.weight.zero_()

    def forward(self, embeds_next: torch.Tensor, hidden: torch.Tensor, rotary_emb: nn.Module,
                position_offset: int = 0) -> torch.Tensor:
        """embeds_next [B, T, H] = embed(x_{p+1}); hidden [B, T, H] = post-norm main hidden at p. Returns h' [B,T,H]."""
        b, t, _ = hidden.shape
        u = self.fc(torch.cat([self.pre_fc_norm_embedding(embeds_next), self.pre_fc_norm_hidden(hidden)], dim=-1))
        pos = torch.arange(position_offset, position_offset + t, device=u.device)
        text_pos = pos.view(1, -1).expand(b, -1)
        position_embeddings = rotary_emb(u, pos.view(1, 1, -1).expand(3, b, -1))
        mask = create_causal_mask(config=self.layer_config, inputs_embeds=u, attention_mask=None, cache=None,
                                  position_ids=text_pos)
        r = self.layers[0](u, position_embeddings=position_embeddings, attention_mask=mask, position_ids=text_pos)
        return self.norm(r)


class TinyQwen35WithMTP(nn.Module):
    """Main model (transformers' Qwen3_5ForCausalLM) + MTP head, and the joint next / next-next token loss."""

    def __init__(self, config: Qwen3_5TextConfig):
        super().__init__()
        self.config = config
        self.lm = Qwen3_5ForCausalLM(config)
        self.mtp = Qwen3_5MTP(config)

    def init_weights(self, seed: int):
        g = torch.Generator().manual_seed(seed)
        std = self.config.initializer_range
        with torch.no_grad():
            for name, p in self.lm.named_parameters():
                if name.endswith("A_log"):
                    # transformers' init: A = U(0.01, 16) is for big models; a tiny model wants slower decay.
                    p.copy_(torch.empty(p.shape).uniform_(1.0, 16.0, generator=g).log_())
                elif name.endswith("dt_bias"):
                    p.fill_(1.0)
                elif name.endswith("conv1d.weight"):
                    p.normal_(0.0, 1.0 / p.shape[-1] ** 0.5, generator=g)
                elif name.endswith("linear_attn.norm.weight"):
                    p.fill_(1.0)  # gated norm, plain w
                elif p.dim() == 1:
                    p.zero_()  # zero-centred (1 + w) norms
                else:
                    p.normal_(0.0, std, generator=g)
                    if name.endswith(("o_proj.weight", "out_proj.weight", "down_proj.weight")):
                        p.mul_(1.0 / (2 * self.config.num_hidden_layers) ** 0.5)
        self.mtp.init_weights(std, g)
        self.lm.tie_weights()

    def mtp_logits(self, hidden: torch.Tensor, next_ids: torch.Tensor) -> torch.Tensor:
        """hidden [B,T,H] post-norm main hidden at p, next_ids [B,T] = x_{p+1} -> logits for x_{p+2} [B,T,V]."""
        e = self.lm.model.embed_tokens(next_ids)
        h = self.mtp(e, hidden, self.lm.model.rotary_emb)
        return self.lm.lm_head(h)

    def forward(self, ids: torch.Tensor, mtp_weight: float = 0.3):
        """ids [B, W]. Returns (total_loss, main_loss, mtp_loss, main_logits, mtp_logits)."""
        out = self.lm.model(input_ids=ids, use_cache=False)
        hidden = out.last_hidden_state  # post final norm, what lm_head sees
        logits = self.lm.lm_head(hidden)
        v = logits.shape[-1]
        main_loss = F.cross_entropy(logits[:, :-1].reshape(-1, v).float(), ids[:, 1:].reshape(-1))
        mlogits = self.mtp_logits(hidden[:, :-2], ids[:, 1:-1])
        mtp_loss = F.cross_entropy(mlogits.reshape(-1, v).float(), ids[:, 2:].reshape(-1))
        return main_loss + mtp_weight * mtp_loss, main_loss, mtp_loss, logits, mlogits


def make_config(vocab_size: int, eos_ids: list[int], pad_id: int, **over) -> Qwen3_5TextConfig:
    kw = dict(
        vocab_size=vocab_size,
        hidden_size=256,
        intermediate_size=768,
        num_hidden_layers=6,
        layer_types=["linear_attention", "linear_attention", "full_attention",
                     "linear_attention", "linear_attention", "full_attention"],
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=64,
        linear_value_head_dim=64,
        linear_conv_kernel_dim=4,
        hidden_act="silu",
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        initializer_range=0.02,
        tie_word_embeddings=True,
        attention_bias=False,
        attention_dropout=0.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                         "mrope_section": [4, 2, 2], "mrope_interleaved": True},
        bos_token_id=None,
        eos_token_id=eos_ids[0],
        pad_token_id=pad_id,
        dtype="float32",
    )
    kw.update(over)
    return Qwen3_5TextConfig(**kw)
