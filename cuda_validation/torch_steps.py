#!/usr/bin/env python3
"""Single-GPU training steps through PyTorch: the ground truth Ridgeline's
end-to-end predictions are scored against, and the tensor-core kernels
(GEMMs, fused attention) its calibration fits.

    torch_steps.py --out DIR [--budget-s S] [--device N] [--label-gpu NAME] [--only LABEL,...]
    torch_steps.py --out DIR --dry-run      # tiny sizes on the CPU: the plumbing, not a measurement
    torch_steps.py --list

Writes, under DIR, rewritten after every configuration (so a run stopped by
a time limit keeps what it measured):

  torch_steps.published.json   one row per training configuration, in the
                               published-measurements schema that
                               `ridgeline validate-published FILE` reads
                               (validation/published.yaml): model, plan,
                               framework torch-eager or torch-compile,
                               measured median step time, tokens/s, peak
                               memory allocated and reserved, and the
                               profiler's kernel time per Ridgeline kernel class;
  torch_kernels.json           a ridgeline.measurements/1 file of the GEMMs
                               (torch.matmul bf16, torch._scaled_mm fp8) and the
                               SDPA attention kernels (flash and cuDNN backends:
                               class attention_sdpa; math: attention_naive) timed
                               alone, for `ridgeline calibrate` / `validate`;
  torch_steps.log.txt          what ran, what was skipped and why.

Configurations (each a few decoder layers, so that every one fits the
budget): Llama-style (RMSNorm, SwiGLU, RoPE, GQA) and GPT-style (LayerNorm,
GELU, learned positions) stacks; eager vs torch.compile; SDPA backends flash,
cuDNN, math; bf16 autocast vs fp8 linear layers (torch._scaled_mm, one scale
per tensor, E4M3 forward and E5M2 gradients); activation checkpointing none,
full (each block) and selective (the attention core); AdamW (fused), Adafactor,
SGD; LoRA through peft; causal and non-causal attention. They run in priority
order and stop when the budget is spent.

Timing: CUDA events around each step after warm-up steps (torch.compile
compiles in its first), median over the timed steps; one more step under
torch.profiler for the per-class kernel times. Kernels alone: warm-up, then
samples until 0.1 s of GPU time (at least 10); runs under 50 us are timed in
batches of repetitions per event pair; L2 is flushed (2 x L2 bytes written)
before each sample of longer runs.

Runs under PyTorch 1.13 (Debian's python3-torch) for --dry-run on a CPU:
every newer API (SDPA, torch.compile, float8, fused AdamW, Adafactor,
sdpa_kernel, peft) is looked up first and a configuration that needs a
missing one is skipped with the reason. A configuration or kernel that fails
(out of memory, a backend that refuses a shape) is logged and the run goes
on. Exit status: 0 done (some configurations may be skipped), 1 some
configuration failed, 2 bad arguments or no CUDA device without --dry-run,
3 an output could not be written.
"""

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import re
import signal
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the device image has it; a bare machine may not
    print("torch_steps.py: cannot import torch: %s" % e, file=sys.stderr)
    sys.exit(2)

SCHEMA = "ridgeline.measurements/1"
TOOL = "torch_steps.py 0.1"

# --- What this PyTorch has ----------------------------------------------------------


def has_sdpa():
    return hasattr(F, "scaled_dot_product_attention")


def has_compile():
    return hasattr(torch, "compile")


def fp8_dtypes():
    e4m3 = getattr(torch, "float8_e4m3fn", None)
    e5m2 = getattr(torch, "float8_e5m2", None)
    return (e4m3, e5m2) if e4m3 is not None and e5m2 is not None and hasattr(torch, "_scaled_mm") else None


class Skip(Exception):
    """A configuration that cannot run here; the reason is logged and the run goes on."""


def sdpa_backend(name):
    """A context manager that allows only SDPA backend `name` (flash, cudnn, efficient, math)."""
    if not has_sdpa():
        raise Skip("no torch.nn.functional.scaled_dot_product_attention in PyTorch %s" % torch.__version__)
    try:  # PyTorch >= 2.3
        from torch.nn.attention import SDPBackend, sdpa_kernel

        table = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                 "math": "MATH"}
        member = getattr(SDPBackend, table[name], None)
        if member is None:
            raise Skip("SDPA backend %s is not in PyTorch %s" % (name, torch.__version__))
        return sdpa_kernel([member])
    except ImportError:
        pass
    if name == "cudnn":
        raise Skip("the cuDNN SDPA backend needs PyTorch >= 2.3")
    flags = {"flash": (True, False, False), "efficient": (False, False, True), "math": (False, True, False)}[name]
    return torch.backends.cuda.sdp_kernel(enable_flash=flags[0], enable_math=flags[1], enable_mem_efficient=flags[2])


# --- Models -------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, h, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope_tables(seq, d, device, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
    t = torch.arange(seq, device=device, dtype=torch.float32)
    f = torch.outer(t, inv)
    emb = torch.cat([f, f], dim=-1)
    return emb.cos()[None, None], emb.sin()[None, None]


def apply_rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    rot = torch.cat([-x2, x1], dim=-1)
    return (x * cos.to(x.dtype)) + (rot * sin.to(x.dtype))


class Fp8Linear(torch.autograd.Function):
    """y = x W^T through torch._scaled_mm with one scale per tensor (current
    scaling): E4M3 activations and weights forward, E5M2 output gradients
    backward (Micikevicius et al. 2022, "FP8 Formats for Deep Learning")."""

    @staticmethod
    def _cast(t, dtype):
        fmax = torch.finfo(dtype).max
        amax = t.detach().abs().max().float().clamp(min=1e-12)
        scale = fmax / amax
        return (t.float() * scale).clamp(-fmax, fmax).to(dtype), (1.0 / scale).reshape(())

    @staticmethod
    def _mm(a, sa, b, sb):
        out = torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=False)
        return out[0] if isinstance(out, tuple) else out  # PyTorch 2.1-2.3 also return the amax

    @staticmethod
    def forward(ctx, x, weight):
        e4m3, _ = fp8_dtypes()
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        x8, sx = Fp8Linear._cast(x2, e4m3)
        w8, sw = Fp8Linear._cast(weight, e4m3)
        ctx.save_for_backward(x8, sx, w8, sw)
        y = Fp8Linear._mm(x8, sx, w8.t(), sw)  # b must be column-major: W^T of a row-major W
        return y.reshape(*shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, grad):
        _, e5m2 = fp8_dtypes()
        x8, sx, w8, sw = ctx.saved_tensors
        g2 = grad.reshape(-1, grad.shape[-1])
        g8, sg = Fp8Linear._cast(g2, e5m2)
        gx = Fp8Linear._mm(g8, sg, w8.t().contiguous().t(), sw)
        gw = Fp8Linear._mm(g8.t().contiguous(), sg, x8.t().contiguous().t(), sx)
        return gx.reshape(*grad.shape[:-1], w8.shape[1]), gw.to(torch.float32)


class Linear(nn.Linear):
    """nn.Linear, or the fp8 path when the model is built with fp8=True."""

    fp8 = False

    def forward(self, x):
        if self.fp8:
            y = Fp8Linear.apply(x.to(torch.bfloat16), self.weight)
            return y + self.bias.to(y.dtype) if self.bias is not None else y
        return super().forward(x)


def attention_core(q, k, v, causal, impl):
    """softmax(q k^T / sqrt(d)) v, by SDPA (backend chosen by the caller's context) or by hand."""
    if impl == "manual":
        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        if causal:
            n = q.shape[-2]
            mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        return torch.matmul(torch.softmax(s.float(), dim=-1).to(q.dtype), v)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, a, g = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
        d = h // a
        self.cfg, self.a, self.g, self.d = cfg, a, g, d
        llama = cfg["arch"] == "llama"
        bias = not llama
        self.norm1 = RMSNorm(h) if llama else nn.LayerNorm(h)
        self.norm2 = RMSNorm(h) if llama else nn.LayerNorm(h)
        self.qkv = Linear(h, (a + 2 * g) * d, bias=bias)
        self.proj = Linear(a * d, h, bias=bias)
        f = cfg["ffn"]
        if llama:
            self.up = Linear(h, 2 * f, bias=False)  # gate and up, one GEMM
        else:
            self.up = Linear(h, f, bias=True)
        self.down = Linear(f, h, bias=bias)

    def attn(self, x, rope):
        b, s, _ = x.shape
        qkv = self.qkv(x)
        q, k, v = qkv.split([self.a * self.d, self.g * self.d, self.g * self.d], dim=-1)
        q = q.view(b, s, self.a, self.d).transpose(1, 2)
        k = k.view(b, s, self.g, self.d).transpose(1, 2)
        v = v.view(b, s, self.g, self.d).transpose(1, 2)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        if self.g != self.a:  # GQA: each K/V head serves a/g query heads (as Hugging Face's repeat_kv)
            k = k.repeat_interleave(self.a // self.g, dim=1)
            v = v.repeat_interleave(self.a // self.g, dim=1)
        core = lambda q_, k_, v_: attention_core(q_, k_, v_, self.cfg["causal"], self.cfg["attn_impl"])
        if self.cfg["recompute"] == "selective":
            o = checkpoint(core, q, k, v)
        else:
            o = core(q, k, v)
        return self.proj(o.transpose(1, 2).reshape(b, s, self.a * self.d))

    def mlp(self, x):
        if self.cfg["arch"] == "llama":
            gate, up = self.up(x).chunk(2, dim=-1)
            return self.down(F.silu(gate) * up)
        return self.down(F.gelu(self.up(x), approximate="tanh"))

    def forward(self, x, rope):
        x = x + self.attn(self.norm1(x), rope)
        return x + self.mlp(self.norm2(x))


def checkpoint(fn, *args):
    import torch.utils.checkpoint as cp

    try:
        return cp.checkpoint(fn, *args, use_reentrant=False)
    except TypeError:  # very old PyTorch: no use_reentrant
        return cp.checkpoint(fn, *args)


class Decoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        h = cfg["hidden"]
        self.embed = nn.Embedding(cfg["vocab"], h)
        self.pos = nn.Embedding(cfg["seq"], h) if cfg["arch"] == "gpt" else None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg["layers"]))
        self.norm = RMSNorm(h) if cfg["arch"] == "llama" else nn.LayerNorm(h)
        self.head = Linear(h, cfg["vocab"], bias=False)
        self.rope = None

    def forward(self, tokens, targets):
        b, s = tokens.shape
        x = self.embed(tokens)
        if self.pos is not None:
            x = x + self.pos(torch.arange(s, device=tokens.device))[None]
        rope = None
        if self.cfg["arch"] == "llama":
            if self.rope is None or self.rope[0].shape[-2] != s:
                self.rope = rope_tables(s, self.cfg["hidden"] // self.cfg["heads"], tokens.device)
            rope = self.rope
        for blk in self.blocks:
            if self.cfg["recompute"] == "full" and self.training:
                x = checkpoint(blk, x, rope)
            else:
                x = blk(x, rope)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


# --- Configurations -------------------------------------------------------------------

LLAMA = dict(arch="llama", hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000, layers=2)
GPT = dict(arch="gpt", hidden=2048, heads=16, kv_heads=16, ffn=8192, vocab=50304, layers=4)
BASE = dict(seq=4096, micro_batch=2, compile=False, attn="flash", precision="bf16", recompute="none",
            optimizer="adamw_fused", lora=0, causal=True)


def config(model, **kw):
    c = dict(BASE)
    c.update(model)
    c.update(kw)
    return c


def label_of(c):
    """llama_h4096_l2_s4096_b2_eager_flash[_fp8][_full_ckpt]...: the sizes as run."""
    parts = ["%s_h%d_l%d_s%d_b%d" % (c["arch"], c["hidden"], c["layers"], c["seq"], c["micro_batch"]),
             "compile" if c["compile"] else "eager", c["attn"]]
    if c["precision"] == "fp8":
        parts.append("fp8")
    if c["recompute"] != "none":
        parts.append(c["recompute"] + "_ckpt")
    if c["optimizer"] != "adamw_fused":
        parts.append(c["optimizer"])
    if c["lora"]:
        parts.append("lora%d" % c["lora"])
    if not c["causal"]:
        parts.append("noncausal")
    return "_".join(parts)


def configs(dry_run):
    """In priority order: the run stops starting new ones when its budget is spent.
    Eager variations first (about 10 s each on an H200), each technique once;
    torch.compile, which spends about a minute compiling, after them."""
    out = [
        config(LLAMA),
        config(GPT, seq=2048, micro_batch=8),
        config(LLAMA, precision="fp8"),
        config(LLAMA, recompute="full"),
        config(LLAMA, recompute="selective"),
        config(LLAMA, attn="cudnn"),
        config(LLAMA, attn="math"),
        config(LLAMA, optimizer="adafactor"),
        config(LLAMA, optimizer="sgd"),
        config(LLAMA, lora=16),
        config(LLAMA, causal=False),
        config(LLAMA, compile=True),
        config(LLAMA, layers=1, seq=16384, micro_batch=1),
        config(GPT, hidden=8192, heads=64, kv_heads=64, ffn=32768, layers=1, seq=2048, micro_batch=1),
        config(LLAMA, seq=1024, micro_batch=8),
        config(GPT, seq=2048, micro_batch=8, compile=True),
    ]
    if dry_run:
        # The same plumbing at toy sizes, each configuration still distinct: widths
        # and sequences / 64, heads / 8 (head dim 16), at most 2 layers; every GEMM
        # dimension stays a multiple of 16 (torch._scaled_mm needs it).
        for c in out:
            c.update(hidden=c["hidden"] // 64, heads=c["heads"] // 8, kv_heads=max(1, c["kv_heads"] // 8),
                     ffn=c["ffn"] // 64, vocab=256, layers=min(2, c["layers"]), seq=max(16, c["seq"] // 64))
    for c in out:
        c["label"] = label_of(c)
    return out


# --- Timing ---------------------------------------------------------------------------


class Clock:
    """CUDA events on a GPU, perf_counter on the CPU (dry run)."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def time(self, fn, reps=1):
        if self.cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(reps):
                fn()
            b.record()
            b.synchronize()
            return a.elapsed_time(b) * 1e-3
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return time.perf_counter() - t0


def quantile(v, q):
    s = sorted(v)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(len(s) - 1, lo + 1)
    return s[lo] + (pos - lo) * (s[hi] - s[lo])


class Flusher:
    """Writes 2 x L2 bytes so the next sample reads its inputs from HBM."""

    def __init__(self, device):
        self.buf = None
        if device.type == "cuda":
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 << 20) or (50 << 20)
            self.buf = torch.empty(2 * l2 // 4, dtype=torch.float32, device=device)

    def __call__(self):
        if self.buf is not None:
            self.buf.fill_(1.0)
            torch.cuda.synchronize()


def time_kernel(fn, clock, flusher, dry_run):
    """Per-run min, median, p90 (s), samples and repetitions per sample."""
    for _ in range(2 if dry_run else 3):
        fn()
    clock.sync()
    first = clock.time(fn)
    reps = 1 if first >= 50e-6 else max(1, min(64, int(math.ceil(100e-6 / max(first, 1e-7)))))
    samples, total = [], 0.0
    min_samples, min_total = (3, 0.0) if dry_run else (10, 0.1)
    t_start = time.perf_counter()
    while len(samples) < min_samples or total < min_total:
        if reps == 1:
            flusher()
        t = clock.time(fn, reps)
        total += t
        samples.append(t / reps)
        if len(samples) >= 500 or (len(samples) >= 3 and time.perf_counter() - t_start > 2.0):
            break
    return min(samples), quantile(samples, 0.5), quantile(samples, 0.9), len(samples), reps


# --- Device state (NVML through pynvml, when installed) -------------------------------


class Nvml:
    # nvml.h nvmlClocksEventReason* bits that hold the clock down: SwPowerCap,
    # HwSlowdown, SwThermalSlowdown, HwThermalSlowdown, HwPowerBrakeSlowdown.
    SLOWDOWN = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
    NAMES = [(0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
             (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
             (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting")]

    def __init__(self, device):
        self.h = None
        if device.type != "cuda":
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nv = pynvml
            p = torch.cuda.get_device_properties(device)
            if all(hasattr(p, f) for f in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
                # The CUDA device's own PCI address: NVML's indices ignore CUDA_VISIBLE_DEVICES.
                bus = "%08x:%02x:%02x.0" % (p.pci_domain_id, p.pci_bus_id, p.pci_device_id)
                self.h = pynvml.nvmlDeviceGetHandleByPciBusId(bus)
            else:
                self.h = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        except Exception:
            self.h = None

    def read(self):
        """Fields for a measurement record: clocks, power, throttle reasons."""
        if self.h is None:
            return {}
        nv = self.nv
        out = {}
        try:
            out["sm_clock_hz"] = 1e6 * nv.nvmlDeviceGetClockInfo(self.h, nv.NVML_CLOCK_SM)
            out["memory_clock_hz"] = 1e6 * nv.nvmlDeviceGetClockInfo(self.h, nv.NVML_CLOCK_MEM)
            out["power_w"] = 1e-3 * nv.nvmlDeviceGetPowerUsage(self.h)
            fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                nv.nvmlDeviceGetCurrentClocksThrottleReasons
            bits = fn(self.h) & ~0x1
            names = [n for b, n in self.NAMES if bits & b]
            if names:
                out["throttle_reasons"] = "+".join(names)
            if bits & self.SLOWDOWN:
                out["throttled"] = True
        except Exception:
            pass
        return out


# --- Profiler: kernel time per Ridgeline kernel class ---------------------------------

# Ridgeline's kernel classes (spec::KernelClass), matched against CUDA kernel
# names (GPU) or aten operator names (CPU dry run), first match wins.
KERNEL_CLASSES = [
    ("attention", r"flash|fmha|sdpa|attention|cudnn.*(fprop|bprop|sdp)|_efficient_attention"),
    ("optimizer", r"adam|adafactor|sgd|optim|multi_tensor_apply|foreach|lerp"),
    ("loss", r"cross_entropy|nll_loss|log_softmax|logsoftmax"),
    ("softmax", r"softmax"),
    ("norm", r"layer_norm|layernorm|rms_?norm|native_layer_norm|rsqrt"),
    ("embedding", r"embedding|index_select|indexing_backward|index_put"),
    ("gemm", r"gemm|matmul|\bmm\b|aten::mm|aten::bmm|aten::addmm|aten::linear|cutlass|xmma|cublas|nvjet|wgmma|"
             r"scaled_mm|sm\d+_"),
    ("reduction", r"reduce|sum|mean|amax|max_kernel|norm_kernel|triton_red_|triton_per_"),
]


def kernel_class(name):
    n = name.lower()
    for cls, pattern in KERNEL_CLASSES:
        if re.search(pattern, n):
            return cls
    return "elementwise"


def profile_step(step, device):
    """Kernel seconds per class for one step (device time on a GPU, self CPU time on the CPU)."""
    try:
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return None
    acts = [ProfilerActivity.CUDA] if device.type == "cuda" else [ProfilerActivity.CPU]
    with profile(activities=acts) as prof:
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
    per = {}
    if device.type == "cuda":
        cuda_type = getattr(torch.autograd.DeviceType, "CUDA", None)
        for e in prof.events():
            if getattr(e, "device_type", None) != cuda_type:
                continue
            us = e.time_range.elapsed_us()
            per[kernel_class(e.name)] = per.get(kernel_class(e.name), 0.0) + 1e-6 * us
    else:
        for a in prof.key_averages():
            us = getattr(a, "self_cpu_time_total", 0.0)
            if us > 0 and a.key.startswith("aten::"):
                per[kernel_class(a.key)] = per.get(kernel_class(a.key), 0.0) + 1e-6 * us
    return {k: round(v, 9) for k, v in sorted(per.items())}


# --- One training configuration -------------------------------------------------------


def make_optimizer(name, params, device):
    params = [p for p in params if p.requires_grad]
    if name == "adamw_fused":
        try:
            return torch.optim.AdamW(params, lr=1e-4, fused=device.type == "cuda"), "AdamW (fused)"
        except (TypeError, RuntimeError):
            return torch.optim.AdamW(params, lr=1e-4), "AdamW (for-loop: no fused kernel in this PyTorch)"
    if name == "adafactor":
        if not hasattr(torch.optim, "Adafactor"):
            raise Skip("no torch.optim.Adafactor in PyTorch %s (added in 2.5)" % torch.__version__)
        return torch.optim.Adafactor(params, lr=1e-2), "Adafactor (torch.optim)"
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9), "SGD with momentum 0.9"
    raise ValueError(name)


def apply_lora(model, rank):
    try:
        import peft
    except ImportError:
        raise Skip("peft is not installed")
    cfg = peft.LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=["qkv", "proj"], lora_dropout=0.0)
    return peft.get_peft_model(model, cfg)


def run_config(c, device, clock, dry_run, log):
    if c["attn"] != "math" and not has_sdpa() and not dry_run:
        raise Skip("no scaled_dot_product_attention in PyTorch %s" % torch.__version__)
    if c["compile"] and not has_compile():
        raise Skip("no torch.compile in PyTorch %s" % torch.__version__)
    if c["precision"] == "fp8":
        if fp8_dtypes() is None:
            raise Skip("no float8 dtypes or torch._scaled_mm in PyTorch %s" % torch.__version__)
        if device.type == "cuda" and torch.cuda.get_device_capability(device) < (8, 9):
            raise Skip("fp8 GEMMs need compute capability >= 8.9")
    cfg = dict(c, attn_impl="sdpa" if has_sdpa() else "manual")
    if device.type == "cuda":
        sdpa_backend(c["attn"])  # raises Skip when this PyTorch lacks the backend
    Linear.fp8 = c["precision"] == "fp8"
    torch.manual_seed(0)
    model = Decoder(cfg).to(device)
    if c["lora"]:
        model = apply_lora(model, c["lora"])
    opt, opt_text = make_optimizer(c["optimizer"], model.parameters(), device)
    fwd = torch.compile(model) if c["compile"] else model
    b, s = c["micro_batch"], c["seq"]
    tokens = torch.randint(0, c["vocab"], (b, s), device=device)
    targets = torch.randint(0, c["vocab"], (b, s), device=device)
    amp = torch.autocast(device_type=device.type, dtype=torch.bfloat16)

    def step():
        with backend_ctx(), amp:
            loss = fwd(tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def backend_ctx():
        return sdpa_backend(c["attn"]) if device.type == "cuda" and has_sdpa() else contextlib.nullcontext()

    warm = 2 if dry_run else (3 if c["compile"] else 2)
    for _ in range(warm):
        step()
    clock.sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    t0 = time.perf_counter()
    n_min, t_min = (3, 0.0) if dry_run else (5, 1.0)
    while len(times) < n_min or (sum(times) < t_min and len(times) < 50):
        times.append(clock.time(step))
        if time.perf_counter() - t0 > 20.0 and len(times) >= 3:
            break
    peak_alloc = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    peak_res = torch.cuda.max_memory_reserved(device) if device.type == "cuda" else 0
    classes = profile_step(step, device)
    med = quantile(times, 0.5)
    result = dict(step_median_s=med, step_min_s=min(times), step_p90_s=quantile(times, 0.9), steps=len(times),
                  peak_allocated_bytes=peak_alloc, peak_reserved_bytes=peak_res, kernel_time_s=classes,
                  optimizer_text=opt_text, trainable=sum(p.numel() for p in model.parameters() if p.requires_grad),
                  params=sum(p.numel() for p in model.parameters()))
    del model, opt, fwd
    Linear.fp8 = False
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return result


def published_row(c, res, gpu, device_text, date, dry_run):
    llama = c["arch"] == "llama"
    tokens = c["micro_batch"] * c["seq"]
    attention = {"flash": "flash2 (PyTorch SDPA, FlashAttention-2 backend)", "cudnn": "cudnn (PyTorch SDPA)",
                 "math": "naive (PyTorch SDPA math backend: QK^T, softmax, PV)"}[c["attn"]]
    row = {
        "id": ("dryrun_" if dry_run else "torchsteps_") + c["label"],
        "group": "torch_steps",
        "category": "end_to_end_training",
        "confidence": "dry_run_not_a_measurement" if dry_run else "measured_here",
        "source": {
            "citation": ("Ridgeline cuda_validation/torch_steps.py" +
                         (" --dry-run (CPU plumbing test)" if dry_run else "")),
            "location": c["label"],
            "device": device_text,
            "date": date,
            "software": "PyTorch %s, CUDA %s, cuDNN %s, Python %s" % (
                torch.__version__, torch.version.cuda, torch.backends.cudnn.version() if torch.cuda.is_available()
                else None, platform.python_version()),
        },
        "hardware": {"gpu": gpu, "num_gpus": 1},
        "model": {
            "name": "%s-style %d-layer stack" % ("Llama" if llama else "GPT", c["layers"]),
            "architecture": ("llama-style decoder (RMSNorm, SwiGLU, RoPE, GQA)" if llama
                             else "gpt-style decoder (LayerNorm, GeLU MLP, learned positions)"),
            "layers": c["layers"], "hidden": c["hidden"], "heads": c["heads"], "kv_heads": c["kv_heads"],
            "ffn_hidden": c["ffn"], "vocab": c["vocab"], "seq_len": c["seq"],
            "activation": "swiglu" if llama else "gelu", "norm": "rmsnorm" if llama else "layernorm",
            "bias": not llama, "tied_embeddings": False, "dropout": 0.0,
            "params": res["params"],
        },
        "training": {
            "global_batch": c["micro_batch"], "micro_batch": c["micro_batch"], "grad_accum": 1,
            "tp": 1, "pp": 1, "dp": 1, "cp": 1,
            "precision": (("fp8 linear layers (torch._scaled_mm, per-tensor current scaling; E4M3 forward, "
                           "E5M2 gradients), bf16 autocast elsewhere") if c["precision"] == "fp8"
                          else "bf16 autocast (amp_bf16)"),
            "recompute": {"none": "none", "full": "full (every block)",
                          "selective": "selective (attention core)"}[c["recompute"]],
            "attention": attention,
            "causal": c["causal"],
            "framework": "torch-compile" if c["compile"] else "torch-eager",
            "implementation": "torch.compile (Inductor)" if c["compile"] else "eager PyTorch",
            "optimizer": res["optimizer_text"],
            "finetune": "lora (peft, rank %d, qkv and output projections)" % c["lora"] if c["lora"] else "full",
            "trainable_params": res["trainable"],
        },
        "measured": {
            "iteration_time_s": res["step_median_s"],
            "iteration_time_min_s": res["step_min_s"],
            "iteration_time_p90_s": res["step_p90_s"],
            "timed_steps": res["steps"],
            "tokens_per_s_total": tokens / res["step_median_s"],
            "peak_allocated_gib": res["peak_allocated_bytes"] / 2 ** 30,
            "peak_reserved_gib": res["peak_reserved_bytes"] / 2 ** 30,
        },
    }
    if c["lora"]:
        row["training"]["lora_rank"] = c["lora"]
    if res["kernel_time_s"] is not None:
        row["measured"]["kernel_time_s"] = res["kernel_time_s"]
    return row


# --- Kernels alone: the measurement file ---------------------------------------------


def gemm_shapes(dry_run):
    if dry_run:
        return [(128, 192, 64), (256, 128, 128), (64, 256, 192)]
    # The Llama configuration's linear layers over 8192 tokens (QKV with GQA,
    # output, gate+up, down, LM head) and two squares.
    return [(8192, 6144, 4096), (8192, 4096, 4096), (8192, 28672, 4096), (8192, 4096, 14336),
            (8192, 32000, 4096), (4096, 4096, 4096), (2048, 2048, 2048)]


def attention_shapes(dry_run):
    # (seq, head_dim, batch x heads, causal)
    if dry_run:
        return [(64, 16, 4, True), (128, 16, 4, True), (128, 32, 2, False)]
    return [(1024, 128, 64, True), (2048, 128, 64, True), (4096, 128, 32, True), (8192, 128, 16, True),
            (16384, 128, 8, True), (4096, 128, 32, False), (4096, 64, 64, True)]


def kernel_records(device, clock, dry_run, log, nvml, kern_path, header):
    recs = []
    flusher = Flusher(device)

    def add(fields, fn):
        try:
            tmin, tmed, tp90, n, reps = time_kernel(fn, clock, flusher, dry_run)
        except Exception as e:  # one kernel that fails does not stop the others
            log("  FAILED %s: %s: %s" % (fields["name"], type(e).__name__, (str(e).splitlines() or [""])[0]))
            release(device)
            return
        order = ["name", "class", "dtype", "m", "n", "k", "batch", "elements", "flops", "bytes", "launches"]
        rec = {key: fields[key] for key in order}
        rec.update(median_s=tmed, min_s=tmin, p90_s=max(tp90, tmed), samples=n, algorithm=fields["algorithm"],
                   check="none")
        if fields.get("causal"):
            rec["causal"] = True
        if reps != 1:
            rec["repetitions"] = reps
        rec.update(nvml.read())
        recs.append(rec)
        write_json(kern_path, {"schema": SCHEMA, "header": header, "records": recs})  # a cut-short run keeps it
        log("  %s: median %.4g s (%d samples%s)" % (rec["name"], tmed, n, " of %d runs" % reps if reps > 1 else ""))

    base = dict(batch=1, elements=0, launches=1, algorithm="")
    for (m, n, k) in gemm_shapes(dry_run):
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=device, dtype=torch.bfloat16)
        rec = dict(base, name="gemm_bf16_%dx%dx%d_torch" % (m, n, k), **{"class": "gemm"}, dtype="bf16", m=m, n=n, k=k,
                   flops=2.0 * m * n * k, bytes=2.0 * (m * k + k * n + m * n),
                   algorithm="torch.matmul(A, W^T) (%s through PyTorch %s)" % (
                       "cuBLAS" if device.type == "cuda" else "CPU dry run", torch.__version__))
        add(rec, lambda: torch.matmul(a, w.t()))
        if fp8_dtypes() is not None and (device.type != "cuda" or torch.cuda.get_device_capability(device) >= (8, 9)):
            e4m3, _ = fp8_dtypes()
            a8, w8 = a.to(e4m3), w.to(e4m3)
            one = torch.ones((), device=device, dtype=torch.float32)
            rec = dict(base, name="gemm_fp8_e4m3_%dx%dx%d_torch" % (m, n, k), **{"class": "gemm"},
                       dtype="fp8_e4m3", m=m, n=n, k=k, flops=2.0 * m * n * k,
                       bytes=1.0 * (m * k + k * n) + 2.0 * m * n,
                       algorithm="torch._scaled_mm tensorwise, bf16 out, use_fast_accum=False")
            try:
                Fp8Linear._mm(a8, one, w8.t(), one)
                add(rec, lambda: Fp8Linear._mm(a8, one, w8.t(), one))
            except Exception as e:  # CPU builds of PyTorch have no _scaled_mm kernel
                log("  skip %s: %s" % (rec["name"], str(e).splitlines()[0]))
        del a, w
    for (s, d, bh, causal) in attention_shapes(dry_run):
        q, k, v = (torch.randn(1, bh, s, d, device=device, dtype=torch.bfloat16) for _ in range(3))
        flops = 4.0 * s * s * d * bh / (2 if causal else 1)  # FlashAttention's convention: halved when causal
        suffix = "_causal" if causal else ""
        for backend in ("flash", "cudnn", "math"):
            name = "attention_%s_%s_bf16_s%d_d%d_bh%d%s" % ("naive" if backend == "math" else "sdpa", backend, s, d,
                                                              bh, suffix)
            if backend == "math":
                # QK^T and PV GEMMs, softmax: S written and read, P written and read (bf16).
                rec = dict(base, name=name, **{"class": "attention_naive"}, dtype="bf16", m=s, n=d, k=s, batch=bh,
                           flops=flops, bytes=bh * (8.0 * s * d + 8.0 * s * s), launches=3)
                if causal:
                    continue  # the naive record's prediction is non-causal (docs/measurements.md)
            else:
                rec = dict(base, name=name, **{"class": "attention_sdpa"}, dtype="bf16", m=s, n=d, k=s, batch=bh,
                           flops=flops, bytes=8.0 * s * d * bh)
                if causal:
                    rec["causal"] = True
            if device.type == "cuda":
                try:
                    ctx = sdpa_backend(backend)
                    with ctx:
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                except (Skip, RuntimeError) as e:
                    log("  skip %s: %s" % (name, str(e).splitlines()[0]))
                    continue
                rec["algorithm"] = "torch scaled_dot_product_attention, %s backend, forward" % backend
                add(rec, lambda: _sdpa(q, k, v, causal, backend))
            else:
                impl = "sdpa" if has_sdpa() else "manual"
                rec["algorithm"] = ("dry run on the CPU: %s, not the %s backend" %
                                    ("PyTorch's CPU SDPA" if impl == "sdpa" else
                                     "softmax(QK^T)V by hand (no SDPA in this PyTorch)", backend))
                add(rec, lambda: attention_core(q, k, v, causal, impl))
        del q, k, v
    return recs


def release(device):
    """Returns what a failed configuration left allocated."""
    import gc

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _sdpa(q, k, v, causal, backend):
    with sdpa_backend(backend):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def measurement_header(device, device_text, date, dry_run):
    h = {"backend": "cuda" if device.type == "cuda" else "host", "device": device_text, "sm_count": 0,
         "clock_hz": 0, "memory_clock_hz": 0, "memory_bytes": 0, "driver_version": "",
         "runtime_version": str(torch.version.cuda or ""), "date": date, "tool_version": "%s (PyTorch %s)" % (
             TOOL, torch.__version__), "quick": True}
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        h["sm_count"] = p.multi_processor_count
        h["memory_bytes"] = p.total_memory
    else:
        h["sm_count"] = os.cpu_count() or 1
    return h


# --- Output ----------------------------------------------------------------------------


def write_json(path, doc):
    """Writes `path` whole or not at all (a time limit's SIGTERM may come at any moment)."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def on_sigterm(signum, frame):
    """A time limit: stop now; the files already hold every finished configuration."""
    raise SystemExit(124)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output directory (created)")
    ap.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU: tests the plumbing")
    ap.add_argument("--budget-s", type=float, default=270.0, help="stop starting configurations after this (s)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device ordinal")
    ap.add_argument("--label-gpu", default="",
                    help="hardware.gpu of the rows (default: the device's name); a dry run needs one a profile "
                         "knows, e.g. H200, for validate-published to predict its rows")
    ap.add_argument("--only", default="", help="comma-separated configuration labels (default: all)")
    ap.add_argument("--no-kernels", action="store_true", help="skip the kernels-alone measurement file")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    if a.list:
        for c in configs(False):
            print(c["label"])
        return 0
    if not a.out:
        print("torch_steps.py: --out DIR is required", file=sys.stderr)
        return 2
    if not (a.budget_s > 0):
        print("torch_steps.py: --budget-s: expected seconds greater than zero, got %s" % a.budget_s, file=sys.stderr)
        return 2
    if a.dry_run:
        device = torch.device("cpu")
        device_text = "cpu (torch_steps.py --dry-run: not a measurement)"
    else:
        if not torch.cuda.is_available():
            print("torch_steps.py: no CUDA device (use --dry-run to test the plumbing on a CPU)", file=sys.stderr)
            return 2
        if a.device >= torch.cuda.device_count():
            print("torch_steps.py: --device %d: this machine has %d CUDA devices" % (
                a.device, torch.cuda.device_count()), file=sys.stderr)
            return 2
        device = torch.device("cuda", a.device)
        torch.cuda.set_device(device)
        device_text = torch.cuda.get_device_name(device)
        torch.backends.cuda.matmul.allow_tf32 = True
    all_configs = configs(a.dry_run)
    if a.only:
        wanted = a.only.split(",")
        unknown = [w for w in wanted if w not in [c["label"] for c in all_configs]]
        if unknown:
            print("torch_steps.py: --only: unknown configuration '%s' (see --list)" % unknown[0], file=sys.stderr)
            return 2
        all_configs = [c for c in all_configs if c["label"] in wanted]
    gpu = a.label_gpu or device_text
    os.makedirs(a.out, exist_ok=True)
    rows_path = os.path.join(a.out, "torch_steps.published.json")
    kern_path = os.path.join(a.out, "torch_kernels.json")
    log_path = os.path.join(a.out, "torch_steps.log.txt")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    start = time.perf_counter()
    logf = open(log_path, "a")

    def log(msg):
        line = "[%7.1f s] %s" % (time.perf_counter() - start, msg)
        print(line, file=sys.stderr, flush=True)
        logf.write(line + "\n")
        logf.flush()

    log("torch_steps.py: PyTorch %s on %s%s; budget %.0f s" % (torch.__version__, device_text,
                                                             " [dry run]" if a.dry_run else "", a.budget_s))
    clock = Clock(device)
    nvml = Nvml(device)
    if device.type == "cuda" and nvml.h is None:
        log("pynvml not available: kernel records go without clocks, power and throttle reasons")
    rows, failed = [], []
    doc = {"schema_version": 1,
           "description": ("Training steps measured by cuda_validation/torch_steps.py" +
                           (" in a dry run on the CPU: plumbing only, not measurements" if a.dry_run else "")),
           "row_count": 0, "rows": rows}
    try:
        if not a.no_kernels:
            log("== kernels alone (GEMM, SDPA attention)")
            header = measurement_header(device, device_text, date, a.dry_run)
            recs = kernel_records(device, clock, a.dry_run, log, nvml, kern_path, header)
            log("wrote %d records to %s" % (len(recs), kern_path))
        for c in all_configs:
            elapsed = time.perf_counter() - start
            if elapsed > a.budget_s:
                log("budget spent (%.0f of %.0f s): %s and later configurations not run" % (elapsed, a.budget_s,
                                                                                          c["label"]))
                break
            log("== %s" % c["label"])
            try:
                res = run_config(c, device, clock, a.dry_run, log)
            except Skip as e:
                log("skip %s: %s" % (c["label"], e))
                continue
            except Exception as e:  # out of memory, a backend that refuses the shape, a compile error: the next one
                log("FAILED %s: %s: %s" % (c["label"], type(e).__name__, (str(e).splitlines() or [""])[0]))
                failed.append(c["label"])
                Linear.fp8 = False
                release(device)
                continue
            rows.append(published_row(c, res, gpu, device_text, date, a.dry_run))
            doc["row_count"] = len(rows)
            write_json(rows_path, doc)
            log("%s: step median %.4g s, %.0f tokens/s, peak allocated %.2f GiB" % (
                c["label"], res["step_median_s"], c["micro_batch"] * c["seq"] / res["step_median_s"],
                res["peak_allocated_bytes"] / 2 ** 30))
    except OSError as e:
        log("cannot write under %s: %s" % (a.out, e))
        return 3
    log("done: %d configurations measured, rows in %s%s" % (
        len(rows), rows_path, "; failed: " + ", ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
